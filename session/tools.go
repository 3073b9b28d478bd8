package session

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tools/files"
)

// Tool names the agent is offered besides exec_command.
const (
	toolApplyPatch       = "apply_patch"
	toolUpdatePlan       = "update_plan"
	toolRequestUserInput = "request_user_input"
)

// execAliases are the names under which models trained on other harnesses
// call the shell tool.
var execAliases = map[string]bool{toolExecCommand: true, "shell": true, "shell_command": true, "bash": true}

const applyPatchDescription = `Edit files with a patch. The input is the whole patch text:

*** Begin Patch
*** Add File: path/to/new.txt
+first line of the new file
*** Update File: path/to/existing.go
*** Move to: path/to/renamed.go   (optional)
@@ func nearby() {               (optional context to locate the hunk)
 unchanged line
-removed line
+added line
*** Delete File: path/to/old.txt
*** End Patch

Paths are relative to the workspace. Give three lines of context around each change. All files of one patch are changed together, or none.`

// applyPatchGrammar constrains the free-form apply_patch input (Lark).
const applyPatchGrammar = `start: begin_patch hunk+ end_patch
begin_patch: "*** Begin Patch" LF
end_patch: "*** End Patch" LF?

hunk: add_hunk | delete_hunk | update_hunk
add_hunk: "*** Add File: " filename LF add_line+
delete_hunk: "*** Delete File: " filename LF
update_hunk: "*** Update File: " filename LF change_move? change?

filename: /(.+)/
add_line: "+" /(.*)/ LF -> line

change_move: "*** Move to: " filename LF
change: (change_context | change_line)+ eof_line?
change_context: ("@@" | "@@ " /(.+)/) LF
change_line: ("+" | "-" | " ") /(.*)/ LF
eof_line: "*** End of File" LF

%import common.LF
`

var applyPatchSchema = json.RawMessage(`{
  "type": "object",
  "properties": {"input": {"type": "string", "description": "The entire patch, from *** Begin Patch to *** End Patch."}},
  "required": ["input"],
  "additionalProperties": false
}`)

const updatePlanDescription = `Record your plan for the task and keep it current: a short list of steps, each pending, in_progress or completed. At most one step is in_progress. Call it again whenever a step's status changes; the user sees the plan.`

var updatePlanSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "explanation": {"type": "string", "description": "Optional note on what changed in the plan."},
    "plan": {"type": "array", "items": {"type": "object", "properties": {
      "step": {"type": "string"},
      "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
    }, "required": ["step", "status"], "additionalProperties": false}}
  },
  "required": ["plan"],
  "additionalProperties": false
}`)

const requestUserInputDescription = `Ask the user one or more questions and wait for the answers. Use it only when you cannot proceed without a decision only the user can make; offer options when the answer is a choice.`

var requestUserInputSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "questions": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
      "id": {"type": "string", "description": "A short identifier for the answer."},
      "header": {"type": "string", "description": "A short title (a few words)."},
      "question": {"type": "string"},
      "options": {"type": "array", "items": {"type": "object", "properties": {
        "label": {"type": "string"}, "description": {"type": "string"}
      }, "required": ["label"], "additionalProperties": false}}
    }, "required": ["id", "question"], "additionalProperties": false}}
  },
  "required": ["questions"],
  "additionalProperties": false
}`)

// agentTools is the tool list of every model request. It depends only on
// the configuration, so it is built once per Manager rather than for every
// request.
func (t *thread) agentTools() []model.Tool {
	m := t.m
	m.toolsOnce.Do(func() {
		m.tools = buildAgentTools(m.opts.Config.ApplyPatchTool)
		if m.opts.Align != nil { // the project brain (brainhook.go)
			m.tools = append(m.tools, recordDecisionTool)
		}
	})
	// The client's tools (dynamictools.go) and MCP servers' (mcptools.go).
	return slices.Concat(withoutTools(m.tools, t.disabledTools()), t.dynamicModelTools(), t.mcpModelTools())
}

func buildAgentTools(applyPatchTool string) []model.Tool {
	out := []model.Tool{{
		Name:        toolExecCommand,
		Description: "Run a shell command in the workspace and return its exit code and combined stdout/stderr.",
		Parameters:  execCommandSchema,
	}}
	ap := model.Tool{Name: toolApplyPatch, Description: applyPatchDescription, Parameters: applyPatchSchema}
	if applyPatchTool != "function" {
		ap.Freeform = &model.Freeform{Syntax: "lark", Definition: applyPatchGrammar}
	}
	out = append(out, ap)
	for _, s := range files.Specs() {
		out = append(out, model.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return append(out,
		model.Tool{Name: toolUpdatePlan, Description: updatePlanDescription, Parameters: updatePlanSchema},
		model.Tool{Name: toolRequestUserInput, Description: requestUserInputDescription, Parameters: requestUserInputSchema},
		model.Tool{Name: tooloutput.ToolName, Description: tooloutput.Description, Parameters: tooloutput.Schema},
	)
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
	call = unwrapArguments(call)
	switch {
	case toolOff(t.disabledTools(), call.Name):
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

// unwrapArguments undoes a double encoding some models use: a function
// call's arguments sent as a JSON string that holds the JSON object. Every
// tool then decodes the object, and the history records it. Free-form
// (custom) tool input is text and left alone.
func unwrapArguments(call model.ToolCall) model.ToolCall {
	raw := strings.TrimSpace(call.Arguments)
	if call.Custom || !strings.HasPrefix(raw, `"`) {
		return call
	}
	var inner string
	if json.Unmarshal([]byte(raw), &inner) != nil {
		return call
	}
	if in := strings.TrimSpace(inner); strings.HasPrefix(in, "{") && json.Valid([]byte(in)) {
		call.Arguments = in
	}
	return call
}

// callHistory is the history a tool call and its output add.
func callHistory(call model.ToolCall, output string) []model.Entry {
	return []model.Entry{
		{Kind: model.EntryToolCall, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments, Custom: call.Custom},
		{Kind: model.EntryToolOutput, CallID: call.CallID, Output: output, Custom: call.Custom},
	}
}

// toolError answers a tool call the agent got wrong; the model sees the
// message and the turn goes on.
func (t *thread) toolError(tr *turn, call model.ToolCall, msg string) {
	t.history = append(t.history, callHistory(call, msg)...)
	t.runNextCall(tr)
}
