package scripted_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/apserver/apserver/model/scripted"
)

// These tests prove that go-openai, the client the model package uses,
// parses what the scripted server sends on both wires.

func client(t *testing.T, sc scripted.Script) (*openai.Client, *scripted.Server) {
	t.Helper()
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = srv.URL()
	return openai.NewClientWithConfig(cfg), srv
}

var toolStep = scripted.Step{
	Text:      "Let me check.",
	Reasoning: []string{"Look at the files.", "Then report."},
	ToolCalls: []scripted.ToolCall{{Command: "ls -la"}, {Name: "read_file", Arguments: `{"path":"go.mod"}`}},
}

func TestGoOpenAIChatStream(t *testing.T) {
	c, srv := client(t, scripted.Script{Default: []scripted.Step{toolStep, {Text: "All good."}}})
	ctx := context.Background()
	tools := []openai.Tool{
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "read_file", Parameters: map[string]any{"type": "object"}}},
		{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{Name: "shell", Parameters: map[string]any{"type": "object"}}},
	}
	msgs := []openai.ChatCompletionMessage{{Role: openai.ChatMessageRoleUser, Content: "check the repo"}}
	stream, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{
		Model: "gpt-test", Messages: msgs, Tools: tools,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	var text, reasoning strings.Builder
	var calls []openai.ToolCall
	var finish openai.FinishReason
	var usage *openai.Usage
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if chunk.Usage != nil {
			usage = chunk.Usage
		}
		for _, ch := range chunk.Choices {
			text.WriteString(ch.Delta.Content)
			reasoning.WriteString(ch.Delta.ReasoningContent)
			if ch.FinishReason != "" {
				finish = ch.FinishReason
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := *tc.Index
				if i == len(calls) {
					calls = append(calls, openai.ToolCall{ID: tc.ID, Type: tc.Type, Function: openai.FunctionCall{Name: tc.Function.Name}})
				}
				calls[i].Function.Arguments += tc.Function.Arguments
			}
		}
	}
	stream.Close()
	if text.String() != "Let me check." || reasoning.String() != "Look at the files.\n\nThen report." {
		t.Errorf("text %q reasoning %q", text.String(), reasoning.String())
	}
	if finish != openai.FinishReasonToolCalls || len(calls) != 2 ||
		calls[0].Function.Name != "shell" || calls[0].Function.Arguments != `{"command":"ls -la"}` ||
		calls[1].Function.Name != "read_file" || calls[1].Function.Arguments != `{"path":"go.mod"}` {
		t.Fatalf("finish %q calls %+v", finish, calls)
	}
	if usage == nil || usage.CompletionTokens == 0 || usage.PromptTokens < 100 {
		t.Errorf("usage %+v", usage)
	}

	// Send the tool results back: the next step answers.
	msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleAssistant, ToolCalls: calls})
	for _, tc := range calls {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: openai.ChatMessageRoleTool, ToolCallID: tc.ID, Content: "ok"})
	}
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-test", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "All good." || resp.Choices[0].FinishReason != openai.FinishReasonStop {
		t.Errorf("second request: %+v", resp.Choices[0])
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[1].Step != 1 || reqs[1].ToolOutputs != 2 {
		t.Errorf("requests: %+v", reqs)
	}
}

func TestGoOpenAIResponseStream(t *testing.T) {
	c, srv := client(t, scripted.Script{Default: []scripted.Step{toolStep, {Text: "All good."}}})
	ctx := context.Background()
	tools := []openai.ResponseTool{
		openai.NewResponseFunctionTool(openai.FunctionDefinition{Name: "exec_command", Parameters: map[string]any{"type": "object"}}),
		openai.NewResponseFunctionTool(openai.FunctionDefinition{Name: "read_file", Parameters: map[string]any{"type": "object"}}),
	}
	input := []any{openai.ResponseInputMessage{Type: "message", Role: "user", Content: "check the repo"}}
	stream, err := c.CreateResponseStream(ctx, openai.CreateResponseRequest{Model: "gpt-test", Input: input, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	var text, reasoning strings.Builder
	var calls []*openai.ResponseOutputItem
	var completed *openai.CreateResponseResponse
	lastSeq := -1
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if ev.SequenceNumber != lastSeq+1 {
			t.Fatalf("%s: sequence %d after %d", ev.Type, ev.SequenceNumber, lastSeq)
		}
		lastSeq = ev.SequenceNumber
		switch ev.Type {
		case openai.ResponseStreamEventOutputTextDelta:
			text.WriteString(ev.Delta)
		case openai.ResponseStreamEventReasoningSummaryTextDelta:
			reasoning.WriteString(ev.Delta)
		case openai.ResponseStreamEventOutputItemDone:
			if ev.Item.Type == "function_call" {
				calls = append(calls, ev.Item)
			}
		case openai.ResponseStreamEventCompleted:
			completed = ev.Response
		}
	}
	stream.Close()
	if text.String() != "Let me check." || reasoning.String() != "Look at the files.Then report." {
		t.Errorf("text %q reasoning %q", text.String(), reasoning.String())
	}
	if len(calls) != 2 || calls[0].Name != "exec_command" || calls[0].Arguments != `{"cmd":"ls -la"}` ||
		calls[1].Name != "read_file" || calls[1].CallID == "" {
		t.Fatalf("calls %+v", calls)
	}
	if completed == nil || completed.Status != openai.ResponseStatusCompleted || completed.Usage == nil ||
		completed.Usage.OutputTokens == 0 || completed.Usage.OutputTokensDetails.ReasoningTokens != 6 ||
		completed.GetOutputText() != "Let me check." {
		t.Fatalf("completed %+v", completed)
	}

	// Send the calls and their results back (all calls, then all outputs,
	// as one round): the next step answers.
	for _, fc := range calls {
		input = append(input, map[string]any{"type": "function_call", "call_id": fc.CallID, "name": fc.Name, "arguments": fc.Arguments})
	}
	for _, fc := range calls {
		input = append(input, openai.ResponseFunctionCallOutput{Type: "function_call_output", CallID: fc.CallID, Output: "ok"})
	}
	stream, err = c.CreateResponseStream(ctx, openai.CreateResponseRequest{Model: "gpt-test", Input: input, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	text.Reset()
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(ev.Delta)
	}
	stream.Close()
	if text.String() != "All good." {
		t.Errorf("second response %q", text.String())
	}
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[1].Step != 1 || reqs[1].ToolOutputs != 2 || reqs[1].Tools[0] != "exec_command" {
		t.Errorf("requests: %+v", reqs)
	}
}

func TestGoOpenAIErrors(t *testing.T) {
	c, _ := client(t, scripted.Script{Default: []scripted.Step{{HTTPError: 429, ErrorMessage: "slow down"}}})
	_, err := c.CreateResponseStream(context.Background(), openai.CreateResponseRequest{Model: "m", Input: "hi"})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusTooManyRequests ||
		apiErr.Message != "slow down" || apiErr.Code != "rate_limit_exceeded" {
		t.Fatalf("err %v", err)
	}
	models, err := c.ListModels(context.Background())
	if err != nil || len(models.Models) != 1 || models.Models[0].ID != scripted.ModelID {
		t.Fatalf("models %+v %v", models, err)
	}
}
