package agenttools

import (
	"encoding/json"
	"strings"

	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tools/files"
)

// The names of the agent's own tools besides the file tools (package
// tools/files) and read_output (package tooloutput).
const (
	ExecCommand      = "exec_command"
	ApplyPatch       = "apply_patch"
	UpdatePlan       = "update_plan"
	RequestUserInput = "request_user_input"
)

// ExecAliases are the names under which models trained on other harnesses
// call the shell tool, exec_command's own included.
var ExecAliases = map[string]bool{ExecCommand: true, "shell": true, "shell_command": true, "bash": true}

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

// Build is the agent's own tool list: exec_command, apply_patch (a
// free-form tool with its grammar unless applyPatchTool is "function"),
// the file tools, update_plan, request_user_input and read_output.
func Build(applyPatchTool string) []model.Tool {
	out := []model.Tool{{
		Name:        ExecCommand,
		Description: "Run a shell command in the workspace and return its exit code and combined stdout/stderr.",
		Parameters:  execCommandSchema,
	}}
	ap := model.Tool{Name: ApplyPatch, Description: applyPatchDescription, Parameters: applyPatchSchema}
	if applyPatchTool != "function" {
		ap.Freeform = &model.Freeform{Syntax: "lark", Definition: applyPatchGrammar}
	}
	out = append(out, ap)
	for _, s := range files.Specs() {
		out = append(out, model.Tool{Name: s.Name, Description: s.Description, Parameters: s.Parameters})
	}
	return append(out,
		model.Tool{Name: UpdatePlan, Description: updatePlanDescription, Parameters: updatePlanSchema},
		model.Tool{Name: RequestUserInput, Description: requestUserInputDescription, Parameters: requestUserInputSchema},
		model.Tool{Name: tooloutput.ToolName, Description: tooloutput.Description, Parameters: tooloutput.Schema},
	)
}

// UnwrapArguments undoes a double encoding some models use: a function
// call's arguments sent as a JSON string that holds the JSON object. Every
// tool then decodes the object, and the history records it. Free-form
// (custom) tool input is text and left alone.
func UnwrapArguments(call model.ToolCall) model.ToolCall {
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

var execCommandSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "cmd": {"type": "string", "description": "The shell command to run (executed with bash -c)."},
    "workdir": {"type": "string", "description": "Working directory, relative to the workspace or absolute. Defaults to the workspace."},
    "timeout_ms": {"type": "integer", "description": "Kill the command after this many milliseconds. Default 120000."},
    "sandbox_permissions": {"type": "string", "enum": ["use_default", "require_escalated"], "description": "Ask the user to approve running this command with more permissions than the sandbox allows."},
    "justification": {"type": "string", "description": "Why the command is needed; shown to the user when approval is asked."}
  },
  "required": ["cmd"],
  "additionalProperties": false
}`)

// ExecArgs are exec_command's arguments. "command" is accepted as an alias
// of "cmd" for models trained on other harnesses.
type ExecArgs struct {
	Cmd                string `json:"cmd"`
	Command            any    `json:"command"`
	Workdir            string `json:"workdir"`
	TimeoutMs          int64  `json:"timeout_ms"`
	SandboxPermissions string `json:"sandbox_permissions"`
	Justification      string `json:"justification"`
}

// CommandLine is the command to run: cmd, or command as a string or an
// argv (the script of ["bash", "-lc", script]).
func (a *ExecArgs) CommandLine() string {
	if a.Cmd != "" {
		return a.Cmd
	}
	switch c := a.Command.(type) {
	case string:
		return c
	case []any:
		// ["bash","-lc","…"] style: take the script when present.
		parts := make([]string, 0, len(c))
		for _, p := range c {
			if s, ok := p.(string); ok {
				parts = append(parts, s)
			}
		}
		if len(parts) == 3 && (parts[1] == "-lc" || parts[1] == "-c") {
			return parts[2]
		}
		return strings.Join(parts, " ")
	}
	return ""
}

// PatchCommand recognizes a shell command that is really a patch: models
// trained on Codex often run `apply_patch <<'EOF' … EOF` through the shell
// tool, where no such program exists. Codex intercepts it; so do we, and
// the patch goes through the same fileChange flow as the apply_patch tool.
func PatchCommand(cmd string) (string, bool) {
	c := strings.TrimSpace(cmd)
	for _, name := range []string{"apply_patch", "applypatch"} {
		if rest, ok := strings.CutPrefix(c, name); ok && rest != "" && (rest[0] == ' ' || rest[0] == '\n' || rest[0] == '<') {
			rest = strings.TrimSpace(rest)
			if strings.HasPrefix(rest, "<<") {
				return c, true // the patch parser unwraps the heredoc
			}
			// apply_patch '*** Begin Patch …' as one quoted argument.
			if len(rest) >= 2 && (rest[0] == '\'' || rest[0] == '"') && rest[len(rest)-1] == rest[0] {
				return rest[1 : len(rest)-1], true
			}
		}
	}
	return "", false
}

// CallHistory is the history a tool call and its output add.
func CallHistory(call model.ToolCall, output string) []model.Entry {
	return []model.Entry{
		{Kind: model.EntryToolCall, CallID: call.CallID, Name: call.Name, Arguments: call.Arguments, Custom: call.Custom},
		{Kind: model.EntryToolOutput, CallID: call.CallID, Output: output, Custom: call.Custom},
	}
}
