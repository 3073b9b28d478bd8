package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// Runs from a blueprint (docs/runs.md, docs/blueprints.md): the real
// binary, the planner, implementer and validator scripted at the HTTP
// level, every message checked against the schema.

// shoutSpec is a specification with one feature, two normative sentences.
const shoutSpec = `# Phase 1: Greeting

## Epic: Command line

### Feature: Shout

The tool MUST accept --shout and greet in capitals.

A test script for both modes is required.
`

// shoutOutline is the planner's outline of shoutSpec (one chunk).
func shoutOutline(t *testing.T) string {
	t.Helper()
	node := func(kind, heading string) map[string]any {
		return map[string]any{"kind": kind, "heading": heading, "title": heading, "summary": "", "priority": "", "risk": "",
			"estimate": "", "dependsOn": []string{}}
	}
	b, err := json.Marshal(map[string]any{"nodes": []any{node("phase", "Phase 1: Greeting"), node("epic", "Epic: Command line"),
		node("feature", "Feature: Shout")}, "next": ""})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// shoutFeatureTasks is the planner's page of the feature's tasks: S2
// depends on S1 by title.
func shoutFeatureTasks(t *testing.T) string {
	t.Helper()
	task := func(title, check, excerpt string, deps ...string) map[string]any {
		return map[string]any{"title": title, "kind": "file_edit", "criteria": []string{title}, "checks": []string{check},
			"files": []string{}, "dependsOn": append([]string{}, deps...), "estimate": "S", "risk": "low", "excerpt": excerpt}
	}
	b, err := json.Marshal(map[string]any{"tasks": []any{
		task("S1 make greet.sh accept --shout", "sh greet.sh --shout bob | grep -q 'HELLO, BOB'", "The tool MUST accept --shout and greet in capitals."),
		task("S2 add test_greet.sh", "sh test_greet.sh", "A test script for both modes is required.", "S1 make greet.sh accept --shout"),
	}, "next": ""})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestBlueprintRunEvidence is the acceptance of runs from a blueprint: the
// tasks of a feature node have their dependency resolved; a run started
// from the node (no request, no cwd: the blueprint's) proposes them as its
// plan, waits for approval, and completes with the scripted model; each
// task becomes done with its commit on the run's branch, the node turns
// done; blueprint/verify after a commit that breaks one task's check
// reopens exactly that task.
func TestBlueprintRunEvidence(t *testing.T) {
	t.Parallel()
	rules := shoutRules(t)
	model := startModel(t, append([]scripted.Rule{{Match: "[blueprint chunk 1/1 cursor=start]", Steps: []scripted.Step{{Text: shoutOutline(t)}}}},
		rules...)...)
	repo := shoutRepo(t)
	c := newRunsClient(t, model, faOptions{})

	res := c.call("blueprint/ingest", map[string]any{"cwd": repo, "text": shoutSpec, "title": "Greeting"})
	bpID := res.str("blueprint.id")
	c.waitFor("blueprint/progress", func(m *message) bool { return m.str("blueprintId") == bpID && m.str("status") == "ready" })
	rd := c.call("blueprint/read", map[string]any{"blueprintId": bpID})
	var featureID, phaseID string
	nodes, _ := rd.get("nodes").([]any)
	for i := range nodes {
		p := "nodes." + strconv.Itoa(i) + "."
		switch rd.str(p + "kind") {
		case "feature":
			featureID = rd.str(p + "id")
		case "phase":
			phaseID = rd.str(p + "id")
		}
	}
	if featureID == "" || phaseID == "" {
		t.Fatalf("blueprint/read: %s", rd.Raw)
	}
	model.SetScript(scripted.Script{Rules: append([]scripted.Rule{{Match: "[blueprint tasks " + featureID + " cursor=start]",
		Steps: []scripted.Step{{Text: shoutFeatureTasks(t)}}}}, rules...)})
	tr := c.call("blueprint/node/tasks", map[string]any{"blueprintId": bpID, "nodeId": featureID})
	s1, s2 := tr.str("tasks.0.id"), tr.str("tasks.1.id")
	if s1 == "" || s2 == "" || tr.str("tasks.1.dependsOn.0") != s1 || tr.get("tasks.1.unresolved") != nil {
		t.Fatalf("node/tasks: the dependency of S2 on S1 is not resolved: %s", tr.Raw)
	}

	// Bad input: named, nothing started.
	c.callErr("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": bpID, "nodeId": "n_nope"}}, -32602, "blueprint.nodeId: unknown node n_nope")
	c.callErr("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": bpID, "nodeId": featureID, "taskIds": []string{s1}}}, -32602, "nodeId or taskIds, not both")
	c.callErr("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": bpID, "taskIds": []string{s2}}}, -32602,
		"depends on task "+s1+" (S1 make greet.sh accept --shout), which is neither done nor in this run")
	c.callErr("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": "bp_nope", "nodeId": featureID}}, -32602, "blueprint.blueprintId: unknown blueprint bp_nope")

	// The run from the node: the plan is the blueprint's tasks, waiting
	// for approval (planning trust manual, the default).
	start := c.call("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": bpID, "nodeId": featureID}, "baseBranch": "main"})
	id, branch := start.str("run.id"), start.str("run.branch")
	if id == "" || start.str("run.cwd") != repo || start.str("run.blueprint.nodeId") != featureID || start.str("run.blueprint.taskIds.1") != s2 ||
		!strings.Contains(start.str("run.request"), "Shout") {
		t.Fatalf("run/start = %s", start.Raw)
	}
	plan := c.waitFor("run/plan/updated", func(m *message) bool { return m.str("runId") == id })
	if plan.str("plan.tasks.0.id") != s1 || plan.str("plan.tasks.1.id") != s2 || plan.str("plan.tasks.1.dependencies.0") != s1 ||
		plan.str("plan.tasks.0.acceptance.checks.0") != "sh greet.sh --shout bob | grep -q 'HELLO, BOB'" ||
		!strings.Contains(plan.str("plan.tasks.0.description"), "The tool MUST accept --shout") {
		t.Fatalf("the run's plan is not the blueprint's tasks: %s", plan.Raw)
	}
	c.runWaiting(plan, id, "planApproval")
	for _, r := range modelRequests(model) {
		if strings.Contains(r.LastUserText, "Plan this request") {
			t.Fatalf("the planner thread was asked to plan a run whose plan is the blueprint's tasks")
		}
	}
	c.call("run/plan/approve", map[string]any{"runId": id})
	end := c.runEnd(id)
	if end.str("run.status") != "completed" {
		t.Fatalf("run ended: %s", end.Raw)
	}
	commits := map[string]string{}
	for i := range 2 {
		p := "run.plan.tasks." + strconv.Itoa(i) + "."
		commits[end.str(p+"id")] = end.str(p + "commit")
	}

	// While the run worked on S1, S1 and the feature were in progress.
	inProgress := c.waitFor("blueprint/updated", func(m *message) bool { return m.str("node.id") == s1 && m.str("node.status") == "in_progress" })
	c.waitAfter(inProgress, "blueprint/updated", func(m *message) bool { return m.str("node.id") == s1 && m.str("node.status") == "done" })
	c.waitFor("blueprint/updated", func(m *message) bool { return m.str("node.id") == featureID && m.str("node.status") == "in_progress" })

	// Status from evidence: done with the commit, on the run's branch; the
	// feature and everything above it done.
	c.waitFor("blueprint/updated", func(m *message) bool { return m.str("node.id") == phaseID && m.str("node.status") == "done" })
	tr = c.call("blueprint/node/tasks", map[string]any{"blueprintId": bpID, "nodeId": featureID})
	for i, want := range []string{s1, s2} {
		p := "tasks." + strconv.Itoa(i) + "."
		sha := tr.str(p + "evidence.commit")
		if tr.str(p+"id") != want || tr.str(p+"status") != "done" || sha == "" || sha != commits[want] ||
			tr.str(p+"evidence.runId") != id || tr.str(p+"evidence.branch") != branch {
			t.Fatalf("task %s after the run: %s (run's commits %v)", want, tr.Raw, commits)
		}
		git(t, repo, "merge-base", "--is-ancestor", sha, branch)
	}
	fr := c.call("blueprint/read", map[string]any{"blueprintId": bpID, "nodeId": featureID, "depth": 0})
	if fr.str("nodes.0.id") != featureID || fr.str("nodes.0.status") != "done" {
		t.Fatalf("the feature after the run: %s", fr.Raw)
	}
	c.callErr("run/start", map[string]any{"blueprint": map[string]any{"blueprintId": bpID, "nodeId": featureID}}, -32602, "nothing to build")

	// verify on the merged base passes; a commit that breaks S2's check
	// reopens S2 only.
	git(t, repo, "checkout", "-q", "main")
	v := c.call("blueprint/verify", map[string]any{"blueprintId": bpID, "nodeId": featureID})
	if v.get("data.0.passed") != true || v.get("data.1.passed") != true {
		t.Fatalf("verify on the merged base: %s", v.Raw)
	}
	if err := os.WriteFile(filepath.Join(repo, "test_greet.sh"), []byte("exit 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-am", "break the test script")
	v = c.call("blueprint/verify", map[string]any{"blueprintId": bpID, "nodeId": featureID})
	if v.str("data.0.taskId") != s1 || v.get("data.0.reopened") != false || v.str("data.1.taskId") != s2 || v.get("data.1.reopened") != true {
		t.Fatalf("verify after the breaking commit: %s", v.Raw)
	}
	tr = c.call("blueprint/node/tasks", map[string]any{"blueprintId": bpID, "nodeId": featureID})
	if tr.str("tasks.0.status") != "done" || tr.str("tasks.1.status") != "planned" || tr.get("tasks.1.evidence") != nil {
		t.Fatalf("tasks after verify: %s", tr.Raw)
	}
	fr = c.call("blueprint/read", map[string]any{"blueprintId": bpID, "nodeId": featureID, "depth": 0})
	if fr.str("nodes.0.status") != "in_progress" {
		t.Fatalf("the feature after a task reopened: %s", fr.Raw)
	}
}

// TestBlueprintBuildCLI: `apserver blueprint build NODE` starts the run
// from a feature of a blueprint ingested with `apserver blueprint ingest`;
// the feature had no tasks, so the planner is asked for them first; the
// run completes and the tasks are done.
func TestBlueprintBuildCLI(t *testing.T) {
	t.Parallel()
	rules := append([]scripted.Rule{
		{Match: "[blueprint chunk 1/1 cursor=start]", Steps: []scripted.Step{{Text: shoutOutline(t)}}},
		{Match: "[blueprint tasks n_", Steps: []scripted.Step{{Text: shoutFeatureTasks(t)}}},
	}, shoutRules(t)...)
	model := startModel(t, rules...)
	repo := shoutRepo(t)
	if err := os.WriteFile(filepath.Join(repo, "spec.md"), []byte(shoutSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	home, dataDir := t.TempDir(), t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, nil, 0o600)
	cli := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binPath, append([]string{"blueprint", args[0], "--data-dir", dataDir, "--config", cfg, "--model", "scripted-model"}, args[1:]...)...)
		cmd.Dir = repo
		cmd.Env = serverEnv(t, home, model)
		return cmd
	}
	if out, err := cli("ingest", "spec.md").CombinedOutput(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, out)
	}
	out, err := cli("show").Output()
	if err != nil {
		t.Fatal(err)
	}
	var feature string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "feature" {
			for _, w := range f {
				if strings.HasPrefix(w, "n_") {
					feature = w
				}
			}
		}
	}
	if feature == "" {
		t.Fatalf("show:\n%s", out)
	}
	if out, err := cli("build").CombinedOutput(); err == nil || !strings.Contains(string(out), "Usage: apserver blueprint build NODE") {
		t.Fatalf("build without a node: %v\n%s", err, out)
	}
	out, err = cli("build", feature, "--base", "main", "--trust-planning", "auto").CombinedOutput()
	if err != nil || !strings.Contains(string(out), " completed\n") {
		t.Fatalf("build %s: %v\n%s", feature, err, out)
	}
	out, err = cli("tasks", feature).CombinedOutput()
	if err != nil || strings.Count(string(out), "\tdone\t") != 2 {
		t.Fatalf("tasks after the build: %v\n%s", err, out)
	}
	if n := len(strings.Fields(gitOut(t, repo, "log", "main", "--format=%H", "--grep", "Apserver-Task: t_"))); n != 2 {
		t.Errorf("%d task commits on main, want 2", n)
	}
}
