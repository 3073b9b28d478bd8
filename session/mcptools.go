package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcp"
	"github.com/apserver/apserver/mcpservers"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// MCP servers as tools (docs/mcp.md). Package mcpservers lists the tools
// under their model names, keeps the session approvals, calls and routes
// the servers' elicitations; mcptool decides names, the approval rule and
// what a result shows. This file is a thread's part: when a call needs
// approval (then full auto's ladder), and what the client is told
// (mcpToolCall items, progress, elicitations).

// mcpState is what the threads keep of the Manager's MCP servers (the
// servers, their one pool, the approvals and the calls in flight are
// package mcpservers').
type mcpState struct {
	m   *Manager
	srv *mcpservers.Servers
}

// mcpToolRef is one MCP tool under the name the model knows it by.
type mcpToolRef = mcpservers.Tool

// mcpCall is one MCP tool call of a turn; owned by the thread goroutine.
type mcpCall struct {
	call    model.ToolCall
	ref     mcpToolRef
	item    protocol.McpToolCallItem
	started time.Time
}

func newMCPState(m *Manager) *mcpState {
	return &mcpState{m: m, srv: mcpservers.New(mcpservers.Options{Config: m.opts.Config.MCPServers, Cwd: m.opts.Cwd, Sources: m.opts.ConfigSources,
		Log: m.log, Notify: m.notify})}
}

func (s *mcpState) close() { s.srv.Close() }

// mcpModelTools are the MCP tools the thread's model is offered.
func (t *thread) mcpModelTools() []model.Tool {
	refs := t.m.mcp.srv.Tools()
	out := make([]model.Tool, len(refs))
	for i, r := range refs {
		out[i] = r.ModelTool()
	}
	return out
}

// mcpTool finds the MCP tool a call names.
func (t *thread) mcpTool(name string) (mcpToolRef, bool) { return t.m.mcp.srv.Lookup(name) }

// mcpStartup starts the enabled servers no one has started yet before the
// turn's model request (so that their tools are offered), and calls then
// on the thread goroutine; it reports whether it took over. A server marked
// required that fails to start fails the turn.
func (t *thread) mcpStartup(tr *turn, then func()) bool {
	srv := t.m.mcp.srv
	cfg := srv.Config()
	pending := srv.Unstarted()
	if len(pending) == 0 {
		return false
	}
	ctx := tr.ctx
	go func() {
		err := srv.StartAll(ctx, pending, cfg)
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			if err != nil {
				t.failTurn(tr, err)
				return
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
	if t.readOnlyTurn() && (ref.Tool.Annotations == nil || !ref.Tool.Annotations.ReadOnly) {
		// Plan mode and reviews change nothing: only tools the server says
		// are read-only run.
		t.toolError(tr, call, fmt.Sprintf("%s is not available in a read-only turn (plan mode or review): the server does not say it only reads", call.Name))
		return
	}
	c := &mcpCall{call: call, ref: ref}
	c.item = protocol.McpToolCallItem{ID: t.uniqueItemID(call.CallID), Server: ref.Server, Tool: ref.Tool.Name, Status: protocol.ItemInProgress, Arguments: args}
	t.notifyItemStarted(tr, c.item)
	mode := ref.Config.ApprovalMode(ref.Tool.Name)
	if !mcptool.NeedsApproval(mode, ref.Tool.Annotations, t.fullAccess()) || t.m.mcp.srv.Approved(t.id, ref) {
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

// askMCPApproval asks as Codex does (mcptool.ApprovalRequest). Full auto's
// ladder sees it first.
func (t *thread) askMCPApproval(tr *turn, c *mcpCall, mode string) {
	params := mcptool.ApprovalRequest(c.ref.Server, c.ref.Tool, c.item.Arguments, mode)
	params.ThreadID, params.TurnID, params.ItemID = t.id, ptr(tr.id), c.item.ID
	req := serverRequest{Method: protocol.RequestMcpServerElicitation, Params: params, Kind: "mcpToolCall", Command: c.ref.Name}
	if c.ref.Config.Untrusted {
		req.HumanOnly = fmt.Sprintf("MCP server %q was added by %s, which you have not trusted: its calls go to a URL the repository chose", c.ref.Server, c.ref.Config.Source)
	}
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
			t.m.mcp.srv.Approve(t.id, c.ref)
		}
		t.startMCPCall(tr, c)
	case "decline":
		t.finishMCPCall(tr, c, "user rejected MCP tool call")
	default:
		t.finishMCPCall(tr, c, "user cancelled MCP tool call")
	}
}

// startMCPCall calls the tool in a child goroutine, within the server's
// tool timeout; progress and the end come back as events, and the
// server's elicitations meanwhile go to this turn's client (elicit).
func (t *thread) startMCPCall(tr *turn, c *mcpCall) {
	c.started = t.m.clock.Now()
	timeout := c.ref.Config.ToolTimeout
	if timeout <= 0 {
		timeout = config.DefaultMCPToolTimeout
	}
	tctx := tr.ctx
	ask := func(ctx context.Context, server string, req mcp.ElicitRequest) (json.RawMessage, error) {
		return t.elicit(ctx, tr, server, req)
	}
	go func() {
		res, err := t.m.mcp.srv.Call(tctx, c.ref, c.item.Arguments, timeout, ask, func(msg string) {
			t.postEvent(tctx, func() {
				if t.turn == tr {
					t.notify(protocol.NotifyMcpToolCallProgress, protocol.McpToolCallProgressNotification{ThreadID: t.id, TurnID: tr.id, ItemID: c.item.ID, Message: msg})
				}
			})
		})
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
	result, forModel, failed := mcptool.ItemResult(res, t.m.opts.Config.MCPToolOutputMaxBytes)
	c.item.Result = result
	c.item.Status = protocol.ItemCompleted
	if failed {
		c.item.Status = protocol.ItemFailed
	}
	if err := t.commitItem(tr, c.item, agenttools.CallHistory(c.call, forModel)); err != nil {
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
	if err := t.commitItem(tr, c.item, agenttools.CallHistory(c.call, msg)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

// elicit forwards a server's elicitation to the client, as Codex does
// (mcpServer/elicitation/request), on behalf of the turn whose call to
// that server is in flight (mcpservers routes it here), and returns the
// raw answer.
func (t *thread) elicit(ctx context.Context, tr *turn, server string, req mcp.ElicitRequest) (json.RawMessage, error) {
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
		p := mcptool.ElicitParams(server, req)
		p.ThreadID, p.TurnID = t.id, ptr(tr.id)
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
		return a.raw, a.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
