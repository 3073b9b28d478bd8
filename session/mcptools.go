package session

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
	"github.com/apserver/apserver/mcpservers"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// MCP servers as tools (docs/mcp.md). The mcp package connects and calls;
// this file decides what the model sees (Codex's mcp__SERVER__TOOL names),
// when a call needs approval (Codex's rules over the approval mode and the
// tool's annotations, then full auto's ladder), and what the client is told
// (mcpToolCall items, progress, elicitations, the mcpServer methods).

// mcpState is what the threads keep of the Manager's MCP servers (the
// servers and their one pool are package mcpservers'): the approvals and
// the calls in flight. Its fields are small leaf state behind mu.
type mcpState struct {
	m   *Manager
	srv *mcpservers.Servers

	mu       sync.Mutex
	approved map[string]bool       // thread, server, tool approved for the session
	active   map[string][]*mcpCall // server → calls in flight, for its elicitations
}

// mcpToolRef is one MCP tool under the name the model knows it by.
type mcpToolRef struct {
	name   string // mcp__server__tool, or shortened with a hash
	server string
	tool   mcp.Tool
	cfg    config.MCPServer
}

// mcpCall is one MCP tool call of a turn; owned by the thread goroutine
// (active lists it for the pool's elicitation callback, which reads only
// t and tr).
type mcpCall struct {
	t       *thread
	tr      *turn
	call    model.ToolCall
	ref     mcpToolRef
	item    protocol.McpToolCallItem
	started time.Time
}

// mcpCallKey is the context key of the *mcpCall a pool call is for.
type mcpCallKey struct{}

func newMCPState(m *Manager) *mcpState {
	s := &mcpState{m: m, approved: map[string]bool{}, active: map[string][]*mcpCall{}}
	s.srv = mcpservers.New(mcpservers.Options{Config: m.opts.Config.MCPServers, Cwd: m.opts.Cwd, Sources: m.opts.ConfigSources,
		Log: m.log, Notify: m.notify, Elicit: s.elicit})
	return s
}

func (s *mcpState) close() { s.srv.Close() }

func (s *mcpState) config() map[string]config.MCPServer { return s.srv.Config() }

// tools lists the MCP tools of the servers that are connected now (or
// were, and stopped), under
// their model names, sorted by server and tool. Names follow Codex:
// mcp__SERVER__TOOL with characters outside [A-Za-z0-9_-] as "_"; a name
// longer than 64 bytes, or one that two tools would share, is cut and
// given a hash of the server and tool.
func (s *mcpState) tools() []mcpToolRef {
	cfg := s.config()
	var refs []mcpToolRef
	for _, name := range s.srv.Pool.Names() {
		// A server that stopped keeps offering the tools it had: calling
		// one starts it again (mcp.Pool, after its backoff).
		st, ok := s.srv.Pool.Status(name)
		if !ok || (st.State != mcp.Connected && st.State != mcp.Failed) {
			continue
		}
		c := cfg[name]
		for _, tl := range st.Tools {
			if !c.ToolEnabled(tl.Name) {
				continue
			}
			refs = append(refs, mcpToolRef{server: name, tool: tl, cfg: c})
		}
	}
	return mcpNames(refs)
}

// mcpNames gives each tool its model name (mcptool.Names).
func mcpNames(refs []mcpToolRef) []mcpToolRef {
	ids := make([]mcptool.ID, len(refs))
	for i, r := range refs {
		ids[i] = mcptool.ID{Server: r.server, Tool: r.tool.Name}
	}
	for i, n := range mcptool.Names(ids) {
		refs[i].name = n
	}
	return refs
}

// modelTool is the function tool the model is offered for ref.
func (ref mcpToolRef) modelTool() model.Tool {
	desc := ref.tool.Description
	if desc == "" {
		desc = ref.tool.Title
	}
	return model.Tool{Name: ref.name, Description: desc, Parameters: mcptool.SanitizeSchema(ref.tool.InputSchema)}
}

// mcpModelTools are the MCP tools the thread's model is offered.
func (t *thread) mcpModelTools() []model.Tool {
	refs := t.m.mcp.tools()
	out := make([]model.Tool, len(refs))
	for i, r := range refs {
		out[i] = r.modelTool()
	}
	return out
}

// mcpTool finds the MCP tool a call names.
func (t *thread) mcpTool(name string) (mcpToolRef, bool) {
	if !strings.HasPrefix(name, "mcp__") {
		return mcpToolRef{}, false
	}
	for _, r := range t.m.mcp.tools() {
		if r.name == name {
			return r, true
		}
	}
	return mcpToolRef{}, false
}

// mcpStartup starts the enabled servers no one has started yet before the
// turn's model request (so that their tools are offered), and calls then
// on the thread goroutine; it reports whether it took over. A server marked
// required that fails to start fails the turn.
func (t *thread) mcpStartup(tr *turn, then func()) bool {
	s := t.m.mcp
	cfg := s.config()
	var pending []string
	for _, name := range s.srv.Pool.Names() {
		if st, ok := s.srv.Pool.Status(name); ok && (st.State == mcp.NotStarted || st.State == mcp.Starting) {
			pending = append(pending, name)
		}
	}
	if len(pending) == 0 {
		return false
	}
	ctx := tr.ctx
	go func() {
		var wg sync.WaitGroup
		for _, name := range pending {
			wg.Go(func() { _ = s.srv.Pool.Start(ctx, name, false) })
		}
		wg.Wait()
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			for _, name := range pending {
				if st, _ := s.srv.Pool.Status(name); cfg[name].Required && st.State == mcp.Failed {
					t.failTurn(tr, fmt.Errorf("the required MCP server %s failed to start: %s", name, st.Err))
					return
				}
			}
			then()
		})
	}()
	return true
}

// runMCPCall handles a call of an MCP tool: item/started, approval when
// needed, then the call in a child goroutine.
func (t *thread) runMCPCall(tr *turn, call model.ToolCall, ref mcpToolRef) {
	args := json.RawMessage(strings.TrimSpace(call.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		t.toolError(tr, call, fmt.Sprintf("invalid arguments for %s: the arguments must be a JSON object: %v", call.Name, err))
		return
	}
	if t.readOnlyTurn() && (ref.tool.Annotations == nil || !ref.tool.Annotations.ReadOnly) {
		// Plan mode and reviews change nothing: only tools the server says
		// are read-only run.
		t.toolError(tr, call, fmt.Sprintf("%s is not available in a read-only turn (plan mode or review): the server does not say it only reads", call.Name))
		return
	}
	c := &mcpCall{t: t, tr: tr, call: call, ref: ref}
	c.item = protocol.McpToolCallItem{ID: t.uniqueItemID(call.CallID), Server: ref.server, Tool: ref.tool.Name, Status: protocol.ItemInProgress, Arguments: args}
	t.notifyItemStarted(tr, c.item)
	mode := ref.cfg.ApprovalMode(ref.tool.Name)
	if !mcptool.NeedsApproval(mode, ref.tool.Annotations, t.fullAccess()) || t.m.mcp.isApproved(t.id, ref) {
		t.startMCPCall(tr, c)
		return
	}
	t.askMCPApproval(tr, c, mode)
}

// fullAccess: the thread never asks and runs unconfined; Codex then asks
// for no MCP tool either.
func (t *thread) fullAccess() bool {
	return t.settings.ApprovalPolicy == protocol.ApprovalNever && t.settings.Sandbox == protocol.SandboxDangerFullAccess
}

func mcpApprovalKey(threadID string, ref mcpToolRef) string {
	return threadID + "\x00" + ref.server + "\x00" + ref.tool.Name
}

func (s *mcpState) isApproved(threadID string, ref mcpToolRef) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approved[mcpApprovalKey(threadID, ref)]
}

// askMCPApproval asks as Codex does: mcpServer/elicitation/request, a form
// with no fields whose _meta says it is an MCP tool approval. Full auto's
// ladder sees it first.
func (t *thread) askMCPApproval(tr *turn, c *mcpCall, mode string) {
	meta := map[string]any{"codex_approval_kind": "mcp_tool_call", "tool_params": c.item.Arguments}
	if mode == config.MCPApprovalAuto {
		meta["persist"] = "session" // "Allow for this session" is offered
	}
	if c.ref.tool.Title != "" {
		meta["tool_title"] = c.ref.tool.Title
	}
	if c.ref.tool.Description != "" {
		meta["tool_description"] = c.ref.tool.Description
	}
	rawMeta, _ := json.Marshal(meta)
	params := protocol.McpServerElicitationParams{
		ThreadID: t.id, TurnID: ptr(tr.id), ServerName: c.ref.server, Mode: "form",
		Message:         fmt.Sprintf("Allow the %s MCP server to run tool %q?", c.ref.server, c.ref.tool.Name),
		RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
		Meta:            rawMeta, ItemID: c.item.ID,
	}
	req := serverRequest{Method: protocol.RequestMcpServerElicitation, Params: params, Kind: "mcpToolCall", Command: c.ref.name}
	onAnswer := func(id int64, raw json.RawMessage, err error) { t.onMCPApproval(tr, c, mode, id, raw, err) }
	if raw, ok := t.autoAnswer(tr, req); ok { // full auto's rules (fullauto_approve.go)
		onAnswer(-1, raw, nil)
		return
	}
	t.setStatus(protocol.ThreadStatus{Type: protocol.StatusActive, ActiveFlags: []string{protocol.FlagWaitingOnApproval}})
	t.sendRequest(tr, req, onAnswer)
}

func (t *thread) onMCPApproval(tr *turn, c *mcpCall, mode string, reqID int64, raw json.RawMessage, callErr error) {
	t.resolved(reqID)
	if callErr != nil {
		t.finishMCPCall(tr, c, "The approval request failed, so the tool was not called: "+callErr.Error())
		return
	}
	action, forSession, err := mcptool.ApprovalAnswer(raw)
	if err != nil {
		t.m.log.Warn("MCP approval answer unusable; tool not called", "thread", t.id, "item", c.item.ID, "err", err)
		t.finishMCPCall(tr, c, "The approval answer was unusable, so the tool was not called: "+err.Error())
		return
	}
	switch action {
	case "accept":
		if forSession && mode == config.MCPApprovalAuto { // "prompt" asks every time
			s := t.m.mcp
			s.mu.Lock()
			s.approved[mcpApprovalKey(t.id, c.ref)] = true
			s.mu.Unlock()
		}
		t.startMCPCall(tr, c)
	case "decline":
		t.finishMCPCall(tr, c, "user rejected MCP tool call")
	default:
		t.finishMCPCall(tr, c, "user cancelled MCP tool call")
	}
}

// startMCPCall calls the tool in a child goroutine, within the server's
// tool timeout; progress and the end come back as events.
func (t *thread) startMCPCall(tr *turn, c *mcpCall) {
	s := t.m.mcp
	c.started = t.m.clock.Now()
	timeout := c.ref.cfg.ToolTimeout
	if timeout <= 0 {
		timeout = config.DefaultMCPToolTimeout
	}
	s.mu.Lock()
	s.active[c.ref.server] = append(s.active[c.ref.server], c)
	s.mu.Unlock()
	tctx := tr.ctx
	go func() {
		ctx, cancel := context.WithTimeout(context.WithValue(tctx, mcpCallKey{}, c), timeout)
		res, err := s.srv.Pool.Call(ctx, c.ref.server, c.ref.tool.Name, c.item.Arguments, func(msg string) {
			t.postEvent(tctx, func() {
				if t.turn == tr {
					t.notify(protocol.NotifyMcpToolCallProgress, protocol.McpToolCallProgressNotification{ThreadID: t.id, TurnID: tr.id, ItemID: c.item.ID, Message: msg})
				}
			})
		})
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && tctx.Err() == nil {
			err = fmt.Errorf("the MCP tool call timed out after %s (tool_timeout_sec)", timeout)
		}
		cancel()
		s.mu.Lock()
		s.active[c.ref.server] = slices.DeleteFunc(s.active[c.ref.server], func(x *mcpCall) bool { return x == c })
		s.mu.Unlock()
		t.postEvent(tctx, func() { t.onMCPDone(tr, c, res, err) })
	}()
}

func (t *thread) onMCPDone(tr *turn, c *mcpCall, res mcp.Result, err error) {
	if t.turn != tr {
		return
	}
	c.item.DurationMs = ptr(t.m.clock.Now().Sub(c.started).Milliseconds())
	if err != nil {
		t.finishMCPCall(tr, c, "tool call error: "+err.Error())
		return
	}
	limit := t.m.opts.Config.MCPToolOutputMaxBytes
	if limit <= 0 {
		limit = config.DefaultMCPToolOutputMaxBytes
	}
	shown, forModel := mcptool.Output(res, int(limit))
	c.item.Result = &protocol.McpToolCallResult{Content: shown, StructuredContent: res.Structured, Meta: res.Meta}
	if len(res.Structured) > int(limit) {
		c.item.Result.StructuredContent = nil
	}
	c.item.Status = protocol.ItemCompleted
	if res.IsError {
		c.item.Status = protocol.ItemFailed
	}
	if err := t.commitItem(tr, c.item, callHistory(c.call, forModel)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

// finishMCPCall completes an item whose call did not return a result.
func (t *thread) finishMCPCall(tr *turn, c *mcpCall, msg string) {
	c.item.Status = protocol.ItemFailed
	c.item.Error = &protocol.McpToolCallError{Message: msg}
	if c.item.DurationMs == nil {
		c.item.DurationMs = ptr(int64(0))
	}
	if err := t.commitItem(tr, c.item, callHistory(c.call, msg)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

// elicit forwards a server's elicitation to the client, as Codex does
// (mcpServer/elicitation/request), on behalf of the thread whose call to
// that server is in flight; with none, it is declined.
func (s *mcpState) elicit(ctx context.Context, server string, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
	// Under the newer MCP protocol the question comes with the call's
	// answer, and ctx is the call's; an older server asks on its own, and
	// the call in flight to it is the one asking.
	c, _ := ctx.Value(mcpCallKey{}).(*mcpCall)
	s.mu.Lock()
	if calls := s.active[server]; c == nil && len(calls) > 0 {
		c = calls[len(calls)-1]
	}
	s.mu.Unlock()
	if c == nil {
		return mcp.ElicitResult{Action: "decline"}, nil
	}
	t, tr := c.t, c.tr
	type answer struct {
		raw json.RawMessage
		err error
	}
	ans := make(chan answer, 1)
	t.postEvent(tr.ctx, func() {
		if t.turn != tr {
			ans <- answer{err: errors.New("the turn ended")}
			return
		}
		p := protocol.McpServerElicitationParams{ThreadID: t.id, TurnID: ptr(tr.id), ServerName: server, Mode: req.Mode, Message: req.Message,
			RequestedSchema: req.RequestedSchema, URL: req.URL, ElicitationID: req.ElicitationID, Meta: req.Meta}
		call := t.m.client.Call(protocol.RequestMcpServerElicitation, p)
		id := call.ID()
		tr.requests = append(tr.requests, id)
		go func() {
			raw, err := call.Wait(ctx)
			ans <- answer{raw, err}
			t.postEvent(tr.ctx, func() {
				if t.turn == tr {
					tr.dropRequest(id)
					t.resolved(id)
				}
			})
		}()
	})
	select {
	case a := <-ans:
		if a.err != nil {
			return mcp.ElicitResult{Action: "cancel"}, nil
		}
		var r struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
			Meta    map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(a.raw, &r); err != nil || (r.Action != "accept" && r.Action != "decline" && r.Action != "cancel") {
			s.m.log.Warn("unusable answer to an MCP elicitation; cancelled", "server", server, "answer", string(a.raw))
			return mcp.ElicitResult{Action: "cancel"}, nil
		}
		return mcp.ElicitResult{Action: r.Action, Content: r.Content, Meta: r.Meta}, nil
	case <-ctx.Done():
		return mcp.ElicitResult{}, ctx.Err()
	}
}
