package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// codexEvents writes Codex's exec event stream (`codex exec --json`, the
// ThreadEvent union of @openai/codex-sdk and codex-rs exec_events.rs) from
// apserver's notifications: one JSON object per line on out.
//
// Items are renumbered item_0, item_1, … as codex exec does. Agent messages,
// reasoning and file changes appear once, completed; commands and tool calls
// start and complete; the agent's plan is a todo_list that starts with the
// first update_plan, is updated by the next ones and completes with the turn.
// apserver's own read tools (read_file, list_dir, search) have no Codex exec
// shape and appear as mcp_tool_call items of server "apserver".
type codexEvents struct {
	out  io.Writer
	cwd  string // file changes are reported with absolute paths, as codex does
	next int
	ids  map[string]string // apserver item id → Codex item id

	turn     string // the running turn, "" between turns
	todo     *codexTodoList
	usage    codexUsage
	fatalErr string // the last error that will not be retried
}

func newCodexEvents(out io.Writer, cwd string) *codexEvents {
	return &codexEvents{out: out, cwd: cwd, ids: map[string]string{}}
}

// Codex exec events and items. Field names and optionality follow the SDK's
// types; a field without omitempty is always present.
type (
	codexUsage struct {
		InputTokens           int64 `json:"input_tokens"`
		CachedInputTokens     int64 `json:"cached_input_tokens"`
		CacheWriteInputTokens int64 `json:"cache_write_input_tokens"`
		OutputTokens          int64 `json:"output_tokens"`
		ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	}
	codexThreadError struct {
		Message string `json:"message"`
	}
	codexAgentMessage struct {
		ID   string `json:"id"`
		Type string `json:"type"` // agent_message
		Text string `json:"text"`
	}
	codexReasoning struct {
		ID   string `json:"id"`
		Type string `json:"type"` // reasoning
		Text string `json:"text"`
	}
	codexCommand struct {
		ID               string `json:"id"`
		Type             string `json:"type"` // command_execution
		Command          string `json:"command"`
		AggregatedOutput string `json:"aggregated_output"`
		ExitCode         *int   `json:"exit_code,omitempty"`
		Status           string `json:"status"` // in_progress | completed | failed
	}
	codexFileChange struct {
		ID      string            `json:"id"`
		Type    string            `json:"type"` // file_change
		Changes []codexFileUpdate `json:"changes"`
		Status  string            `json:"status"` // completed | failed
	}
	codexFileUpdate struct {
		Path string `json:"path"`
		Kind string `json:"kind"` // add | delete | update
	}
	codexMcpToolCall struct {
		ID        string            `json:"id"`
		Type      string            `json:"type"` // mcp_tool_call
		Server    string            `json:"server"`
		Tool      string            `json:"tool"`
		Arguments json.RawMessage   `json:"arguments"`
		Result    *codexMcpResult   `json:"result,omitempty"`
		Error     *codexThreadError `json:"error,omitempty"`
		Status    string            `json:"status"` // in_progress | completed | failed
	}
	codexMcpResult struct {
		Content           []codexContentBlock `json:"content"`
		StructuredContent any                 `json:"structured_content"`
	}
	codexContentBlock struct {
		Type string `json:"type"` // text
		Text string `json:"text"`
	}
	codexWebSearch struct {
		ID    string `json:"id"`
		Type  string `json:"type"` // web_search
		Query string `json:"query"`
	}
	codexTodoList struct {
		ID    string          `json:"id"`
		Type  string          `json:"type"` // todo_list
		Items []codexTodoItem `json:"items"`
	}
	codexTodoItem struct {
		Text      string `json:"text"`
		Completed bool   `json:"completed"`
	}
	codexErrorItem struct {
		ID      string `json:"id"`
		Type    string `json:"type"` // error
		Message string `json:"message"`
	}
)

// emit writes one event line. Like codex (serde), it leaves <, > and &
// unescaped.
func (e *codexEvents) emit(v any) {
	enc := json.NewEncoder(e.out)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // one line, newline included
}

func (e *codexEvents) item(kind string, item any) {
	e.emit(struct {
		Type string `json:"type"`
		Item any    `json:"item"`
	}{kind, item})
}

// itemID maps an apserver item id to its Codex id, allocating one the first
// time; an empty id always gets a fresh one.
func (e *codexEvents) itemID(apID string) string {
	if id, ok := e.ids[apID]; ok && apID != "" {
		return id
	}
	id := fmt.Sprintf("item_%d", e.next)
	e.next++
	if apID != "" {
		e.ids[apID] = id
	}
	return id
}

// threadStarted is the stream's first line: the thread exec works on, new
// or resumed.
func (e *codexEvents) threadStarted(threadID string) {
	e.emit(struct {
		Type     string `json:"type"`
		ThreadID string `json:"thread_id"`
	}{"thread.started", threadID})
}

// notify translates one apserver notification; b is its params as JSON.
func (e *codexEvents) notify(method string, b []byte) {
	var p struct {
		TurnID     string                    `json:"turnId"`
		Turn       protocol.Turn             `json:"turn"`
		Item       json.RawMessage           `json:"item"`
		Plan       []protocol.TurnPlanStep   `json:"plan"`
		TokenUsage protocol.ThreadTokenUsage `json:"tokenUsage"`
		Error      protocol.TurnError        `json:"error"`
		WillRetry  bool                      `json:"willRetry"`
		Message    string                    `json:"message"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return
	}
	switch method {
	case protocol.NotifyTurnStarted:
		e.turn, e.todo, e.usage, e.fatalErr = p.Turn.ID, nil, codexUsage{}, ""
		e.emit(struct {
			Type string `json:"type"`
		}{"turn.started"})
	case protocol.NotifyItemStarted, protocol.NotifyItemCompleted:
		it, err := protocol.UnmarshalThreadItem(p.Item)
		if err != nil {
			return
		}
		if method == protocol.NotifyItemStarted {
			e.itemStarted(it)
		} else {
			e.itemCompleted(it)
		}
	case protocol.NotifyTurnPlanUpdated:
		items := make([]codexTodoItem, 0, len(p.Plan))
		for _, s := range p.Plan {
			items = append(items, codexTodoItem{Text: s.Step, Completed: s.Status == "completed"})
		}
		if e.todo == nil {
			e.todo = &codexTodoList{ID: e.itemID(""), Type: "todo_list", Items: items}
			e.item("item.started", e.todo)
		} else {
			e.todo.Items = items
			e.item("item.updated", e.todo)
		}
	case protocol.NotifyThreadTokenUsage:
		if p.TurnID != "" && p.TurnID != e.turn {
			return
		}
		l := p.TokenUsage.Last
		e.usage.InputTokens += l.InputTokens
		e.usage.CachedInputTokens += l.CachedInputTokens
		e.usage.CacheWriteInputTokens += l.CacheWriteInputTokens
		e.usage.OutputTokens += l.OutputTokens
		e.usage.ReasoningOutputTokens += l.ReasoningOutputTokens
	case protocol.NotifyError:
		if p.WillRetry { // not fatal: an error item, as codex exec reports its warnings
			e.item("item.completed", codexErrorItem{ID: e.itemID(""), Type: "error", Message: p.Error.Message})
			return
		}
		e.fatalErr = p.Error.Message
		e.emit(struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{"error", p.Error.Message})
	case protocol.NotifyWarning:
		e.item("item.completed", codexErrorItem{ID: e.itemID(""), Type: "error", Message: p.Message})
	case protocol.NotifyTurnCompleted:
		if e.todo != nil {
			e.item("item.completed", e.todo)
			e.todo = nil
		}
		e.turn = ""
		if p.Turn.Status == protocol.TurnCompleted {
			e.emit(struct {
				Type  string     `json:"type"`
				Usage codexUsage `json:"usage"`
			}{"turn.completed", e.usage})
			return
		}
		msg := e.fatalErr
		if p.Turn.Error != nil && p.Turn.Error.Message != "" {
			msg = p.Turn.Error.Message
		}
		if msg == "" {
			msg = "turn " + string(p.Turn.Status)
		}
		e.emit(struct {
			Type  string           `json:"type"`
			Error codexThreadError `json:"error"`
		}{"turn.failed", codexThreadError{Message: msg}})
	}
}

func (e *codexEvents) itemStarted(it protocol.ThreadItem) {
	switch v := it.(type) {
	case protocol.CommandExecutionItem:
		e.item("item.started", codexCommand{ID: e.itemID(v.ID), Type: "command_execution", Command: v.Command, Status: "in_progress"})
	case protocol.DynamicToolCallItem:
		e.item("item.started", e.toolCall(v))
	case protocol.RawItem:
		if c, ok := e.rawItem(v, true); ok {
			e.item("item.started", c)
		}
	}
}

func (e *codexEvents) itemCompleted(it protocol.ThreadItem) {
	switch v := it.(type) {
	case protocol.AgentMessageItem:
		e.item("item.completed", codexAgentMessage{ID: e.itemID(v.ID), Type: "agent_message", Text: v.Text})
	case protocol.ReasoningItem:
		parts := v.Summary
		if len(parts) == 0 {
			parts = v.Content
		}
		text := strings.TrimSpace(strings.Join(parts, "\n\n"))
		if text == "" {
			return
		}
		e.item("item.completed", codexReasoning{ID: e.itemID(v.ID), Type: "reasoning", Text: text})
	case protocol.CommandExecutionItem:
		c := codexCommand{ID: e.itemID(v.ID), Type: "command_execution", Command: v.Command, ExitCode: v.ExitCode, Status: "completed"}
		if v.AggregatedOutput != nil {
			c.AggregatedOutput = *v.AggregatedOutput
		}
		if v.Status != protocol.ItemCompleted || (v.ExitCode != nil && *v.ExitCode != 0) {
			c.Status = "failed"
		}
		e.item("item.completed", c)
	case protocol.FileChangeItem:
		c := codexFileChange{ID: e.itemID(v.ID), Type: "file_change", Changes: []codexFileUpdate{}, Status: "completed"}
		for _, ch := range v.Changes {
			kind := ch.Kind.Type
			if kind != "add" && kind != "delete" {
				kind = "update"
			}
			path := ch.Path
			if !filepath.IsAbs(path) && e.cwd != "" {
				path = filepath.Join(e.cwd, path)
			}
			c.Changes = append(c.Changes, codexFileUpdate{Path: path, Kind: kind})
		}
		if v.Status != protocol.ItemCompleted {
			c.Status = "failed"
		}
		e.item("item.completed", c)
	case protocol.DynamicToolCallItem:
		e.item("item.completed", e.toolCall(v))
	case protocol.RawItem:
		if c, ok := e.rawItem(v, false); ok {
			e.item("item.completed", c)
		}
	}
}

// toolCall shows one of apserver's own tools as an MCP tool call.
func (e *codexEvents) toolCall(v protocol.DynamicToolCallItem) codexMcpToolCall {
	c := codexMcpToolCall{ID: e.itemID(v.ID), Type: "mcp_tool_call", Server: "apserver", Tool: v.Tool, Arguments: v.Arguments, Status: "in_progress"}
	if len(c.Arguments) == 0 {
		c.Arguments = json.RawMessage("{}")
	}
	switch v.Status {
	case protocol.ItemInProgress:
		return c
	case protocol.ItemCompleted:
		c.Status = "completed"
	default:
		c.Status = "failed"
	}
	var text []string
	for _, ci := range v.ContentItems {
		text = append(text, ci.Text)
	}
	if c.Status == "failed" || (v.Success != nil && !*v.Success) {
		c.Status = "failed"
		c.Error = &codexThreadError{Message: strings.Join(text, "\n")}
		return c
	}
	c.Result = &codexMcpResult{Content: []codexContentBlock{}}
	for _, t := range text {
		c.Result.Content = append(c.Result.Content, codexContentBlock{Type: "text", Text: t})
	}
	return c
}

// rawItem maps the Codex app-server items apserver does not model itself
// (mcpToolCall, webSearch), should a tool produce them.
func (e *codexEvents) rawItem(v protocol.RawItem, started bool) (any, bool) {
	var r struct {
		Server    string          `json:"server"`
		Tool      string          `json:"tool"`
		Arguments json.RawMessage `json:"arguments"`
		Status    string          `json:"status"`
		Result    *struct {
			Content           []codexContentBlock `json:"content"`
			StructuredContent any                 `json:"structuredContent"`
		} `json:"result"`
		Error *codexThreadError `json:"error"`
		Query string            `json:"query"`
	}
	if json.Unmarshal(v.Raw, &r) != nil {
		return nil, false
	}
	switch v.Type {
	case "mcpToolCall":
		c := codexMcpToolCall{ID: e.itemID(v.ID), Type: "mcp_tool_call", Server: r.Server, Tool: r.Tool, Arguments: r.Arguments, Status: "in_progress"}
		if len(c.Arguments) == 0 {
			c.Arguments = json.RawMessage("null")
		}
		if started {
			return c, true
		}
		c.Status = "completed"
		if r.Error != nil || r.Status == string(protocol.ItemFailed) {
			c.Status, c.Error = "failed", r.Error
			if c.Error == nil {
				c.Error = &codexThreadError{Message: "tool call failed"}
			}
		} else if r.Result != nil {
			c.Result = &codexMcpResult{Content: r.Result.Content, StructuredContent: r.Result.StructuredContent}
			if c.Result.Content == nil {
				c.Result.Content = []codexContentBlock{}
			}
		}
		return c, true
	case "webSearch":
		return codexWebSearch{ID: e.itemID(v.ID), Type: "web_search", Query: r.Query}, true
	}
	return nil, false
}
