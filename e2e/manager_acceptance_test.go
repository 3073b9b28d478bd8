package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// The manager's acceptance (issue 25, docs/manager.md): a blueprint of two
// phases, nine tasks in phase 1 as a double dependency diamond with one
// high-risk task, built by the heartbeat of the real binary under
// full_auto with max_parallel_runs 2, with the model scripted; then the
// same with the server killed (SIGKILL) mid-phase and restarted.

const acceptanceSpec = `# Phase 1: Alphabet

## Feature: Letters

The tool MUST write the nine letter files.

# Phase 2: Later

## Feature: Numbers

The tool MAY write numbers.
`

// acceptanceTasks: K1 → K2, K3, K4 → K5 → K6 (high risk), K7 → K8 → K9:
// three tasks could run at once after K1, two after K5.
var acceptanceTasks = []phaseTask{
	{"K1 write k1.txt", nil, "low"},
	{"K2 write k2.txt", []string{"K1 write k1.txt"}, "low"},
	{"K3 write k3.txt", []string{"K1 write k1.txt"}, "low"},
	{"K4 write k4.txt", []string{"K1 write k1.txt"}, "low"},
	{"K5 write k5.txt", []string{"K2 write k2.txt", "K3 write k3.txt", "K4 write k4.txt"}, "low"},
	{"K6 write k6.txt", []string{"K5 write k5.txt"}, "high"},
	{"K7 write k7.txt", []string{"K5 write k5.txt"}, "low"},
	{"K8 write k8.txt", []string{"K6 write k6.txt", "K7 write k7.txt"}, "low"},
	{"K9 write k9.txt", []string{"K8 write k8.txt"}, "low"},
}

// phaseTask is a task of phase 1: task number i (from 1) writes ki.txt.
type phaseTask struct {
	title string
	deps  []string
	risk  string
}

func acceptanceRules(t *testing.T, phase1 []phaseTask) []scripted.Rule {
	t.Helper()
	node := func(kind, heading string) map[string]any {
		return map[string]any{"kind": kind, "heading": heading, "title": heading, "summary": "", "priority": "", "risk": "",
			"estimate": "", "dependsOn": []string{}}
	}
	outline, err := json.Marshal(map[string]any{"nodes": []any{node("phase", "Phase 1: Alphabet"), node("feature", "Feature: Letters"),
		node("phase", "Phase 2: Later"), node("feature", "Feature: Numbers")}, "next": ""})
	if err != nil {
		t.Fatal(err)
	}
	var tasks []any
	for i, k := range phase1 {
		tasks = append(tasks, map[string]any{"title": k.title, "kind": "file_create", "criteria": []string{k.title},
			"checks": []string{fmt.Sprintf("test -f k%d.txt", i+1)}, "files": []string{fmt.Sprintf("k%d.txt", i+1)},
			"dependsOn": append([]string{}, k.deps...), "estimate": "S", "risk": k.risk, "excerpt": "The tool MUST write the nine letter files."})
	}
	rules := []scripted.Rule{
		reviewRule,
		{Match: "[blueprint chunk 1/1 cursor=start]", Steps: []scripted.Step{{Text: string(outline)}}},
	}
	// The tasks in pages of 25 (an answer holds at most 40): page n
	// answers the request after cursor pn.
	for n := 0; n*25 < len(tasks); n++ {
		next, cursor := "", "start"
		if (n+1)*25 < len(tasks) {
			next = fmt.Sprintf("p%d", n+1)
		}
		if n > 0 {
			cursor = fmt.Sprintf("p%d", n)
		}
		tb, err := json.Marshal(map[string]any{"tasks": tasks[n*25 : min((n+1)*25, len(tasks))], "next": next})
		if err != nil {
			t.Fatal(err)
		}
		rules = append(rules, scripted.Rule{Match: "cursor=" + cursor + "]", Steps: []scripted.Step{{Text: string(tb)}}})
	}
	for i, k := range phase1 {
		rules = append(rules, taskRule(k.title, fmt.Sprintf("printf 'letter %d\\n' > k%d.txt", i+1, i+1)))
	}
	return rules
}

// acceptanceProject is a repository (branch feature) with acceptanceSpec
// ingested and phase 1's tasks made, a data dir and a user config whose
// heartbeat is short; it returns them with the blueprint's id.
type acceptanceProject struct {
	repo, dataDir, config, blueprint string
	model                            *scripted.Server
	cli                              func(args ...string) []byte
	features                         []string
	// titles maps phase 1's task ids to their titles.
	titles map[string]string
}

func newAcceptanceProject(t *testing.T) *acceptanceProject {
	t.Helper()
	return newPhaseProject(t, acceptanceTasks, "[manager]\nheartbeat_interval_ms = 100\nheartbeat_max_ms = 400\n")
}

// newPhaseProject is a project whose phase 1 has the tasks phase1, with
// config as the user's configuration.
func newPhaseProject(t *testing.T, phase1 []phaseTask, config string) *acceptanceProject {
	t.Helper()
	p := &acceptanceProject{model: startModel(t, acceptanceRules(t, phase1)...), repo: t.TempDir(), dataDir: t.TempDir(), config: config}
	gitRepo(t, p.repo, map[string]string{"README.md": "# letters\n", "spec.md": acceptanceSpec})
	git(t, p.repo, "config", "user.name", "Test User")
	git(t, p.repo, "config", "user.email", "test@example.com")
	git(t, p.repo, "checkout", "-q", "-b", "feature")
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(p.config), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) []byte {
		t.Helper()
		cmd := exec.Command(binPath, append(append([]string{}, args[:2]...), append([]string{"--data-dir", p.dataDir, "--config", cfg, "--model", "scripted-model"}, args[2:]...)...)...)
		cmd.Dir, cmd.Env = p.repo, serverEnv(t, home, p.model)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("apserver %v: %v\n%s", args, err, out)
		}
		return out
	}
	cli("blueprint", "ingest", "spec.md")
	var features []string
	for _, l := range strings.Split(string(cli("blueprint", "show")), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "feature" {
			for _, w := range f {
				if strings.HasPrefix(w, "n_") {
					features = append(features, w)
				}
			}
		}
	}
	if len(features) != 2 {
		t.Fatalf("features: %v", features)
	}
	out := cli("blueprint", "tasks", features[0])
	if strings.Count(string(out), "\tplanned\t") != len(phase1) {
		t.Fatalf("tasks of %s:\n%s", features[0], out)
	}
	p.titles = map[string]string{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Split(l, "\t"); len(f) > 2 && strings.HasPrefix(f[0], "t_") {
			p.titles[f[0]] = f[1]
		}
	}
	if len(p.titles) != len(phase1) {
		t.Fatalf("task titles %v from:\n%s", p.titles, out)
	}
	p.blueprint = strings.Fields(string(cli("blueprint", "list")))[0]
	p.cli, p.features = cli, features
	return p
}

// server starts apserver over stdio on the project's data dir.
func (p *acceptanceProject) server(t *testing.T) *client {
	t.Helper()
	return newRunsClient(t, p.model, faOptions{dataDir: p.dataDir, config: p.config})
}

// status waits for a project/updated after *after (the heartbeat sends
// one each tick) whose project/status satisfies ok, and returns it.
func (p *acceptanceProject) status(c *client, after **message, ok func(st *message) bool) *message {
	c.t.Helper()
	for {
		*after = c.waitAfter(*after, "project/updated", func(m *message) bool { return m.str("cwd") == p.repo })
		if st := c.call("project/status", map[string]any{"cwd": p.repo}); ok(st) {
			return st
		}
	}
}

// runsOf maps each run to its task from the run/started notifications,
// checking that every run starts once, for one task of the blueprint.
func runsOf(t *testing.T, cs ...*client) map[string]string {
	t.Helper()
	task := map[string]string{}
	for _, c := range cs {
		for _, m := range c.find("run/started", nil) {
			id, ids := m.str("run.id"), m.get("run.blueprint.taskIds")
			l, _ := ids.([]any)
			if len(l) != 1 {
				t.Errorf("run/started %s: want one blueprint task", m.Raw)
				continue
			}
			if prev, ok := task[id]; ok {
				t.Errorf("run %s (task %s) started twice", id, prev)
			}
			task[id] = l[0].(string)
		}
	}
	return task
}

// checkOrder checks, in the order the server sent its notifications,
// that no more than two runs were active at once and that each run started
// after the runs of its task's dependencies completed.
func checkOrder(t *testing.T, c *client, titles map[string]string, runTask map[string]string, doneBefore map[string]bool, activeBefore int) {
	t.Helper()
	deps := map[string][]string{}
	for _, k := range acceptanceTasks {
		deps[k.title] = k.deps
	}
	active, most := activeBefore, activeBefore
	done, ended := map[string]bool{}, map[string]bool{}
	for title := range doneBefore {
		done[title] = true
	}
	for _, m := range c.snapshot() {
		if m.Method == "run/started" {
			active++
			most = max(most, active)
			title := titles[runTask[m.str("run.id")]]
			for _, d := range deps[title] {
				if !done[d] {
					t.Errorf("%s started before its dependency %s was done", title, d)
				}
			}
			continue
		}
		if id, status, ok := runEnd(m); ok && !ended[id] {
			ended[id] = true
			active--
			if status == "completed" {
				done[titles[runTask[id]]] = true
			}
		}
	}
	if most > 2 {
		t.Errorf("%d runs at once, max_parallel_runs is 2", most)
	}
}

// runEnd reports whether m says a run ended: run/updated with a final
// status comes first (the manager, woken by it, may start the next run
// before run/completed is sent), then run/completed.
func runEnd(m *message) (id, status string, ok bool) {
	switch m.Method {
	case "run/completed":
		return m.str("run.id"), m.str("run.status"), true
	case "run/updated":
		switch st := m.str("status"); st {
		case "completed", "failed", "cancelled":
			return m.str("runId"), st, true
		}
	}
	return "", "", false
}

// start says "start building phase 1": full_auto, the blueprint, at most
// two runs at once; the heartbeat does the rest.
func (p *acceptanceProject) start(t *testing.T, c *client) *message {
	t.Helper()
	up := c.call("project/settings/update", map[string]any{"cwd": p.repo, "mode": "full_auto", "blueprintId": p.blueprint, "maxParallelRuns": 2})
	if up.str("settings.mode") != "full_auto" {
		t.Fatalf("project/settings/update = %s", up.Raw)
	}
	return up
}

// approveHighRisk waits for the phase to stop at K6's gate (the manager's
// tick answers waiting_for_approval, attention names the run and task)
// and approves the task.
func (p *acceptanceProject) approveHighRisk(t *testing.T, c *client, after **message) {
	titles := p.titles
	t.Helper()
	st := p.status(c, after, func(st *message) bool { return st.str("lastTick.result") == "waiting_for_approval" })
	if !strings.Contains(st.str("lastTick.reason"), "wait for a human") {
		t.Errorf("the tick at the gate: %s", st.Raw)
	}
	gate := c.waitFor("run/updated", func(m *message) bool {
		return m.str("waitingFor") == "taskApproval" && titles[m.str("currentTaskId")] == "K6 write k6.txt"
	})
	run, task := gate.str("runId"), gate.str("currentTaskId")
	c.waitFor("attention", func(m *message) bool {
		for _, it := range m.get("items").([]any) {
			if it := it.(map[string]any); it["runId"] == run && it["taskId"] == task {
				return true
			}
		}
		return false
	})
	// Nothing after K6 started while it waits.
	for _, m := range c.find("run/started", nil) {
		if l, _ := m.get("run.blueprint.taskIds").([]any); len(l) == 1 && strings.HasPrefix(titles[l[0].(string)], "K8") {
			t.Errorf("K8 started before K6 was approved")
		}
	}
	c.call("run/task/approve", map[string]any{"runId": run, "taskId": task})
}

// finish waits for phase 1 to be done on c, then checks the project from
// the outside: nine runs, one per task, all completed (no task ran twice,
// no run was started twice); one commit per task on the branch; every
// task done, phase 2 untouched. It returns the branch's tree (outside
// .apserver/) and its commit subjects, sorted (runs in parallel may land
// in either order).
func (p *acceptanceProject) finish(t *testing.T, c *client, after **message) (tree string, subjects []string) {
	t.Helper()
	st := p.status(c, after, func(st *message) bool { return st.get("phaseDone") == true })
	if st.get("tasks.done") != 9.0 || st.get("runs.completed") != 9.0 {
		t.Errorf("project/status at the end: %s", st.Raw)
	}
	runs := c.call("run/list", map[string]any{"cwd": p.repo}).get("runs").([]any)
	perTask := map[string]int{}
	for _, r := range runs {
		r := r.(map[string]any)
		bp, _ := r["blueprint"].(map[string]any)
		ids, _ := bp["taskIds"].([]any)
		if len(ids) != 1 || r["status"] != "completed" {
			t.Errorf("run %v: status %v, tasks %v", r["id"], r["status"], ids)
			continue
		}
		perTask[ids[0].(string)]++
	}
	if len(runs) != 9 || len(perTask) != 9 {
		t.Errorf("%d runs for %d tasks, want 9 for 9: %v", len(runs), len(perTask), perTask)
	}
	for id, n := range perTask {
		if n != 1 {
			t.Errorf("task %s (%s) ran %d times", id, p.titles[id], n)
		}
	}
	if err := c.close(); err != nil {
		t.Errorf("apserver exit: %v", err)
	}
	if out := string(p.cli("blueprint", "tasks", p.features[0])); strings.Count(out, "\tdone\t") != 9 {
		t.Errorf("phase 1's tasks:\n%s", out)
	}
	// Phase 2 has no tasks: nothing made them, nothing ran them.
	if out := string(p.cli("blueprint", "show")); !strings.Contains(out, "Numbers") || strings.Count(out, "9 tasks") > 1 {
		t.Errorf("blueprint after phase 1:\n%s", out)
	}
	for _, r := range c.find("run/started", nil) {
		if l, _ := r.get("run.blueprint.taskIds").([]any); len(l) != 1 || p.titles[l[0].(string)] == "" {
			t.Errorf("a run of no phase 1 task: %s", r.Raw)
		}
	}
	for _, k := range acceptanceTasks {
		if n := len(strings.Fields(gitOut(t, p.repo, "log", "feature", "--format=%H", "--fixed-strings", "--grep", k.title))); n != 1 {
			t.Errorf("%d commits of %q on the branch, want 1", n, k.title)
		}
	}
	// Subjects: the tasks' commits, the runs' merges (their random ids
	// masked) and the first commit; a run's "bring in" merge of a base
	// that moved while it worked depends on timing, not on the build.
	runID := regexp.MustCompile(`^apserver run [0-9a-f]+: `)
	for _, s := range strings.Split(gitOut(t, p.repo, "log", "feature", "--format=%s"), "\n") {
		if s = runID.ReplaceAllString(s, "apserver run RUN: "); s != "apserver run RUN: bring in feature" {
			subjects = append(subjects, s)
		}
	}
	slices.Sort(subjects)
	// The tree as the tasks made it: .apserver/ holds each run's report,
	// named by its random id and stamped with times, so it differs
	// between any two builds; the project's files must not.
	var files []string
	for _, l := range strings.Split(gitOut(t, p.repo, "ls-tree", "-r", "feature"), "\n") {
		if _, path, _ := strings.Cut(l, "\t"); !strings.HasPrefix(path, ".apserver/") {
			files = append(files, l)
		}
	}
	return strings.Join(files, "\n"), subjects
}

// TestManagerAcceptance: "start building phase 1" under full_auto with
// max_parallel_runs 2: the heartbeat starts the runs in dependency order,
// never more than two at once, stops at the high-risk task K6 for
// approval, and after the approval finishes phase 1 with every task done
// and committed once, phase 2 untouched. Then the same with the server
// killed (SIGKILL) while K5's task is being implemented and restarted: the
// heartbeat takes up, no task runs twice, no run starts twice, and the
// branch ends with the same tree and commits as without the kill.
func TestManagerAcceptance(t *testing.T) {
	t.Parallel()
	type result struct {
		tree     string
		subjects []string
	}
	var plain, killed result
	t.Run("build", func(t *testing.T) {
		t.Run("plain", func(t *testing.T) {
			t.Parallel()
			p := newAcceptanceProject(t)
			c := p.server(t)
			after := p.start(t, c)
			p.approveHighRisk(t, c, &after)
			runTask := runsOf(t, c)
			plain.tree, plain.subjects = p.finish(t, c, &after)
			checkOrder(t, c, p.titles, runTask, nil, 0)
		})
		t.Run("kill", func(t *testing.T) {
			t.Parallel()
			p := newAcceptanceProject(t)
			c1 := p.server(t)
			p.start(t, c1)
			// The kill: K5's task thread is at work (K1 to K4 are done).
			c1.waitFor("run/task/updated", func(m *message) bool {
				return m.str("task.title") == "K5 write k5.txt" && m.str("task.threadId") != ""
			})
			c1.kill()
			before := runsOf(t, c1)
			done, active := map[string]bool{}, map[string]bool{}
			for _, m := range c1.snapshot() {
				if m.Method == "run/started" {
					active[m.str("run.id")] = true
				} else if id, status, ok := runEnd(m); ok {
					delete(active, id)
					if status == "completed" {
						done[p.titles[before[id]]] = true
					}
				}
			}
			if !done["K4 write k4.txt"] || !done["K3 write k3.txt"] || !done["K2 write k2.txt"] || done["K5 write k5.txt"] {
				t.Fatalf("at the kill, done: %v", done)
			}
			c2 := p.server(t)
			after := c2.waitFor("project/updated", func(m *message) bool { return m.str("cwd") == p.repo })
			p.approveHighRisk(t, c2, &after)
			runTask := runsOf(t, c2)
			for id := range runTask {
				if _, ok := before[id]; ok {
					t.Errorf("run %s (%s) started again after the restart", id, p.titles[runTask[id]])
				}
			}
			killed.tree, killed.subjects = p.finish(t, c2, &after)
			for id, task := range before {
				runTask[id] = task
			}
			checkOrder(t, c1, p.titles, runTask, nil, 0)
			checkOrder(t, c2, p.titles, runTask, done, len(active))
		})
	})
	if t.Failed() {
		return
	}
	if plain.tree != killed.tree || !slices.Equal(plain.subjects, killed.subjects) || !strings.Contains(plain.tree, "k9.txt") {
		t.Errorf("with the kill the branch differs: tree %s vs %s\n%q\n%q", killed.tree, plain.tree, killed.subjects, plain.subjects)
	}
}
