package mcpservers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/model"
)

// Tool is one MCP tool under the name the model knows it by.
type Tool struct {
	Name   string // mcp__server__tool, or shortened with a hash
	Server string
	Tool   mcp.Tool
	Config config.MCPServer // its server's
}

// Tools lists the MCP tools of the servers that are connected now (or
// were, and stopped), under their model names (Named), sorted by server
// and tool.
func (s *Servers) Tools() []Tool {
	cfg := s.Config()
	var refs []Tool
	for _, name := range s.Pool.Names() {
		// A server that stopped keeps offering the tools it had: calling
		// one starts it again (mcp.Pool, after its backoff).
		st, ok := s.Pool.Status(name)
		if !ok || (st.State != mcp.Connected && st.State != mcp.Failed) {
			continue
		}
		c := cfg[name]
		for _, tl := range st.Tools {
			if !c.ToolEnabled(tl.Name) {
				continue
			}
			refs = append(refs, Tool{Server: name, Tool: tl, Config: c})
		}
	}
	return Named(refs)
}

// Lookup finds the MCP tool a model's call names.
func (s *Servers) Lookup(name string) (Tool, bool) {
	if !strings.HasPrefix(name, "mcp__") {
		return Tool{}, false
	}
	for _, r := range s.Tools() {
		if r.Name == name {
			return r, true
		}
	}
	return Tool{}, false
}

// Named gives each tool its model name (mcptool.Names): Codex's
// mcp__SERVER__TOOL, characters outside [A-Za-z0-9_-] as "_"; a name
// longer than 64 bytes, or one that two tools would share, is cut and
// given a hash of the server and tool.
func Named(refs []Tool) []Tool {
	ids := make([]mcptool.ID, len(refs))
	for i, r := range refs {
		ids[i] = mcptool.ID{Server: r.Server, Tool: r.Tool.Name}
	}
	for i, n := range mcptool.Names(ids) {
		refs[i].Name = n
	}
	return refs
}

// ModelTool is the function tool the model is offered for t.
func (t Tool) ModelTool() model.Tool {
	desc := t.Tool.Description
	if desc == "" {
		desc = t.Tool.Title
	}
	return model.Tool{Name: t.Name, Description: desc, Parameters: mcptool.SanitizeSchema(t.Tool.InputSchema)}
}

// Unstarted are the enabled servers no one has started yet (or that are
// starting).
func (s *Servers) Unstarted() []string {
	var pending []string
	for _, name := range s.Pool.Names() {
		if st, ok := s.Pool.Status(name); ok && (st.State == mcp.NotStarted || st.State == mcp.Starting) {
			pending = append(pending, name)
		}
	}
	return pending
}

// StartAll starts the named servers at once and returns when every start
// ended; a server marked required that failed is the error (cfg is the
// configuration the names were taken from).
func (s *Servers) StartAll(ctx context.Context, names []string, cfg map[string]config.MCPServer) error {
	var wg sync.WaitGroup
	for _, name := range names {
		wg.Go(func() { _ = s.Pool.Start(ctx, name, false) })
	}
	wg.Wait()
	for _, name := range names {
		if st, _ := s.Pool.Status(name); cfg[name].Required && st.State == mcp.Failed {
			return fmt.Errorf("the required MCP server %s failed to start: %s", name, st.Err)
		}
	}
	return nil
}

func approvalKey(threadID string, t Tool) string {
	return threadID + "\x00" + t.Server + "\x00" + t.Tool.Name
}

// Approve records that the thread's user allowed t for the session.
func (s *Servers) Approve(threadID string, t Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.approved == nil {
		s.approved = map[string]bool{}
	}
	s.approved[approvalKey(threadID, t)] = true
}

// Approved: the thread's user allowed t for the session.
func (s *Servers) Approved(threadID string, t Tool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approved[approvalKey(threadID, t)]
}

// An Asker forwards a server's elicitation to the client on behalf of a
// call in flight and returns the client's raw answer. It returns ctx.Err()
// when ctx ends first.
type Asker func(ctx context.Context, server string, req mcp.ElicitRequest) (json.RawMessage, error)

// caller is a call in flight, for its server's elicitations.
type caller struct{ ask Asker }

// callerKey is the context key of the *caller a pool call is for.
type callerKey struct{}

// Call calls t with args within timeout (a timeout is the error, naming
// tool_timeout_sec). While it is in flight, the server's elicitations go
// to ask: those that come with the call (the newer MCP protocol), and
// those an older server asks on its own, which go to the latest call to
// it. progress gets the server's progress messages.
func (s *Servers) Call(ctx context.Context, t Tool, args json.RawMessage, timeout time.Duration, ask Asker, progress func(string)) (mcp.Result, error) {
	c := &caller{ask: ask}
	s.mu.Lock()
	if s.active == nil {
		s.active = map[string][]*caller{}
	}
	s.active[t.Server] = append(s.active[t.Server], c)
	s.mu.Unlock()
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callerKey{}, c), timeout)
	res, err := s.Pool.Call(cctx, t.Server, t.Tool.Name, args, progress)
	if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("the MCP tool call timed out after %s (tool_timeout_sec)", timeout)
	}
	cancel()
	s.mu.Lock()
	s.active[t.Server] = slices.DeleteFunc(s.active[t.Server], func(x *caller) bool { return x == c })
	s.mu.Unlock()
	return res, err
}

// elicit routes a server's elicitation to the call it is for (Call);
// with none in flight, it is declined. A failed ask or an unusable answer
// cancels it.
func (s *Servers) elicit(ctx context.Context, server string, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
	// Under the newer MCP protocol the question comes with the call's
	// answer, and ctx is the call's; an older server asks on its own, and
	// the call in flight to it is the one asking.
	c, _ := ctx.Value(callerKey{}).(*caller)
	s.mu.Lock()
	if calls := s.active[server]; c == nil && len(calls) > 0 {
		c = calls[len(calls)-1]
	}
	s.mu.Unlock()
	if c == nil {
		return mcp.ElicitResult{Action: "decline"}, nil
	}
	raw, err := c.ask(ctx, server, req)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return mcp.ElicitResult{}, err
		}
		return mcp.ElicitResult{Action: "cancel"}, nil
	}
	res, err := mcptool.ElicitAnswer(raw)
	if err != nil {
		s.log.Warn("unusable answer to an MCP elicitation; cancelled", "server", server, "answer", string(raw))
		return mcp.ElicitResult{Action: "cancel"}, nil
	}
	return res, nil
}
