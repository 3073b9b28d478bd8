package session

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/tooloutput"
)

// The agent's own tool names (package agenttools), under session's names.
const (
	toolExecCommand      = agenttools.ExecCommand
	toolApplyPatch       = agenttools.ApplyPatch
	toolUpdatePlan       = agenttools.UpdatePlan
	toolRequestUserInput = agenttools.RequestUserInput
)

// execAliases are the names models call the shell tool by.
var execAliases = agenttools.ExecAliases

// agentTools is the tool list of every model request. It depends only on
// the configuration, so it is built once per Manager rather than for every
// request.
func (t *thread) agentTools() []model.Tool {
	m := t.m
	m.toolsOnce.Do(func() {
		m.tools = agenttools.Build(m.opts.Config.ApplyPatchTool)
		if m.opts.Align != nil { // the project brain (brainhook.go)
			m.tools = append(m.tools, recordDecisionTool)
		}
	})
	// The client's tools (dynamictools.go) and MCP servers' (mcptools.go).
	return slices.Concat(agenttools.Without(m.tools, t.disabledTools()), t.dynamicModelTools(), t.mcpModelTools())
}

// toolNames lists the tools for an error message.
func (t *thread) toolNames() string {
	var names []string
	for _, tl := range t.agentTools() {
		names = append(names, tl.Name)
	}
	return strings.Join(names, ", ")
}

// runNextCall takes the next tool call of the response and runs it. Every
// tool waits for the turn's start checkpoint, so that the turn's diff and a
// later revert see the workspace as it was before the first change.
func (t *thread) runNextCall(tr *turn) {
	if len(tr.calls) == 0 {
		t.afterCalls(tr)
		return
	}
	call := tr.calls[0]
	tr.calls = tr.calls[1:]
	t.afterStartCheckpoint(tr, func() { t.dispatch(tr, call) })
}

func (t *thread) dispatch(tr *turn, call model.ToolCall) {
	call = agenttools.UnwrapArguments(call)
	switch {
	case agenttools.Off(t.disabledTools(), call.Name):
		t.toolError(tr, call, fmt.Sprintf("tool %q is turned off for this thread; the available tools are %s", call.Name, t.toolNames()))
	case execAliases[call.Name]:
		t.runCommandCall(tr, call)
	case call.Name == toolApplyPatch:
		t.runPatchCall(tr, call)
	case call.Name == "edit_file", call.Name == "write_file":
		t.runEditCall(tr, call)
	case call.Name == "read_file", call.Name == "list_dir", call.Name == "search", call.Name == tooloutput.ToolName:
		t.runReadCall(tr, call)
	case call.Name == toolUpdatePlan:
		t.runPlanCall(tr, call)
	case call.Name == toolRequestUserInput:
		t.runQuestionCall(tr, call)
	case call.Name == toolRecordDecision && t.m.opts.Align != nil:
		t.runDecisionCall(tr, call)
	case t.runDynamicCall(tr, call): // a tool the client declared (dynamictools.go)
	case strings.HasPrefix(call.Name, "mcp__"):
		if ref, ok := t.mcpTool(call.Name); ok {
			t.runMCPCall(tr, call, ref) // mcptools.go
			return
		}
		t.toolError(tr, call, fmt.Sprintf("unknown tool %q (its MCP server is not connected); the available tools are %s", call.Name, t.toolNames()))
	default:
		t.toolError(tr, call, fmt.Sprintf("unknown tool %q; the available tools are %s", call.Name, t.toolNames()))
	}
}

// toolError answers a tool call the agent got wrong; the model sees the
// message and the turn goes on.
func (t *thread) toolError(tr *turn, call model.ToolCall, msg string) {
	t.history = append(t.history, agenttools.CallHistory(call, msg)...)
	t.runNextCall(tr)
}
