package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestBrainOverTheWire (docs/brain.md): decisions recorded, superseded and
// listed over the protocol; alignment/explain stops a dependency that
// contradicts a decision and names it; the context preview holds the
// matching decision; bad input is -32602 naming the field. apserver is
// then killed with SIGKILL right after a change; the next process, once
// initialized, has memory.md and snapshot.md with the change.
func TestBrainOverTheWire(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	dir, dataDir := t.TempDir(), t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir, dir: dir})
	my := c.call("project/decision/add", map[string]any{"cwd": dir, "title": "Use MySQL"})
	pg := c.call("project/decision/add", map[string]any{"cwd": dir, "title": "Use PostgreSQL", "text": "All data in PostgreSQL.",
		"alternatives": []string{"MySQL", "SQLite"}, "scope": map[string]any{"files": []string{"app/db/**"}}, "supersedes": my.str("decision.id")})
	pgID := pg.str("decision.id")
	if !strings.HasPrefix(pgID, "dec_") || pg.str("decision.status") != "active" {
		t.Fatalf("project/decision/add = %s", pg.Raw)
	}
	list := c.call("project/decision/list", map[string]any{"cwd": dir, "all": true})
	if !strings.Contains(string(list.Raw), `"supersededBy":"`+pgID+`"`) {
		t.Errorf("project/decision/list = %s", list.Raw)
	}
	th := c.call("thread/start", map[string]any{"cwd": dir})
	v := c.call("alignment/explain", map[string]any{"threadId": th.str("thread.id"), "action": map[string]any{
		"kind": "write", "path": "requirements.txt", "before": "fastapi\n", "after": "fastapi\nmysql-connector-python==8.3\n"}})
	if v.str("verdict.status") != "conflicting" || !strings.Contains(string(v.Raw), `"id":"`+pgID+`"`) {
		t.Errorf("alignment/explain = %s", v.Raw)
	}
	pv := c.call("project/context/preview", map[string]any{"cwd": dir, "role": "implementer", "threadId": th.str("thread.id")})
	if !strings.Contains(pv.str("context"), "Use PostgreSQL") || num(pv, "tokens") > num(pv, "budget") {
		t.Errorf("project/context/preview = %s", pv.Raw)
	}
	c.callErr("project/decision/add", map[string]any{"cwd": dir}, -32602, "title")
	c.callErr("alignment/explain", map[string]any{"threadId": th.str("thread.id"), "action": map[string]any{"kind": "write"}}, -32602, "action.path")
	c.callErr("project/decision/revoke", map[string]any{"id": "dec_nope"}, -32602, "dec_nope")

	c.call("project/decision/revoke", map[string]any{"id": pgID, "reason": "moving off"})
	c.kill()

	c2 := newClient(t, model, options{dataDir: dataDir, dir: dir})
	c2.call("project/decision/list", map[string]any{"cwd": dir}) // initialized has been sent
	deadline := time.Now().Add(30 * time.Second)
	for {
		mem, _ := os.ReadFile(filepath.Join(dir, ".apserver", "memory.md"))
		snap, _ := os.ReadFile(filepath.Join(dir, ".apserver", "snapshot.md"))
		if strings.Contains(string(mem), "status: revoked") && strings.Contains(string(snap), "# Snapshot of") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the restart, memory.md:\n%s\nsnapshot.md:\n%s", mem, snap)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBrainProjectContextInPlainThread (docs/brain.md): with
// project_context = true in the user's config file, a plain thread whose
// workspace keeps a decision sends the model the project's context block
// (the decision in it) in its instructions; without the key it does not.
func TestBrainProjectContextInPlainThread(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		model := startModel(t, scripted.Rule{Match: "Compaction request", Steps: []scripted.Step{{Text: "PCTX-SUMMARY: asked which database."}}},
			scripted.Rule{Match: "S-pctx", Steps: []scripted.Step{{Text: "Noted."}}})
		dir := t.TempDir()
		var args []string
		if on {
			args = capConfig(t, "project_context = true", "[brain]", "budgets = { thread = 3000 }")
		}
		c := newClient(t, model, options{dir: dir, args: args})
		c.call("project/decision/add", map[string]any{"cwd": dir, "title": "Use PostgreSQL", "text": "All data in PostgreSQL.", "alternatives": []string{"MySQL"}})
		th := c.call("thread/start", map[string]any{"cwd": dir})
		c.runTurn(th.str("thread.id"), "S-pctx: what database do we use?")
		var body string
		for _, r := range modelRequests(model) {
			if b := string(r.Body); strings.Contains(b, "S-pctx") && !strings.Contains(b, "Compaction request") {
				body = b
			}
		}
		got := strings.Contains(body, "# Project context for the thread") && strings.Contains(body, "Use PostgreSQL") && strings.Contains(body, "Rejected: MySQL")
		if got != on {
			t.Errorf("project_context %v: the block in the model's request is %v; request:\n%s", on, got, body)
		}
		// The thread's rolling summary, once it went idle (under the key).
		c.callErr("project/summary/list", map[string]any{}, -32602, "cwd")
		deadline := time.Now().Add(waitTimeout)
		for on {
			l := c.call("project/summary/list", map[string]any{"cwd": dir})
			if strings.Contains(l.str("summaries.0.summary"), "PCTX-SUMMARY") && l.str("summaries.0.threadId") == th.str("thread.id") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("project/summary/list = %s", l.Raw)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if !on {
			if l := c.call("project/summary/list", map[string]any{"cwd": dir}); l.str("summaries.0.threadId") != "" {
				t.Errorf("without project_context, project/summary/list = %s", l.Raw)
			}
		}
		c.close()
	}
}

// TestBrainAlignmentReplay (docs/brain.md): under full auto, a command
// installing a dependency that contradicts a recorded decision waits for
// a human; the approval request and the command's item carry the
// verdict; apserver replay judges the thread's alignment receipt again
// and agrees.
func TestBrainAlignmentReplay(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "S-align", Steps: []scripted.Step{
		{Text: "Installing the driver.", ToolCalls: []scripted.ToolCall{{Command: "bin/pip install mysql-connector-python"}}},
		{Text: "The task is complete."},
	}})
	dataDir := t.TempDir()
	c := newFAClient(t, model, faOptions{dataDir: dataDir})
	threadID, cwd := c.startThread("never")
	os.MkdirAll(filepath.Join(cwd, "bin"), 0o755)
	os.WriteFile(filepath.Join(cwd, "bin", "pip"), []byte("#!/bin/sh\necho \"$@\" > installed.txt\n"), 0o755)
	pg := c.call("project/decision/add", map[string]any{"cwd": cwd, "title": "Use PostgreSQL", "text": "All data in PostgreSQL.", "alternatives": []string{"MySQL"}})
	c.startFullAuto(threadID, map[string]any{"objective": "S-align: install the database driver"})
	req := c.waitFor("item/commandExecution/requestApproval", nil)
	if req.str("alignment.status") != "conflicting" || req.str("alignment.decisions.0.id") != pg.str("decision.id") {
		t.Fatalf("the approval request = %s, want the verdict against %s", req.Raw, pg.str("decision.id"))
	}
	c.answer(req, map[string]any{"decision": "decline"})
	c.runEnded(threadID)
	item := c.waitFor("item/completed", func(m *message) bool { return m.str("item.type") == "commandExecution" })
	if item.str("item.alignment.status") != "conflicting" {
		t.Errorf("the command's item = %s, want its verdict", item.Raw)
	}
	if _, err := os.Stat(filepath.Join(cwd, "installed.txt")); err == nil {
		t.Error("the declined command ran")
	}
	c.close()
	out, err := exec.Command(binPath, "replay", "--data-dir", dataDir, threadID).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "alignment") || !strings.Contains(string(out), "conflicting (rules, "+pg.str("decision.id")+")") ||
		!strings.Contains(string(out), ", 0 differ") {
		t.Errorf("apserver replay: %v\n%s", err, out)
	}
}
