package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// Intent from chat (docs/manager.md#intent-from-chat): the real binary, the
// classifier, planner, implementers and reviewers scripted at the HTTP
// level. The classifier's prompt ends with "Classify the intent of this
// message:\n" and the message, which the thread's own requests never hold.

func classifierRule(message, answer string) scripted.Rule {
	return scripted.Rule{Match: "Classify the intent of this message:\n" + message, Steps: []scripted.Step{{Text: answer}}}
}

// TestIntentFromChat: in a project thread, while the mode is off, no
// message is classified; under full_auto "start building phase 1" starts a
// run for phase 1's first task and the thread gets the manager's message
// (the model is not asked to answer it); "pause the autopilot" pauses it
// (project/status shows the pause in attention, the routings in recent);
// a message classified with a low confidence is answered as a question.
func TestIntentFromChat(t *testing.T) {
	t.Parallel()
	rules := append([]scripted.Rule{
		classifierRule("start building phase 1", `{"intent":"START_BUILD","confidence":0.95,"target":"phase 1"}`),
		classifierRule("pause the autopilot", `{"intent":"PAUSE_AUTOPILOT","confidence":0.9,"target":""}`),
		classifierRule("what does greet.sh print", `{"intent":"START_BUILD","confidence":0.3,"target":""}`),
		classifierRule("greet must also wave", `{"intent":"UPDATE_REQUIREMENTS","confidence":0.9,"target":""}`),
		{Match: "what does greet.sh print", Steps: []scripted.Step{{Text: "It prints a greeting."}}},
		{Match: "hello before the project", Steps: []scripted.Step{{Text: "Hello."}}},
		{Match: "[blueprint chunk 1/1 cursor=start]", Steps: []scripted.Step{{Text: managerOutline(t)}}},
		{Match: "[blueprint tasks n_", Steps: []scripted.Step{{Text: managerTasks(t)}}},
	}, shoutRules(t)...)
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "spec.md"), []byte(managerSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	home, dataDir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, nil, 0o600)
	cli := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binPath, append(append([]string{}, args[:2]...), append([]string{"--data-dir", dataDir, "--config", cfg, "--model", "scripted-model"}, args[2:]...)...)...)
		cmd.Dir = repo
		cmd.Env = serverEnv(t, home, model)
		return cmd
	}
	if out, err := cli("blueprint", "ingest", "spec.md").CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	out, err := cli("blueprint", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var feature string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "feature" && feature == "" {
			for _, w := range f {
				if strings.HasPrefix(w, "n_") {
					feature = w
				}
			}
		}
	}
	if out, err := cli("blueprint", "tasks", feature).CombinedOutput(); err != nil || strings.Count(string(out), "\tplanned\t") != 3 {
		t.Fatalf("tasks of %s: %v\n%s", feature, err, out)
	}

	c := newRunsClient(t, model, faOptions{dataDir: dataDir})
	classified := func() int {
		n := 0
		for _, r := range modelRequests(model) {
			if strings.Contains(r.LastUserText, "Classify the intent of this message:") {
				n++
			}
		}
		return n
	}
	thread := c.startThreadIn(repo, "")
	_, done := c.runTurn(thread, "hello before the project")
	if done.str("turn.status") != "completed" || classified() != 0 {
		t.Fatalf("mode off: turn %s, %d classification requests (want 0)", done.Raw, classified())
	}

	bp := c.call("blueprint/list", map[string]any{"cwd": repo}).str("data.0.id")
	if up := c.call("project/settings/update", map[string]any{"cwd": repo, "mode": "full_auto", "blueprintId": bp, "maxParallelRuns": 2}); up.str("settings.mode") != "full_auto" {
		t.Fatalf("project/settings/update = %s", up.Raw)
	}

	_, turn := c.startTurn(thread, "start building phase 1")
	done = c.turnDone(turn)
	msg := c.waitFor("item/completed", func(m *message) bool { return m.str("turnId") == turn && m.str("item.type") == "agentMessage" })
	text := msg.str("item.text")
	if done.str("turn.status") != "completed" || !strings.Contains(text, `set the active phase to "Phase 1: Greeting"`) || !strings.Contains(text, "started run ") {
		t.Fatalf("the manager's message: %q (turn %s)", text, done.Raw)
	}
	for _, r := range modelRequests(model) {
		if r.LastUserText == "start building phase 1" {
			t.Errorf("the model was asked to answer a START_BUILD the manager acted on")
		}
	}
	runs := c.call("run/list", map[string]any{"cwd": repo})
	if runs.str("runs.0.blueprint.blueprintId") != bp || !strings.Contains(text, "run "+runs.str("runs.0.id")) {
		t.Fatalf("run/list = %s; message %q", runs.Raw, text)
	}
	tasks, err := cli("blueprint", "tasks", feature).CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	s1 := ""
	for _, l := range strings.Split(string(tasks), "\n") {
		if strings.Contains(l, "S1 make greet.sh") {
			s1 = strings.Fields(l)[0]
		}
	}
	if got := runs.get("runs.0.blueprint.taskIds.0"); got != s1 || s1 == "" {
		t.Errorf("the run carries %v, want phase 1's first task S1 (%s)\n%s", got, s1, tasks)
	}

	pauseStart, turn := c.startTurn(thread, "pause the autopilot")
	c.turnDone(turn)
	c.waitAfter(pauseStart, "project/updated", func(m *message) bool { return m.str("cwd") == repo })
	msg = c.waitFor("item/completed", func(m *message) bool { return m.str("turnId") == turn && m.str("item.type") == "agentMessage" })
	if !strings.Contains(msg.str("item.text"), "paused the autopilot") {
		t.Errorf("pause: %q", msg.str("item.text"))
	}
	st := c.call("project/status", map[string]any{"cwd": repo})
	// (the run's own wait, its plan's approval, may be listed before it)
	pausedItem := st.str("attention.0.kind") == "paused" || st.str("attention.1.kind") == "paused"
	// The newest event is the pause, or a tick after it that the pause
	// kept idle (the run's progress may start one at any moment).
	latest := 0
	for st.str(fmt.Sprintf("recent.%d.kind", latest)) == "tick" && st.str(fmt.Sprintf("recent.%d.result", latest)) == "idle" &&
		st.str(fmt.Sprintf("recent.%d.reason", latest)) == "the autopilot is paused" {
		latest++
	}
	if st.get("paused") != true || !pausedItem || st.str(fmt.Sprintf("recent.%d.kind", latest)) != "intent" ||
		st.str(fmt.Sprintf("recent.%d.intent", latest)) != "PAUSE_AUTOPILOT" {
		t.Errorf("project/status = %s", st.Raw)
	}
	c.waitFor("attention", func(m *message) bool {
		return strings.Contains(m.Raw, `"kind":"paused"`) && strings.Contains(m.Raw, "the autopilot of project")
	})
	if m := c.call("manager/tick", map[string]any{"cwd": repo}); m.str("result") != "idle" {
		t.Errorf("tick after the pause = %s", m.Raw)
	}

	_, turn = c.startTurn(thread, "what does greet.sh print")
	done = c.turnDone(turn)
	var texts []string
	for _, m := range c.find("item/completed", func(m *message) bool { return m.str("turnId") == turn && m.str("item.type") == "agentMessage" }) {
		texts = append(texts, m.str("item.text"))
	}
	if len(texts) != 2 || !strings.Contains(texts[0], "below 0.6: answered as a question") || texts[1] != "It prints a greeting." {
		t.Errorf("low confidence: agent messages %q, want the manager's note then the model's answer", texts)
	}
	// A requirements update waits for the user's confirmation, asked in
	// the thread; confirmed, the blueprint is ingested again.
	_, turn = c.startTurn(thread, "greet must also wave")
	ask := c.waitFor("item/tool/requestUserInput", func(m *message) bool { return m.str("turnId") == turn })
	if !strings.Contains(ask.str("questions.0.question"), `"Requirements update"`) || ask.str("questions.0.options.0.label") != "Apply" {
		t.Fatalf("confirmation: %s", ask.Raw)
	}
	if n := len(c.call("blueprint/list", map[string]any{"cwd": repo}).get("data").([]any)); n != 1 {
		t.Fatalf("%d blueprints", n)
	}
	c.answer(ask, map[string]any{"answers": map[string]any{"confirm": map[string]any{"answers": []string{"Apply"}}}})
	c.turnDone(turn)
	texts = nil
	for _, m := range c.find("item/completed", func(m *message) bool { return m.str("turnId") == turn && m.str("item.type") == "agentMessage" }) {
		texts = append(texts, m.str("item.text"))
	}
	if len(texts) != 2 || !strings.Contains(texts[1], "is ingesting version ") {
		t.Errorf("requirements update: agent messages %q", texts)
	}
	c.waitFor("blueprint/progress", func(m *message) bool { return m.str("blueprintId") == bp && m.str("status") == "ready" })
	if v := c.call("blueprint/list", map[string]any{"cwd": repo}).get("data.0.primary.number"); v != 2.0 {
		t.Errorf("the blueprint's primary version is %v, want 2", v)
	}

	ex := c.call("manager/explain", map[string]any{"cwd": repo})
	if ex.str("intents.1.intent") != "UPDATE_REQUIREMENTS" || ex.str("intents.2.intent") != "QUESTION" || ex.str("intents.4.intent") != "START_BUILD" {
		t.Errorf("manager/explain = %s", ex.Raw)
	}
	if out, err := cli("project", "replay").CombinedOutput(); err != nil || !strings.Contains(string(out), " 0 differ") {
		t.Errorf("replay: %v\n%s", err, out)
	}
}
