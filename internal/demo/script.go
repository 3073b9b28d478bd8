package demo

import (
	"os"
	"path/filepath"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// The prompts the demo sends, one per turn.
const (
	promptHello = "hello"
	promptTests = "run the tests"
	promptShout = "add a shout function that greets in capitals"
)

// shoutPatch is the change the model proposes in the third turn: a new
// function and its test, in Codex's apply_patch format.
const shoutPatch = `*** Begin Patch
*** Update File: greet.sh
@@
 greet() {
 	echo "Hello, ${1:-world}!"
 }
+
+# shout greets like greet, in capitals.
+shout() {
+	greet "$@" | tr '[:lower:]' '[:upper:]'
+}
*** Update File: test.sh
@@
 check "defaults to world" "$(greet)" "Hello, world!"
+check "shouts" "$(shout Ada)" "HELLO, ADA!"
*** End Patch
`

// plan is an update_plan call of the third turn: at first the edit is in
// progress, at the end (last "completed") every step is done.
func plan(last string) string {
	first := "in_progress"
	if last == "completed" {
		first = "completed"
	}
	return `{"plan":[{"step":"Add shout to greet.sh and a test in test.sh","status":"` + first + `"},` +
		`{"step":"Run the tests","status":"` + last + `"}]}`
}

// testCommand is the command the model asks to run in the second turn.
const testCommand = "sh test.sh"

// demoDelta paces the scripted stream so that it is visibly live but the
// whole demo still takes only a few seconds.
const demoDelta = 12 * time.Millisecond

// demoScript is what the scripted model answers. The model keeps no state:
// the last user message picks the rule and the number of tool-output rounds
// since it picks the step (see model/scripted).
func demoScript() scripted.Script {
	greeting := []scripted.Step{{
		Reasoning: []string{"The user is saying hello. Greet them, say what this workspace holds, and suggest running its tests."},
		Text: "Hello! I'm the scripted demo model: no network, no API key, every word is canned. " +
			"This workspace is a tiny shell project, greet.sh with two tests in test.sh. " +
			"Ask me to run the tests and watch a command go through approval.",
		InterDelta: demoDelta,
	}}
	tests := []scripted.Step{
		{
			Reasoning:  []string{"AGENTS.md says the suite runs with `sh test.sh`. Under the untrusted policy the server will ask before running it."},
			Text:       "Running the test suite with `sh test.sh`.",
			ToolCalls:  []scripted.ToolCall{{Command: testCommand}},
			InterDelta: demoDelta,
		},
		{
			Text:       "Both tests pass: greet uses the name it is given and falls back to \"world\" without one. Nothing to fix.",
			InterDelta: demoDelta,
		},
	}
	shout := []scripted.Step{
		{
			Reasoning:  []string{"A new function plus a test for it. Plan, patch both files in one go, then run the suite as AGENTS.md asks."},
			Text:       "Here is the plan.",
			ToolCalls:  []scripted.ToolCall{{Name: "update_plan", Arguments: plan("pending")}},
			InterDelta: demoDelta,
		},
		{
			Text:       "The change, as one patch:",
			ToolCalls:  []scripted.ToolCall{{Name: "apply_patch", Input: shoutPatch}},
			InterDelta: demoDelta,
		},
		{
			Text:       "Patched. Running the tests.",
			ToolCalls:  []scripted.ToolCall{{Command: testCommand}},
			InterDelta: demoDelta,
		},
		{
			ToolCalls: []scripted.ToolCall{{Name: "update_plan", Arguments: plan("completed")}},
		},
		{
			Text:       "Done: `shout` greets in capitals, and all 3 tests pass.",
			InterDelta: demoDelta,
		},
	}
	return scripted.Script{
		Rules: []scripted.Rule{
			{Match: "shout", Steps: shout},
			{Match: "test", Steps: tests},
			{Match: "hello", Steps: greeting},
		},
		Default: []scripted.Step{{
			Text:       "This is the offline demo, so my answers are scripted. Try \"hello\" or \"run the tests\".",
			InterDelta: demoDelta,
		}},
	}
}

// workspaceFiles is the demo project: a shell function, its tests, and the
// notes an agent reads first.
var workspaceFiles = []struct{ name, body string }{
	{"AGENTS.md", "Run the tests with `sh test.sh` before saying a change is done.\n"},
	{"README.md", "# greet\n\nA one-function shell library, here so that `apserver demo` has a project to work on.\n\n    . ./greet.sh && greet Ada\n"},
	{"greet.sh", "# greet prints a greeting for $1, or for the world when no name is given.\ngreet() {\n\techo \"Hello, ${1:-world}!\"\n}\n"},
	{"test.sh", `# Tests for greet.sh; run with: sh test.sh
. ./greet.sh
pass=0
fail=0
check() {
	if [ "$2" = "$3" ]; then
		echo "ok    $1"
		pass=$((pass + 1))
	else
		echo "FAIL  $1: got '$2', want '$3'"
		fail=$((fail + 1))
	fi
}
check "greets by name" "$(greet Ada)" "Hello, Ada!"
check "defaults to world" "$(greet)" "Hello, world!"
if [ "$fail" -eq 0 ]; then
	echo "all $pass tests passed"
else
	echo "$fail of $((pass + fail)) tests FAILED"
	exit 1
fi
`},
}

// writeWorkspace lays out the demo project in dir and returns the file names.
func writeWorkspace(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var names []string
	for _, f := range workspaceFiles {
		if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.body), 0o644); err != nil {
			return nil, err
		}
		names = append(names, f.name)
	}
	return names, nil
}
