// Package mcptest is a Model Context Protocol server for tests, written with
// the official Go SDK: the tools an MCP client has to survive (echo, fail,
// stall, a 5 MB answer, an elicitation, a crash) and the build of its
// program (mcptestserver), which serves it over stdio or streamable HTTP.
//
// Only tests import it.
package mcptest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BigSize is the size of the big tool's answer.
const BigSize = 5 << 20

// Tool names.
const (
	ToolEcho  = "echo"  // read-only: {"text"} back as text and structuredContent
	ToolWrite = "write" // destructive: writes {"text"} to $MCPTEST_WRITE_FILE
	ToolFail  = "fail"  // a tool error (isError)
	ToolStall = "stall" // a progress notification, then waits until cancelled
	ToolBig   = "big"   // BigSize bytes of text
	ToolAsk   = "ask"   // asks the client (elicitation/create) for a name
	ToolCrash = "crash" // the process exits with status 3
	ToolPlain = "plain" // no annotations at all
)

// Env names read by the server.
const (
	EnvWriteFile = "MCPTEST_WRITE_FILE" // where write writes
	EnvPIDFile   = "MCPTEST_PID_FILE"   // where the process writes its pid at start
)

type askArgs struct {
	WaitFile string `json:"waitFile,omitempty" jsonschema:"ask only once this file exists"`
}

type textArgs struct {
	Text string `json:"text" jsonschema:"the text"`
}

func ptr[T any](v T) *T { return &v }

// NewServer returns the test server.
func NewServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: ToolEcho, Description: "Echo the text back.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, map[string]string, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echo: " + in.Text}}}, map[string]string{"echo": in.Text}, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolWrite, Description: "Write the text to the server's file.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(false)}},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			p := os.Getenv(EnvWriteFile)
			if p == "" {
				return nil, nil, fmt.Errorf("%s is not set", EnvWriteFile)
			}
			if err := os.WriteFile(p, []byte(in.Text), 0o644); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "wrote " + fmt.Sprint(len(in.Text)) + " bytes"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolPlain, Description: "Echo without annotations."},
		func(ctx context.Context, req *mcp.CallToolRequest, in textArgs) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "plain: " + in.Text}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolFail, Description: "Always fails.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolStall, Description: "Never answers.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1, Message: "stalling"})
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolBig, Description: "Returns 5 MB of text.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", BigSize)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolAsk, Description: "Asks the user for a name.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in askArgs) (*mcp.CallToolResult, any, error) {
			for in.WaitFile != "" && len(req.Params.InputResponses) == 0 {
				if _, err := os.Stat(in.WaitFile); err == nil {
					break
				}
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(10 * time.Millisecond):
				}
			}
			ask := &mcp.ElicitParams{Mode: "form", Message: "What is your name?",
				RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}
			var res *mcp.ElicitResult
			if r, ok := req.Params.InputResponses["name"]; ok {
				// The client's answer on the retry (multi round-trip requests).
				res, _ = r.(*mcp.ElicitResult)
				if res == nil {
					return nil, nil, fmt.Errorf("input response %T is not an elicitation result", r)
				}
			} else {
				var err error
				res, err = req.Session.Elicit(ctx, ask)
				if err != nil && strings.Contains(err.Error(), "InputRequests") {
					// Newer protocol versions ask through the result.
					return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": ask}, RequestState: "ask"}, nil, nil
				}
				if err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("action=%s name=%v", res.Action, res.Content["name"])}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: ToolCrash, Description: "Exits the server process.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			os.Exit(3)
			return nil, nil, nil
		})
	s.AddResource(&mcp.Resource{Name: "readme", URI: "mcptest://readme", MIMEType: "text/plain"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: "mcptest readme"}}}, nil
		})
	return s
}
