package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// The patch of TestFileChangeApprovals: adds, updates, moves (with an
// edit) and deletes.
const bigPatch = `*** Begin Patch
*** Add File: docs/new.txt
+a new file
+with two lines
*** Update File: a.txt
@@
 alpha
-beta
+BETA
 gamma
*** Update File: b.txt
*** Move to: moved/b2.txt
@@
 one
-two
+TWO
*** Delete File: d.txt
*** End Patch
`

var startFiles = map[string]string{
	"a.txt": "alpha\nbeta\ngamma\n",
	"b.txt": "one\ntwo\nthree\n",
	"d.txt": "delete me\n",
}

// gitRepo makes dir a git repository holding files, committed.
func gitRepo(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "start")
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// treeHash hashes every file under dir (paths, modes and bytes).
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		rel, _ := filepath.Rel(dir, p)
		h.Write([]byte(rel + "\x00" + fi.Mode().String() + "\x00"))
		if fi.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func readFile(t *testing.T, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// lastModelInput is the body of the model's latest request.
func lastModelInput(t *testing.T, srv *scripted.Server, n int) string {
	t.Helper()
	reqs := waitModelRequests(t, srv, n)
	return string(reqs[n-1].Body)
}

// TestFileChangeApprovals: one patch that adds, updates, moves and deletes,
// under each approval decision (protocol/codex/CORE.md §8); the item carries the changes
// with diffs, and after an accepted change turn/diff/updated equals `git
// diff` of the workspace against the turn's start.
func TestFileChangeApprovals(t *testing.T) {
	t.Parallel()
	patchStep := scripted.Step{Text: "Editing.", ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: bigPatch}}}
	final := scripted.Step{Text: "Edited."}
	for _, tc := range []struct {
		decision   string
		itemStatus string // "" = no item/completed
		applied    bool
		turnStatus string
	}{
		{"accept", "completed", true, "completed"},
		{"acceptForSession", "completed", true, "completed"},
		{"decline", "declined", false, "completed"},
		{"cancel", "", false, "interrupted"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			for _, wire := range []string{"responses", "chat"} {
				model := startModel(t, scripted.Rule{Match: "edit the files", Steps: []scripted.Step{patchStep, final}})
				c := newClient(t, model, options{wire: wire, inProcess: true})
				cwd := t.TempDir()
				gitRepo(t, cwd, startFiles)
				before := treeHash(t, cwd)
				threadID := c.startThreadIn(cwd, "untrusted")
				_, turnID := c.startTurn(threadID, "please edit the files")

				started := c.waitFor("item/started", itemOfType(turnID, "fileChange"))
				changes, _ := started.get("item.changes").([]any)
				if len(changes) != 4 {
					t.Fatalf("%s: fileChange has %d changes, want 4: %s", wire, len(changes), started.Raw)
				}
				kinds := map[string]string{}
				for i := range changes {
					p := started.str("item.changes." + strconv.Itoa(i) + ".path")
					kinds[p] = started.str("item.changes." + strconv.Itoa(i) + ".kind.type")
					if p == "b.txt" && started.str("item.changes."+strconv.Itoa(i)+".kind.move_path") != "moved/b2.txt" {
						t.Errorf("%s: move_path of b.txt = %q", wire, started.str("item.changes."+strconv.Itoa(i)+".kind.move_path"))
					}
					if p == "a.txt" && !strings.Contains(started.str("item.changes."+strconv.Itoa(i)+".diff"), "-beta\n+BETA") {
						t.Errorf("%s: a.txt diff lacks the hunk: %q", wire, started.str("item.changes."+strconv.Itoa(i)+".diff"))
					}
				}
				want := map[string]string{"docs/new.txt": "add", "a.txt": "update", "b.txt": "update", "d.txt": "delete"}
				for p, k := range want {
					if kinds[p] != k {
						t.Errorf("%s: change %s kind = %q, want %q (all: %v)", wire, p, kinds[p], k, kinds)
					}
				}
				req := c.waitFor("item/fileChange/requestApproval", nil)
				if req.str("itemId") != started.str("item.id") {
					t.Errorf("%s: approval itemId %q != item id %q", wire, req.str("itemId"), started.str("item.id"))
				}
				if before != treeHash(t, cwd) {
					t.Fatalf("%s: the workspace changed before the approval was answered", wire)
				}
				c.answer(req, map[string]any{"decision": tc.decision})
				done := c.turnDone(turnID)
				if got := done.str("turn.status"); got != tc.turnStatus {
					t.Errorf("%s: turn status %q, want %q", wire, got, tc.turnStatus)
				}
				completed := c.find("item/completed", itemOfType(turnID, "fileChange"))
				switch {
				case tc.itemStatus == "" && len(completed) != 0:
					t.Errorf("%s: cancel must not complete the fileChange item: %s", wire, completed[0].Raw)
				case tc.itemStatus != "" && (len(completed) != 1 || completed[0].str("item.status") != tc.itemStatus):
					t.Errorf("%s: fileChange completions %v, want one %q", wire, completed, tc.itemStatus)
				}
				if !tc.applied {
					if before != treeHash(t, cwd) {
						t.Errorf("%s: the workspace changed although the change was %s", wire, tc.decision)
					}
					continue
				}
				if s, _ := readFile(t, filepath.Join(cwd, "a.txt")); s != "alpha\nBETA\ngamma\n" {
					t.Errorf("%s: a.txt = %q", wire, s)
				}
				if s, _ := readFile(t, filepath.Join(cwd, "moved/b2.txt")); s != "one\nTWO\nthree\n" {
					t.Errorf("%s: moved/b2.txt = %q", wire, s)
				}
				if s, _ := readFile(t, filepath.Join(cwd, "docs/new.txt")); s != "a new file\nwith two lines\n" {
					t.Errorf("%s: docs/new.txt = %q", wire, s)
				}
				for _, gone := range []string{"b.txt", "d.txt"} {
					if _, ok := readFile(t, filepath.Join(cwd, gone)); ok {
						t.Errorf("%s: %s still exists", wire, gone)
					}
				}
				diffs := c.find("turn/diff/updated", forTurn(turnID))
				if len(diffs) == 0 {
					t.Fatalf("%s: no turn/diff/updated", wire)
				}
				last := diffs[len(diffs)-1]
				if last.Seq > done.Seq {
					t.Errorf("%s: the final turn/diff/updated came after turn/completed", wire)
				}
				git(t, cwd, "add", "-A")
				if got, want := last.str("diff"), git(t, cwd, "diff", "--cached", "HEAD"); got != want {
					t.Errorf("%s: turn diff != git diff\n--- turn/diff/updated:\n%s\n--- git diff:\n%s", wire, got, want)
				}
				out := lastModelInput(t, model, 2)
				if !strings.Contains(out, "Success. Updated the following files") {
					t.Errorf("%s: the model was not told the patch applied: %s", wire, out)
				}
			}
		})
	}
}

// TestAcceptForSessionSkipsLaterFileApprovals: after acceptForSession, a
// second change to the same file is not asked about.
func TestAcceptForSessionSkipsLaterFileApprovals(t *testing.T) {
	t.Parallel()
	p1 := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+B1\n*** End Patch\n"
	p2 := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-B1\n+B2\n*** End Patch\n"
	model := startModel(t, scripted.Rule{Match: "twice", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p1}}},
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p2}}},
		{Text: "done"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	threadID := c.startThreadIn(cwd, "untrusted")
	_, turnID := c.startTurn(threadID, "edit twice")
	c.answer(c.waitFor("item/fileChange/requestApproval", nil), map[string]any{"decision": "acceptForSession"})
	c.turnDone(turnID)
	if n := len(c.find("item/fileChange/requestApproval", nil)); n != 1 {
		t.Errorf("%d file approvals, want 1", n)
	}
	if s, _ := readFile(t, filepath.Join(cwd, "a.txt")); s != "alpha\nB2\ngamma\n" {
		t.Errorf("a.txt = %q", s)
	}
}

// TestMalformedPatchLeavesWorkspace: a patch that does not apply is a tool
// error naming the failing line; no file changes, no fileChange item.
func TestMalformedPatchLeavesWorkspace(t *testing.T) {
	t.Parallel()
	bad := "*** Begin Patch\n*** Add File: fresh.txt\n+new\n*** Update File: a.txt\n@@\n alpha\n-no such line\n+x\n*** End Patch\n"
	garbled := "*** Begin Patch\n*** Frobnicate File: a.txt\n*** End Patch\n"
	model := startModel(t, scripted.Rule{Match: "bad patch", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: bad}}},
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: garbled}}},
		{Text: "gave up"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	before := treeHash(t, cwd)
	threadID := c.startThreadIn(cwd, "never")
	_, done := c.runTurn(threadID, "apply the bad patch")
	if done.str("turn.status") != "completed" {
		t.Fatalf("turn %s", done.Raw)
	}
	if before != treeHash(t, cwd) {
		t.Error("a failed patch changed the workspace")
	}
	if n := len(c.find("item/started", itemOfType(done.str("turn.id"), "fileChange"))); n != 0 {
		t.Errorf("%d fileChange items for patches that did not apply", n)
	}
	second := lastModelInput(t, model, 2)
	if !strings.Contains(second, "no such line") || !strings.Contains(second, "nothing was changed") {
		t.Errorf("the model was not told which line failed: %s", second)
	}
	third := lastModelInput(t, model, 3)
	if !strings.Contains(third, "Frobnicate") {
		t.Errorf("the model was not told which line is malformed: %s", third)
	}
}

// TestRevertRestoresPatchAndShellEdits: a turn edits one file with a patch
// and another with a shell command; thread/revert restores both, drops the
// turn, and leaves the user's .git byte-identical.
func TestRevertRestoresPatchAndShellEdits(t *testing.T) {
	t.Parallel()
	p := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+PATCHED\n*** End Patch\n"
	model := startModel(t,
		scripted.Rule{Match: "change things", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p}}},
			{ToolCalls: []scripted.ToolCall{{Command: "echo shell-edit >> b.txt && echo made > made-by-shell.txt"}}},
			{Text: "changed"},
		}},
		scripted.Rule{Match: "second turn", Steps: []scripted.Step{{Text: "nothing to do"}}},
	)
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	git(t, cwd, "add", "a.txt") // an index entry the revert must not touch
	dotGit := treeHash(t, filepath.Join(cwd, ".git"))
	tree := treeHash(t, cwd)
	threadID := c.startThreadIn(cwd, "never")
	_, done1 := c.runTurn(threadID, "change things")
	turn1 := done1.str("turn.id")
	if s, _ := readFile(t, filepath.Join(cwd, "b.txt")); !strings.Contains(s, "shell-edit") {
		t.Fatalf("the shell command did not run: b.txt = %q\n%s", s, c.dump(0))
	}
	diffs := c.find("turn/diff/updated", forTurn(turn1))
	if len(diffs) == 0 || !strings.Contains(diffs[len(diffs)-1].str("diff"), "+shell-edit") {
		t.Errorf("the turn's final diff does not show the shell edit: %v", diffs)
	}
	_, done2 := c.runTurn(threadID, "second turn")
	c.runTurn(threadID, "second turn")
	if d := c.find("turn/diff/updated", forTurn(done2.str("turn.id"))); len(d) != 0 {
		t.Errorf("a turn that ran no tool sent a diff: %v", d)
	}
	// Reverting turns that ran no tool drops them and touches no file.
	afterTurn1 := treeHash(t, cwd)
	r2 := c.call("thread/revert", map[string]any{"threadId": threadID, "beforeTurnId": done2.str("turn.id")})
	if got, _ := r2.get("restoredPaths").([]any); len(got) != 0 || treeHash(t, cwd) != afterTurn1 {
		t.Errorf("reverting a text-only turn restored %v", got)
	}
	read2 := c.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	if turns, _ := read2.get("thread.turns").([]any); len(turns) != 1 {
		t.Errorf("after reverting the text-only turns, %d turns remain, want 1", len(turns))
	}

	// An outside edit since the last turn makes revert refuse, naming it.
	if err := os.WriteFile(filepath.Join(cwd, "d.txt"), []byte("user edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.callErr("thread/revert", map[string]any{"threadId": threadID, "beforeTurnId": turn1}, -32600, "d.txt")
	if s, _ := readFile(t, filepath.Join(cwd, "d.txt")); s != "user edit\n" {
		t.Fatalf("a refused revert touched d.txt: %q", s)
	}
	if err := os.WriteFile(filepath.Join(cwd, "d.txt"), []byte(startFiles["d.txt"]), 0o644); err != nil {
		t.Fatal(err)
	}
	r := c.call("thread/revert", map[string]any{"threadId": threadID, "beforeTurnId": turn1})
	if r.str("thread.id") != threadID {
		t.Errorf("revert result: %s", r.Raw)
	}
	c.waitAfter(r, "thread/reverted", func(m *message) bool { return m.str("threadId") == threadID })
	if got := treeHash(t, cwd); got != tree {
		t.Errorf("the workspace differs from before the turn after revert")
	}
	if _, ok := readFile(t, filepath.Join(cwd, "made-by-shell.txt")); ok {
		t.Error("made-by-shell.txt survived the revert")
	}
	if got := treeHash(t, filepath.Join(cwd, ".git")); got != dotGit {
		t.Error("the user's .git changed")
	}
	read := c.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	if turns, _ := read.get("thread.turns").([]any); len(turns) != 0 {
		t.Errorf("thread still has %d turns after reverting the first: %s", len(turns), read.Raw)
	}
}

// TestOutsideEditRefusesNextPatch: a file the agent read and the user then
// edits is not patched; the model is told to re-read it.
func TestOutsideEditRefusesNextPatch(t *testing.T) {
	t.Parallel()
	p := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+AGENT\n*** End Patch\n"
	model := startModel(t, scripted.Rule{Match: "read then patch", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: `{"path":"a.txt"}`}}},
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p}}, TTFT: 400 * time.Millisecond},
		{Text: "ok"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	threadID := c.startThreadIn(cwd, "never")
	_, turnID := c.startTurn(threadID, "read then patch")
	read := c.waitFor("item/completed", itemOfType(turnID, "dynamicToolCall"))
	if !strings.Contains(read.str("item.contentItems.0.text"), "beta") {
		t.Errorf("read_file output: %s", read.Raw)
	}
	userText := "alpha\nbeta\ngamma\nthe user's line\n"
	if err := os.WriteFile(filepath.Join(cwd, "a.txt"), []byte(userText), 0o644); err != nil {
		t.Fatal(err)
	}
	c.turnDone(turnID)
	if s, _ := readFile(t, filepath.Join(cwd, "a.txt")); s != userText {
		t.Errorf("the user's edit was overwritten: %q", s)
	}
	if out := lastModelInput(t, model, 3); !strings.Contains(out, "changed outside") {
		t.Errorf("the model was not told the file changed: %s", out)
	}
}

// TestPlanAndQuestion: update_plan gives turn/plan/updated (and a plan
// item); request_user_input asks the client and the answer reaches the
// model verbatim.
func TestPlanAndQuestion(t *testing.T) {
	t.Parallel()
	plan := `{"explanation":"two steps","plan":[{"step":"read","status":"completed"},{"step":"write","status":"in_progress"}]}`
	q := `{"questions":[{"id":"color","header":"Color","question":"Which color?","options":[{"label":"red","description":"warm"},{"label":"blue"}]}]}`
	model := startModel(t, scripted.Rule{Match: "plan and ask", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "update_plan", Arguments: plan}}},
		{ToolCalls: []scripted.ToolCall{{Name: "request_user_input", Arguments: q}}},
		{Text: "thanks"},
	}})
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "plan and ask")
	pu := c.waitFor("turn/plan/updated", forTurn(turnID))
	if pu.str("plan.1.status") != "inProgress" || pu.str("plan.0.step") != "read" || pu.str("explanation") != "two steps" {
		t.Errorf("turn/plan/updated: %s", pu.Raw)
	}
	c.waitFor("item/completed", itemOfType(turnID, "plan"))
	req := c.waitFor("item/tool/requestUserInput", nil)
	if req.str("questions.0.id") != "color" || req.str("questions.0.options.0.label") != "red" {
		t.Errorf("question: %s", req.Raw)
	}
	c.waitFor("thread/status/changed", statusIs(threadID, "active", "waitingOnUserInput"))
	c.answer(req, map[string]any{"answers": map[string]any{"color": map[string]any{"answers": []string{"blue"}}}})
	c.turnDone(turnID)
	if out := lastModelInput(t, model, 3); !strings.Contains(out, `\"answers\":[\"blue\"]`) {
		t.Errorf("the answer did not reach the model: %s", out)
	}
}

// TestApplyPatchThroughShell: a Codex-trained model runs `apply_patch
// <<'EOF'` through the shell tool; it becomes a fileChange, not a command.
func TestApplyPatchThroughShell(t *testing.T) {
	t.Parallel()
	cmd := "apply_patch <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+SHELL\n*** End Patch\nEOF\n"
	model := startModel(t, scripted.Rule{Match: "via shell", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: cmd}}},
		{Text: "ok"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	threadID := c.startThreadIn(cwd, "never")
	_, done := c.runTurn(threadID, "patch via shell")
	turnID := done.str("turn.id")
	if s, _ := readFile(t, filepath.Join(cwd, "a.txt")); s != "alpha\nSHELL\ngamma\n" {
		t.Errorf("a.txt = %q", s)
	}
	if n := len(c.find("item/completed", itemOfType(turnID, "fileChange"))); n != 1 {
		t.Errorf("%d fileChange items, want 1", n)
	}
	if n := len(c.find("item/started", itemOfType(turnID, "commandExecution"))); n != 0 {
		t.Errorf("%d commandExecution items for a patch", n)
	}
}

// TestReadOnlyNeverRefusesEdits: a read-only thread that never asks cannot
// change files: the edit is refused and the model is told why.
func TestReadOnlyNeverRefusesEdits(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "write it", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "write_file", Arguments: `{"path":"new.txt","content":"x\n"}`}}},
		{Text: "could not"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	r := c.call("thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "never", "sandbox": "read-only"})
	threadID := r.str("thread.id")
	_, done := c.runTurn(threadID, "write it")
	if _, ok := readFile(t, filepath.Join(cwd, "new.txt")); ok {
		t.Error("a read-only thread wrote a file")
	}
	if n := len(c.find("item/started", itemOfType(done.str("turn.id"), "fileChange"))); n != 0 {
		t.Errorf("%d fileChange items for a refused edit", n)
	}
	if out := lastModelInput(t, model, 2); !strings.Contains(out, "read-only") {
		t.Errorf("the model was not told why: %s", out)
	}
	ex := c.call("policy/explain", map[string]any{"threadId": threadID, "path": "new.txt"})
	if ex.str("effective") != "refuse" {
		t.Errorf("policy/explain of a path in a read-only never thread: %s", ex.Raw)
	}
}

// TestRevertInFork: a fork keeps the checkpoints of the turns it copies, so
// undoing one of them in the fork restores the files.
func TestRevertInFork(t *testing.T) {
	t.Parallel()
	p := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+FORKED\n*** End Patch\n"
	model := startModel(t, scripted.Rule{Match: "patch it", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p}}},
		{Text: "patched"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	before := treeHash(t, cwd)
	src := c.startThreadIn(cwd, "never")
	_, done := c.runTurn(src, "patch it")
	turnID := done.str("turn.id")
	f := c.call("thread/fork", map[string]any{"threadId": src})
	fork := f.str("thread.id")
	if fork == "" || fork == src {
		t.Fatalf("thread/fork: %s", f.Raw)
	}
	r := c.call("thread/revert", map[string]any{"threadId": fork, "beforeTurnId": turnID})
	if got, _ := r.get("restoredPaths").([]any); len(got) != 1 {
		t.Errorf("revert in the fork restored %v, want a.txt", got)
	}
	if treeHash(t, cwd) != before {
		t.Error("reverting the copied turn in the fork did not restore the workspace")
	}
}

// TestRevertEphemeral: an ephemeral thread (no store) keeps its checkpoints
// and history marks in memory; revert restores files and drops the turn.
func TestRevertEphemeral(t *testing.T) {
	t.Parallel()
	p := "*** Begin Patch\n*** Update File: a.txt\n@@\n alpha\n-beta\n+EPHEMERAL\n*** End Patch\n"
	model := startModel(t, scripted.Rule{Match: "patch it", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: p}}},
		{Text: "patched"},
	}})
	c := newClient(t, model, options{inProcess: true})
	cwd := t.TempDir()
	gitRepo(t, cwd, startFiles)
	before := treeHash(t, cwd)
	r := c.call("thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "never", "ephemeral": true})
	id := r.str("thread.id")
	_, done := c.runTurn(id, "patch it")
	if s, _ := readFile(t, filepath.Join(cwd, "a.txt")); !strings.Contains(s, "EPHEMERAL") {
		t.Fatalf("the patch did not apply: %q", s)
	}
	c.call("thread/revert", map[string]any{"threadId": id, "beforeTurnId": done.str("turn.id")})
	if treeHash(t, cwd) != before {
		t.Error("revert of an ephemeral thread's turn did not restore the workspace")
	}
	read := c.call("thread/read", map[string]any{"threadId": id, "includeTurns": true})
	if turns, _ := read.get("thread.turns").([]any); len(turns) != 0 {
		t.Errorf("%d turns after the revert, want 0", len(turns))
	}
}
