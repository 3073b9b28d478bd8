package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/mcptool"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
)

// Editor-provided tools (Codex's dynamic tools): a client that opted into
// the experimental API declares tools on thread/start; the model may call
// them, and the client is asked with item/tool/call. The call is a
// dynamicToolCall item; the answer, exactly one, is its output. A client
// that does not answer within dynamic_tool_timeout_sec, answers with an
// error or is gone fails the call and the turn goes on.

// dynTool is one declared tool under the name the model calls it by:
// its name, or NAMESPACE__NAME for a tool of a namespace.
type dynTool struct {
	name      string
	tool      string
	namespace *string
	spec      protocol.DynamicToolSpec
}

// encodeDynamicTools keeps thread/start's dynamicTools with the thread's
// settings (so they survive a resume), refusing a name the agent's own
// tools or the MCP tools use.
func encodeDynamicTools(specs []protocol.DynamicToolSpec) (string, error) {
	if len(specs) == 0 {
		return "", nil
	}
	builtin := map[string]bool{}
	for _, tl := range agenttools.Build("function") {
		builtin[tl.Name] = true
	}
	for n := range execAliases {
		builtin[n] = true
	}
	for _, d := range flattenDynamicTools(specs) {
		if builtin[d.name] || strings.HasPrefix(d.name, "mcp__") {
			return "", protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: dynamicTools: %q is the name of one of apserver's own tools", d.name)
		}
	}
	b, err := json.Marshal(specs)
	if err != nil {
		return "", fmt.Errorf("encoding dynamicTools: %w", err)
	}
	return string(b), nil
}

func flattenDynamicTools(specs []protocol.DynamicToolSpec) []dynTool {
	var out []dynTool
	for _, s := range specs {
		if s.Type == "namespace" {
			ns := s.Name
			for _, t := range s.Tools {
				out = append(out, dynTool{name: ns + "__" + t.Name, tool: t.Name, namespace: &ns, spec: t})
			}
			continue
		}
		out = append(out, dynTool{name: s.Name, tool: s.Name, spec: s})
	}
	return out
}

// dynamicTools are the tools the thread's client declared.
func (t *thread) dynamicTools() []dynTool {
	if t.settings.DynamicTools == "" {
		return nil
	}
	var specs []protocol.DynamicToolSpec
	if err := json.Unmarshal([]byte(t.settings.DynamicTools), &specs); err != nil {
		t.m.log.Error("decoding the thread's dynamicTools", "thread", t.id, "err", err)
		return nil
	}
	return flattenDynamicTools(specs)
}

// dynamicModelTools offers the client's tools to the model as function
// tools (schemas made acceptable to every provider, as MCP tools').
func (t *thread) dynamicModelTools() []model.Tool {
	var out []model.Tool
	for _, d := range t.dynamicTools() {
		out = append(out, model.Tool{Name: d.name, Description: d.spec.Description, Parameters: mcptool.SanitizeSchema(d.spec.InputSchema)})
	}
	return out
}

// runDynamicCall runs the call if it names a tool the client declared, and
// reports whether it did.
func (t *thread) runDynamicCall(tr *turn, call model.ToolCall) bool {
	var d *dynTool
	for _, x := range t.dynamicTools() {
		if x.name == call.Name {
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
	item := protocol.DynamicToolCallItem{ID: t.uniqueItemID(call.CallID), Tool: d.tool, Namespace: d.namespace, Arguments: args, Status: protocol.ItemInProgress}
	t.notifyItemStarted(tr, item)
	started := t.m.clock.Now()
	cl := t.m.client.Call(protocol.RequestItemToolCall, protocol.DynamicToolCallParams{
		ThreadID: t.id, TurnID: tr.id, CallID: item.ID, Tool: d.tool, Namespace: d.namespace, Arguments: args,
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
	var res protocol.DynamicToolCallResponse
	if err == nil {
		if uerr := json.Unmarshal(raw, &res); uerr != nil {
			err = fmt.Errorf("the editor's answer is not {contentItems, success}: %v", uerr)
		} else {
			for i, c := range res.ContentItems {
				if c.Type != "inputText" && c.Type != "inputImage" {
					err = fmt.Errorf("the editor's answer has contentItems[%d].type %q, not inputText or inputImage", i, c.Type)
					break
				}
			}
		}
	}
	limit := int(t.m.opts.Config.MCPToolOutputMaxBytes)
	if limit <= 0 {
		limit = config.DefaultMCPToolOutputMaxBytes
	}
	item.ContentItems = []protocol.DynamicToolCallContent{}
	var out string
	if err != nil {
		if errors.Is(err, ErrNoClient) {
			err = errors.New("the editor is gone")
		}
		item.Status, item.Success = protocol.ItemFailed, ptr(false)
		out = "The editor's tool " + call.Name + " failed: " + err.Error()
		t.m.log.Warn("dynamic tool call failed", "thread", t.id, "item", item.ID, "err", err)
	} else {
		var sb strings.Builder
		if !res.Success {
			sb.WriteString("The tool reported a failure:\n")
		}
		for _, c := range res.ContentItems {
			if c.Type == "inputImage" {
				item.ContentItems = append(item.ContentItems, protocol.DynamicToolCallContent{Type: c.Type, ImageURL: c.ImageURL})
				sb.WriteString("[image]\n")
				continue
			}
			text := c.Text
			if len(text) > limit {
				text = mcptool.CutUTF8(text, limit) + mcptool.TruncationMarker(limit, len(c.Text))
			}
			item.ContentItems = append(item.ContentItems, protocol.DynamicToolCallContent{Type: "inputText", Text: text})
			sb.WriteString(c.Text)
			sb.WriteString("\n")
		}
		out = strings.TrimSuffix(sb.String(), "\n")
		if len(out) > limit {
			out = mcptool.CutUTF8(out, limit) + mcptool.TruncationMarker(limit, len(out))
		}
		item.Success = ptr(res.Success)
		item.Status = protocol.ItemCompleted
		if !res.Success {
			item.Status = protocol.ItemFailed
		}
	}
	if err := t.commitItem(tr, item, callHistory(call, out)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}
