package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestBrainRunsMergeAndRecordDecisions (docs/brain.md): in a repository
// whose base branch is the user's checkout and whose project keeps
// decisions, two runs in a row, with a decision recorded between them,
// both merge cleanly: the brain owns .apserver/memory.md (written in the
// checkout, never committed by a run), and each run's section lands in
// it. The first run's planner states a decision: it is recorded as
// proposed with the run's id, and the plan's approval makes it active. Its
// first answer also has a decision without a title: the planner is asked
// again, told which field, and the entry never reaches the decisions.
func TestBrainRunsMergeAndRecordDecisions(t *testing.T) {
	t.Parallel()
	plan := func(marker, file string, decisions []map[string]any) string {
		b, err := json.Marshal(map[string]any{"summary": "the plan", "clarification": nil, "decisions": decisions,
			"tasks": []planTask{{ID: "t1", Title: marker + "-task write " + file, Description: "Write " + file + ".", Kind: "file_create",
				Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f " + file), Estimate: "1m"}}})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	stated := []map[string]any{{"title": "Scripts are POSIX sh", "text": "Every script runs under /bin/sh; no bashisms.", "why": "the CI image has no bash",
		"alternatives": []string{"bash"}, "files": []string{"*.sh"}, "tags": []string{"shell"}},
		{"title": "", "text": "a decision without a title is left out"}}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Your plan is not valid", Steps: []scripted.Step{{Text: plan("B1", "b1.txt", stated[:1])}}},
		scripted.Rule{Match: "graph of small tasks: B1", Steps: []scripted.Step{{Text: plan("B1", "b1.txt", stated)}}},
		scripted.Rule{Match: "graph of small tasks: B2", Steps: []scripted.Step{{Text: plan("B2", "b2.txt", nil)}}},
		taskRule("B1-task", "echo B1 > b1.txt"), taskRule("B2-task", "echo B2 > b2.txt"))
	repo := t.TempDir()
	gitRepo(t, repo, map[string]string{"README.md": "# b\n"})
	git(t, repo, "config", "user.name", "Test User")
	git(t, repo, "config", "user.email", "test@example.com")
	c := newRunsClient(t, model, faOptions{})
	c.call("project/decision/add", map[string]any{"cwd": repo, "title": "Use PostgreSQL", "text": "All data in PostgreSQL."})

	var ids []string
	for i, p := range []string{"B1", "B2"} {
		id := c.startRun(map[string]any{"cwd": repo, "request": p + " write a file", "baseBranch": "main"})
		ids = append(ids, id)
		c.runWaiting(nil, id, "planApproval")
		if i == 0 {
			l := c.call("project/decision/list", map[string]any{"cwd": repo})
			if !strings.Contains(string(l.Raw), `"title":"Scripts are POSIX sh"`) || !strings.Contains(string(l.Raw), `"status":"proposed"`) ||
				!strings.Contains(string(l.Raw), `"runId":"`+id+`"`) || strings.Contains(string(l.Raw), "left out") {
				t.Errorf("before the plan's approval, project/decision/list = %s", l.Raw)
			}
		}
		c.call("run/plan/approve", map[string]any{"runId": id})
		end := c.runEnd(id)
		if end.str("run.status") != "completed" || end.str("run.mergeCommit") == "" {
			t.Fatalf("run %s did not merge: %s", p, end.Raw)
		}
		if i == 0 {
			c.call("project/decision/add", map[string]any{"cwd": repo, "title": "Logs are JSON lines", "text": "Every log line is one JSON object."})
		}
	}
	l := c.call("project/decision/list", map[string]any{"cwd": repo})
	if !strings.Contains(string(l.Raw), `"title":"Scripts are POSIX sh"`) || strings.Contains(string(l.Raw), `"status":"proposed"`) ||
		!strings.Contains(string(l.Raw), `"source":"planner"`) {
		t.Errorf("after the runs, project/decision/list = %s", l.Raw)
	}
	var told []string
	for _, req := range modelRequests(model) {
		if strings.Contains(req.LastUserText, "Your plan is not valid") {
			told = append(told, req.LastUserText)
		}
	}
	if len(told) != 1 || !strings.Contains(told[0], "decisions[1].title: empty") {
		t.Errorf("the planner was asked again %d times (%q), want once, naming decisions[1].title", len(told), told)
	}
	for _, f := range []string{"b1.txt", "b2.txt"} {
		if _, err := os.Stat(filepath.Join(repo, f)); err != nil {
			t.Errorf("the user's checkout lacks %s: %v", f, err)
		}
	}
	if tracked := gitOut(t, repo, "ls-files", ".apserver/memory.md"); tracked != "" {
		t.Errorf("a run committed memory.md")
	}
	mem, _ := os.ReadFile(filepath.Join(repo, ".apserver", "memory.md"))
	for _, want := range []string{"Use PostgreSQL", "Logs are JSON lines", "Scripts are POSIX sh", "## Run " + ids[0], "## Run " + ids[1]} {
		if !strings.Contains(string(mem), want) {
			t.Errorf("memory.md lacks %q:\n%s", want, mem)
		}
	}
}

// TestBrainRunRecordsClarificationAndRepair (docs/brain.md): a run's
// answered clarification and its approved repair become active decisions
// of the project, with sources clarification and repair and the run's id.
func TestBrainRunRecordsClarificationAndRepair(t *testing.T) {
	t.Parallel()
	tasks := []planTask{{ID: "t1", Title: "Q1 create the flag file", Description: "Create flag.txt.", Kind: "file_create",
		Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f flag.txt"), Estimate: "1m"}}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "The user answered: flag.txt", Steps: []scripted.Step{{Text: planJSON(t, tasks...)}}},
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: clarificationJSON("which file holds the flag?")}}},
		taskRule("Fix: Q1", "echo on > flag.txt"),
		taskRule("Q1 create", "echo wrong > flag.text"))
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})
	id := c.startRun(map[string]any{"cwd": repo, "request": "create the flag", "baseBranch": "main", "trust": map[string]any{"planning": "auto"}})
	q := c.waitFor("run/clarification/requested", func(m *message) bool { return m.str("runId") == id })
	c.call("run/clarification/answer", map[string]any{"runId": id, "clarificationId": q.str("clarification.id"), "answer": "flag.txt"})
	c.runWaiting(nil, id, "repair")
	c.call("run/repair/approve", map[string]any{"runId": id, "taskId": "t1"})
	if end := c.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	l := c.call("project/decision/list", map[string]any{"cwd": repo})
	var got struct {
		Decisions []struct {
			Title, Text, Source, Status, RunID string
		}
	}
	if err := json.Unmarshal(l.Result, &got); err != nil {
		t.Fatalf("project/decision/list = %s: %v", l.Raw, err)
	}
	bySource := map[string]string{}
	for _, d := range got.Decisions {
		if d.Status == "active" && d.RunID == id {
			bySource[d.Source] = d.Title + ": " + d.Text
		}
	}
	if !strings.Contains(bySource["clarification"], "which file holds the flag?: flag.txt") || !strings.Contains(bySource["repair"], "Repair:") {
		t.Errorf("decisions of the run by source = %v; project/decision/list = %s", bySource, l.Raw)
	}
}
