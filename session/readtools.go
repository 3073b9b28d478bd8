package session

import (
	"encoding/json"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/commandpolicy"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tools/files"
)

// maxShownOutput caps the tool output copied into a dynamicToolCall item;
// the model gets all of it.
const maxShownOutput = 16 << 10

// runReadCall handles read_file, list_dir and search. They change nothing,
// need no approval, and show as dynamicToolCall items so the client sees
// what the agent looked at. They run on the thread goroutine: each is
// bounded by the tool's own caps (lines, entries, results, file sizes).
func (t *thread) runReadCall(tr *turn, call model.ToolCall) {
	args := json.RawMessage(call.Arguments)
	if !json.Valid(args) {
		args = json.RawMessage("{}")
	}
	item := protocol.DynamicToolCallItem{ID: t.uniqueItemID(call.CallID), Tool: call.Name, Arguments: args, Status: protocol.ItemInProgress, ContentItems: []protocol.DynamicToolCallContent{}}
	t.notifyItemStarted(tr, item)
	start := t.m.clock.Now()
	out, err := t.readTool(tr, call)
	item.DurationMs = ptr(t.m.clock.Now().Sub(start).Milliseconds())
	if err != nil {
		out = call.Name + ": " + err.Error()
		item.Status, item.Success = protocol.ItemFailed, ptr(false)
	} else {
		item.Status, item.Success = protocol.ItemCompleted, ptr(true)
	}
	shown := out
	if len(shown) > maxShownOutput {
		shown = shown[:maxShownOutput] + "\n… (truncated)"
	}
	item.ContentItems = []protocol.DynamicToolCallContent{{Type: "inputText", Text: shown}}
	if err := t.commitItem(tr, item, agenttools.CallHistory(call, out)); err != nil {
		t.failTurn(tr, err)
		return
	}
	t.runNextCall(tr)
}

func (t *thread) readTool(tr *turn, call model.ToolCall) (string, error) {
	if call.Name == tooloutput.ToolName {
		return t.readOutput(tr, []byte(call.Arguments)) // tooloutput.go
	}
	ws, err := t.workspace()
	if err != nil {
		return "", err
	}
	raw := []byte(call.Arguments)
	switch call.Name {
	case "read_file":
		var p files.ReadParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", err
		}
		out, err := ws.Read(p)
		if err == nil {
			// What the agent has seen: a later edit by someone else to this
			// file makes the agent's next change to it stale.
			if st, serr := ws.Stamp(p.Path); serr == nil {
				tr.stamps[commandpolicy.PathKey(t.settings.Cwd, p.Path)] = st
			}
		}
		return out, err
	case "list_dir":
		var p files.ListParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", err
		}
		return ws.List(p)
	default:
		var p files.SearchParams
		if err := json.Unmarshal(raw, &p); err != nil {
			return "", err
		}
		return ws.Search(p)
	}
}
