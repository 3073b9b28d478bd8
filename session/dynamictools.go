package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/dynamictools"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// Editor-provided tools (Codex's dynamic tools): a client that opted into
// the experimental API declares tools on thread/start; the model may call
// them, and the client is asked with item/tool/call. The call is a
// dynamicToolCall item; the answer, exactly one, is its output. A client
// that does not answer within dynamic_tool_timeout_sec, answers with an
// error or is gone fails the call and the turn goes on.

// dynamicTools are the tools the thread's client declared.
func (t *thread) dynamicTools() []dynamictools.Tool {
	tools, err := dynamictools.FromSettings(t.settings.DynamicTools)
	if err != nil {
		t.m.log.Error("decoding the thread's dynamicTools", "thread", t.id, "err", err)
	}
	return tools
}

// dynamicModelTools offers the client's tools to the model.
func (t *thread) dynamicModelTools() []model.Tool { return dynamictools.ModelTools(t.dynamicTools()) }

// runDynamicCall runs the call if it names a tool the client declared, and
// reports whether it did.
func (t *thread) runDynamicCall(tr *turn, call model.ToolCall) bool {
	var d *dynamictools.Tool
	for _, x := range t.dynamicTools() {
		if x.Name == call.Name {
			d = &x
			break
		}
	}
	if d == nil {
		return false
	}
	args := json.RawMessage(strings.TrimSpace(call.Arguments))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var obj map[string]any
	if err := json.Unmarshal(args, &obj); err != nil {
		t.toolError(tr, call, fmt.Sprintf("invalid arguments for %s: the arguments must be a JSON object: %v", call.Name, err))
		return true
	}
	item := protocol.DynamicToolCallItem{ID: t.uniqueItemID(call.CallID), Tool: d.Tool, Namespace: d.Namespace, Arguments: args, Status: protocol.ItemInProgress}
	t.notifyItemStarted(tr, item)
	started := t.m.clock.Now()
	cl := t.m.client.Call(protocol.RequestItemToolCall, protocol.DynamicToolCallParams{
		ThreadID: t.id, TurnID: tr.id, CallID: item.ID, Tool: d.Tool, Namespace: d.Namespace, Arguments: args,
	})
	id := cl.ID()
	tr.requests = append(tr.requests, id)
	timeout := t.m.opts.Config.DynamicToolTimeout
	if timeout <= 0 {
		timeout = config.DefaultDynamicToolTimeout
	}
	ctx := tr.ctx
	go func() {
		wctx, cancel := context.WithTimeout(ctx, timeout)
		raw, err := cl.Wait(wctx)
		if errors.Is(wctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("the editor did not answer within %s (dynamic_tool_timeout_sec)", timeout)
		}
		cancel()
		t.postEvent(ctx, func() {
			if t.turn != tr {
				return
			}
			tr.dropRequest(id)
			t.resolved(id)
			item.DurationMs = ptr(t.m.clock.Now().Sub(started).Milliseconds())
			t.onDynamicDone(tr, call, item, raw, err)
		})
	}()
	return true
}

// onDynamicDone completes the item with the client's answer.
func (t *thread) onDynamicDone(tr *turn, call model.ToolCall, item protocol.DynamicToolCallItem, raw json.RawMessage, err error) {
	if errors.Is(err, ErrNoClient) {
		err = errors.New("the editor is gone")
	}
	out, failure := dynamictools.Complete(&item, call.Name, raw, err, t.m.opts.Config.MCPToolOutputMaxBytes)
	if failure != nil {
		t.m.log.Warn("dynamic tool call failed", "thread", t.id, "item", item.ID, "err", failure)
	}
	if err := t.commitItem(tr, item, agenttools.CallHistory(call, out)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}
