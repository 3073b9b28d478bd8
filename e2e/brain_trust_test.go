package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestBrainRunTrustConfirmsProposedDecisions (docs/brain.md): a run's task
// thread records a decision with the record_decision tool. Under
// implementation trust auto the task goes on without a human, and the
// task's commit confirms the decision: active, its source kept (model),
// with the run, the task and "run trust implementation=auto" as who
// confirmed it. Under implementation trust manual the decision stays
// proposed after the run and shows in the attention summary, naming it,
// until a human confirms it.
func TestBrainRunTrustConfirmsProposedDecisions(t *testing.T) {
	t.Parallel()
	plan := func(marker string) string {
		return planJSON(t, planTask{ID: "t1", Title: marker + " write the file", Description: "Write " + marker + ".txt.", Kind: "file_create",
			Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f " + marker + ".txt"), Estimate: "1m"})
	}
	recordRule := func(marker, title string) scripted.Rule {
		args, _ := json.Marshal(map[string]any{"title": title, "text": title + ", decided in task t1.", "alternatives": []string{"the other way"}})
		return scripted.Rule{Match: marker + " write the file", Steps: []scripted.Step{
			{Text: "Recording a decision.", ToolCalls: []scripted.ToolCall{{Name: "record_decision", Arguments: string(args)}}},
			{Text: "Writing.", ToolCalls: []scripted.ToolCall{{Command: "echo x > " + marker + ".txt"}}},
			{Text: "The task is complete."},
		}}
	}
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "graph of small tasks: TA", Steps: []scripted.Step{{Text: plan("TA")}}},
		scripted.Rule{Match: "graph of small tasks: TM", Steps: []scripted.Step{{Text: plan("TM")}}},
		recordRule("TA", "Greetings go to stdout"), recordRule("TM", "Greetings are lower case"))
	c := newRunsClient(t, model, faOptions{})

	type decision struct {
		ID, Title, Source, Status, RunID, TaskID, ConfirmedBy string
	}
	find := func(repo, title string) decision {
		t.Helper()
		l := c.call("project/decision/list", map[string]any{"cwd": repo})
		var got struct{ Decisions []decision }
		if err := json.Unmarshal(l.Result, &got); err != nil {
			t.Fatalf("project/decision/list = %s: %v", l.Raw, err)
		}
		for _, d := range got.Decisions {
			if d.Title == title {
				return d
			}
		}
		t.Fatalf("no decision %q: %s", title, l.Raw)
		return decision{}
	}
	newRepo := func() string {
		repo := t.TempDir()
		gitRepo(t, repo, map[string]string{"README.md": "# t\n"})
		git(t, repo, "config", "user.name", "Test User")
		git(t, repo, "config", "user.email", "test@example.com")
		c.call("project/decision/add", map[string]any{"cwd": repo, "title": "Use PostgreSQL", "text": "All data in PostgreSQL."})
		return repo
	}
	attention := func(repo string) string {
		t.Helper()
		st := c.call("fullAuto/status", map[string]any{})
		var got struct {
			Attention struct {
				Items []struct{ Cwd, Reason, Kind string }
			}
		}
		if err := json.Unmarshal(st.Result, &got); err != nil {
			t.Fatalf("fullAuto/status = %s: %v", st.Raw, err)
		}
		for _, it := range got.Attention.Items {
			if it.Cwd == repo && strings.Contains(it.Reason, "proposed decision") {
				return it.Kind + ": " + it.Reason
			}
		}
		return ""
	}

	// Implementation trust auto: the task's commit confirms it.
	auto := newRepo()
	id := c.startRun(map[string]any{"cwd": auto, "request": "TA write a file", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto", "implementation": "auto"}})
	if end := c.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	d := find(auto, "Greetings go to stdout")
	if d.Status != "active" || d.Source != "model" || d.RunID != id || d.TaskID != "t1" || d.ConfirmedBy != "run trust implementation=auto" {
		t.Errorf("under implementation trust auto, the task thread's decision = %+v", d)
	}
	if a := attention(auto); a != "" {
		t.Errorf("a decision the run's trust confirmed is in the attention summary: %s", a)
	}

	// Implementation trust manual: a human approved the task, not the
	// decision; it waits on a human.
	manual := newRepo()
	id = c.startRun(map[string]any{"cwd": manual, "request": "TM write a file", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto", "implementation": "manual"}})
	c.runWaiting(nil, id, "taskApproval")
	c.call("run/task/approve", map[string]any{"runId": id, "taskId": "t1"})
	if end := c.runEnd(id); end.str("run.status") != "completed" {
		t.Fatalf("run/completed = %s", end.Raw)
	}
	d = find(manual, "Greetings are lower case")
	if d.Status != "proposed" || d.Source != "model" || d.RunID != id || d.TaskID != "t1" || d.ConfirmedBy != "" {
		t.Errorf("under implementation trust manual, the task thread's decision = %+v", d)
	}
	if a := attention(manual); !strings.HasPrefix(a, "approval: ") || !strings.Contains(a, d.ID) {
		t.Errorf("the proposed decision is not in the attention summary: %q", a)
	}
	c.call("project/decision/update", map[string]any{"id": d.ID, "status": "active"})
	if d = find(manual, "Greetings are lower case"); d.Status != "active" || d.ConfirmedBy != "user" {
		t.Errorf("confirmed by a human, the decision = %+v", d)
	}
	if a := attention(manual); a != "" {
		t.Errorf("a confirmed decision stays in the attention summary: %s", a)
	}
}
