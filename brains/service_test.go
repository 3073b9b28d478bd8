package brains

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/clock"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

func openStore(t *testing.T, path string) *store.Store {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestDecisionsAndProjections(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "shop")
	os.MkdirAll(filepath.Join(proj, ".apserver"), 0o755)
	// A run's section, written by the runner, is kept.
	os.WriteFile(filepath.Join(proj, ".apserver", "memory.md"), []byte("# apserver memory\n\n## Run run-1 (completed): x\n\n- chose y\n"), 0o644)
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	now := int64(1000)
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1, Clock: clock.Func(func() time.Time { now++; return time.UnixMilli(now) })})
	defer s.Close()

	pg, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL", Text: "All data in PostgreSQL.", Alternatives: []string{"MySQL"}})
	if err != nil {
		t.Fatal(err)
	}
	my, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj + "/", Title: "Use MySQL for orders", Supersedes: pg.Decision.ID, Source: "alignment"})
	if err != nil {
		t.Fatal(err)
	}
	prop, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Vue for the admin", Source: "model", Status: ptr(protocol.DecisionProposed)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateDecision(ctx, protocol.ProjectDecisionUpdateParams{ID: prop.Decision.ID, Status: ptr(protocol.DecisionActive), Why: ptr("the team knows it")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RevokeDecision(ctx, protocol.ProjectDecisionRevokeParams{ID: prop.Decision.ID}); err != nil {
		t.Fatal(err)
	}
	// Revoking twice is a transition the decision does not allow.
	if _, err := s.RevokeDecision(ctx, protocol.ProjectDecisionRevokeParams{ID: prop.Decision.ID}); err == nil {
		t.Fatal("revoked a revoked decision")
	}
	if _, err := s.UpdateDecision(ctx, protocol.ProjectDecisionUpdateParams{ID: "dec_nope", Title: ptr("x")}); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "dec_nope") {
		t.Fatalf("update of an unknown decision: %v", err)
	}

	list, err := s.ListDecisions(ctx, protocol.ProjectDecisionListParams{Cwd: proj, All: true})
	if err != nil || len(list.Decisions) != 3 {
		t.Fatalf("ListDecisions = %+v, %v", list, err)
	}
	if d := list.Decisions[0]; d.Status != protocol.DecisionSuperseded || d.SupersededBy != my.Decision.ID {
		t.Fatalf("the superseded decision reads %+v", d)
	}
	if d := list.Decisions[2]; d.Status != protocol.DecisionRevoked || d.Why != "the team knows it" {
		t.Fatalf("the revoked decision reads %+v", d)
	}
	mem, _ := os.ReadFile(filepath.Join(proj, ".apserver", "memory.md"))
	for _, want := range []string{"### " + my.Decision.ID + " Use MySQL for orders", "status: superseded by " + my.Decision.ID, "## Run run-1 (completed): x\n\n- chose y\n"} {
		if !strings.Contains(string(mem), want) {
			t.Errorf("memory.md lacks %q:\n%s", want, mem)
		}
	}
	snap, _ := os.ReadFile(filepath.Join(proj, ".apserver", "snapshot.md"))
	read, err := s.SnapshotRead(ctx, protocol.ProjectSnapshotReadParams{Cwd: proj})
	if err != nil || read.Markdown != string(snap) || !strings.Contains(read.Markdown, my.Decision.ID+" Use MySQL for orders") {
		t.Fatalf("snapshot.md and project/snapshot/read differ or lack the decision: %v\n%s\n---\n%s", err, snap, read.Markdown)
	}
	if dirty, _ := st.BrainDirty(ctx); len(dirty) != 0 {
		t.Fatalf("projections written but the project stays dirty: %v", dirty)
	}
}

// TestRestoreAfterCrash: a decision stored, then the process ends before
// its projection (the debounce never fires); the next start writes it.
func TestRestoreAfterCrash(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "p")
	os.MkdirAll(proj, 0o755)
	db := filepath.Join(dir, "a.db")
	st := openStore(t, db)
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: 1 << 40})
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	st.Close()
	if _, err := os.Stat(filepath.Join(proj, ".apserver", "memory.md")); !os.IsNotExist(err) {
		t.Fatalf("memory.md written before the debounce: %v", err)
	}
	st = openStore(t, db)
	defer st.Close()
	s = New(Options{Store: func() (*store.Store, error) { return st, nil }})
	defer s.Close()
	s.Restore()
	mem, err := os.ReadFile(filepath.Join(proj, ".apserver", "memory.md"))
	if err != nil || !strings.Contains(string(mem), "Use PostgreSQL") {
		t.Fatalf("after Restore, memory.md = %q, %v", mem, err)
	}
	if _, err := os.Stat(filepath.Join(proj, ".apserver", "snapshot.md")); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }

// TestTouchAfterARun: a run stored for the project, then Touch (what the
// runner calls when a run ends) rewrites snapshot.md with it.
func TestTouchAfterARun(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "p")
	os.MkdirAll(proj, 0o755)
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	waiting := protocol.RunWaitingFor("approval")
	run, _ := json.Marshal(protocol.Run{ID: "run-7", Request: "add orders", Cwd: proj, Status: protocol.RunStatus("running"), WaitingFor: &waiting})
	if _, err := st.AppendRunEvent(ctx, store.RunRow{ID: "run-7", Cwd: proj, Status: "running", Run: run}, "started", json.RawMessage(`{}`), 1); err != nil {
		t.Fatal(err)
	}
	// A project that keeps no decisions gets no files in its checkout:
	// runs' merges would trip over them.
	s.Touch(proj)
	if _, err := os.Stat(filepath.Join(proj, ".apserver")); !os.IsNotExist(err) {
		t.Fatalf("a project without decisions got .apserver/ projections (%v)", err)
	}
	if dirty, _ := st.BrainDirty(ctx); len(dirty) != 0 {
		t.Fatalf("still dirty: %v", dirty)
	}
	// One that does gets them after a run.
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL"}); err != nil {
		t.Fatal(err)
	}
	s.Touch(proj)
	snap, err := os.ReadFile(filepath.Join(proj, ".apserver", "snapshot.md"))
	if err != nil || !strings.Contains(string(snap), `- run-7 "add orders" waits for approval`) {
		t.Fatalf("snapshot.md after Touch: %v\n%s", err, snap)
	}
	if dirty, _ := st.BrainDirty(ctx); len(dirty) != 0 {
		t.Fatalf("still dirty: %v", dirty)
	}
	// Rewritten unchanged, a projection is left alone (its mtime stays).
	fi, _ := os.Stat(filepath.Join(proj, ".apserver", "snapshot.md"))
	old := time.Unix(1, 0)
	if err := os.Chtimes(filepath.Join(proj, ".apserver", "snapshot.md"), old, old); err != nil {
		t.Fatal(err)
	}
	s.Touch(proj)
	if fi2, _ := os.Stat(filepath.Join(proj, ".apserver", "snapshot.md")); fi2.ModTime() != old {
		t.Errorf("an unchanged snapshot.md was rewritten (%v, was %v)", fi2.ModTime(), fi.ModTime())
	}
}

// TestBudgetsFromConfig: a role's context budget comes from the
// configuration's [brain] budgets, the others keep the default, and the
// block stays within the configured budget.
func TestBudgetsFromConfig(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	cfg := config.Default()
	cfg.Brain.Budgets = map[string]int{"implementer": 600}
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1, Config: cfg})
	defer s.Close()
	proj := filepath.Join(dir, "shop")
	for i := 0; i < 40; i++ {
		if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: fmt.Sprintf("Decision %d", i), Text: strings.Repeat("a long text ", 20)}); err != nil {
			t.Fatal(err)
		}
	}
	for role, want := range map[string]int{"implementer": 600, "reviewer": brain.DefaultBudget} {
		pv, err := s.ContextPreview(ctx, protocol.ProjectContextPreviewParams{Cwd: proj, Role: role, ThreadID: "thr_1"})
		if err != nil {
			t.Fatal(err)
		}
		if pv.Budget != want || pv.Tokens > want {
			t.Errorf("preview for %s: budget %d, tokens %d; want budget %d", role, pv.Budget, pv.Tokens, want)
		}
	}
}

// TestSummariesInTheContext: a thread's saved summary is listed by
// project/summary/list and cited in the context block of every role; a
// summary covering all the thread's turns is not due again.
func TestSummariesInTheContext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1, Clock: clock.Func(func() time.Time { return time.UnixMilli(5000) })})
	defer s.Close()
	proj := filepath.Join(dir, "shop")
	if err := st.CreateThread(ctx, store.Thread{ID: "th1", Cwd: proj, CreatedAt: 1, UpdatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, due := s.SummaryDue(ctx, "th1", proj); due {
		t.Fatal("a summary is due in a directory that is not a project")
	}
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL"}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.StartTurn(ctx, store.Turn{ThreadID: "th1", ID: "tu1", Status: store.StatusInProgress, StartedAt: 2}); err != nil {
		t.Fatal(err)
	}
	turns, due := s.SummaryDue(ctx, "th1", proj)
	if !due || turns != 1 {
		t.Fatalf("SummaryDue = %d, %v; want 1, true", turns, due)
	}
	if err := s.SaveSummary(ctx, "th1", proj+"/", "Talked about the orders table.", turns); err != nil {
		t.Fatal(err)
	}
	if _, due := s.SummaryDue(ctx, "th1", proj); due {
		t.Error("a summary covering every turn is due again")
	}
	l, err := s.ListSummaries(ctx, protocol.ProjectSummaryListParams{Cwd: proj})
	if err != nil || len(l.Summaries) != 1 || l.Summaries[0].ThreadID != "th1" || l.Summaries[0].Turns != 1 || l.Summaries[0].UpdatedAtMs != 5000 {
		t.Fatalf("ListSummaries = %+v, %v", l, err)
	}
	if _, err := s.ListSummaries(ctx, protocol.ProjectSummaryListParams{}); !errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("ListSummaries without cwd: %v", err)
	}
	// A run's section of memory.md (the brain owns the file here).
	if err := s.RunMemory(ctx, proj, "run-7", "\n## Run run-7 (completed): orders\n\n- plan v1 approved by the user\n"); err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"implementer", "thread"} {
		pv, err := s.ContextPreview(ctx, protocol.ProjectContextPreviewParams{Cwd: proj, Role: role, ThreadID: "th2"})
		if err != nil || !strings.Contains(pv.Context, "## Conversation summaries\n\n- th1: Talked about the orders table.") ||
			!strings.Contains(pv.Context, "## Memory\n\n### Run run-7 (completed): orders") {
			t.Errorf("the %s's context lacks the summary or the run's memory (%v):\n%s", role, err, pv.Context)
		}
	}
}

// TestAlignThreadHoldsDecisionsOnce: a thread's alignment records hold
// the project's decisions once; the next record with the same decisions
// names them by hash, and a changed set is held again.
func TestAlignThreadHoldsDecisionsOnce(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	proj := filepath.Join(dir, "shop")
	if err := st.CreateThread(ctx, store.Thread{ID: "th1", Cwd: proj, CreatedAt: 1, UpdatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL", Alternatives: []string{"MySQL"}}); err != nil {
		t.Fatal(err)
	}
	held := func(cmd string) bool {
		t.Helper()
		_, raw, ok := s.AlignThread(ctx, "th1", protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: cmd})
		var rec brain.Record
		if !ok || json.Unmarshal(raw, &rec) != nil || rec.DecisionsHash == "" {
			t.Fatalf("AlignThread(%q) = %s, %v", cmd, raw, ok)
		}
		return rec.Decisions != nil
	}
	if !held("pip install PyMySQL") || held("pip install asyncpg") {
		t.Error("the second record of the same decisions holds them again, or the first does not")
	}
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Logs in JSON"}); err != nil {
		t.Fatal(err)
	}
	if !held("pip install asyncpg") {
		t.Error("a changed set of decisions is not held")
	}
}

// TestProjectionsExcludedFromGit: in a git checkout the brain's
// projections are excluded locally, so that a run's merge that brings in
// a memory.md (written by a run that ended before the project kept
// decisions) is not stopped by the brain's untracked file.
func TestProjectionsExcludedFromGit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	proj := filepath.Join(dir, "shop")
	os.MkdirAll(proj, 0o755)
	if out, err := exec.Command("git", "init", "-q", proj).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: proj, Title: "Use PostgreSQL", Text: "All data in PostgreSQL."}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(proj, ".apserver", "memory.md")); err != nil {
		t.Fatalf("memory.md not written: %v", err)
	}
	ex, _ := os.ReadFile(filepath.Join(proj, ".git", "info", "exclude"))
	for _, want := range []string{"/.apserver/memory.md\n", "/.apserver/snapshot.md\n"} {
		if !strings.Contains(string(ex), want) {
			t.Errorf("info/exclude lacks %q:\n%s", want, ex)
		}
	}
	out, _ := exec.Command("git", "-C", proj, "status", "--porcelain", "--untracked-files=all").Output()
	if strings.Contains(string(out), ".apserver/") {
		t.Errorf("git status shows the projections:\n%s", out)
	}
}

// TestProjectionsStayInTheProject: a repository that commits links where
// the projections go does not get apserver writing or reading outside it:
// a link named like memory.md is replaced, not followed or read (its
// target is a secret's file: no "## Run" section of it reaches the
// store); a link in the temporary file's old name is left alone; and
// .apserver itself linked elsewhere gets nothing written.
func TestProjectionsStayInTheProject(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	outside := filepath.Join(dir, "outside")
	os.MkdirAll(outside, 0o755)
	secret := filepath.Join(outside, "secret.md")
	os.WriteFile(secret, []byte("## Run stolen (completed): x\n\nTOKEN=hunter2\n"), 0o600)
	victim := filepath.Join(outside, "bashrc")
	os.WriteFile(victim, []byte("# mine\n"), 0o644)

	proj := filepath.Join(dir, "shop")
	os.MkdirAll(filepath.Join(proj, ".apserver"), 0o755)
	os.Symlink(secret, filepath.Join(proj, ".apserver", "memory.md"))
	os.Symlink(victim, filepath.Join(proj, ".apserver", "memory.md.tmp"))
	os.Symlink(victim, filepath.Join(proj, ".apserver", "snapshot.md.tmp"))

	linked := filepath.Join(dir, "linked")
	os.MkdirAll(linked, 0o755)
	os.Symlink(outside, filepath.Join(linked, ".apserver"))

	st := openStore(t, filepath.Join(dir, "a.db"))
	defer st.Close()
	s := New(Options{Store: func() (*store.Store, error) { return st, nil }, Debounce: -1})
	defer s.Close()
	for _, p := range []string{proj, linked} {
		if _, err := s.AddDecision(ctx, protocol.ProjectDecisionAddParams{Cwd: p, Title: "Use PostgreSQL", Text: "All data in PostgreSQL."}); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "# mine\n" {
		t.Errorf("a file outside the project was written through a link:\n%s", b)
	}
	if b, _ := os.ReadFile(secret); !strings.HasPrefix(string(b), "## Run stolen") {
		t.Errorf("the linked file was changed:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "memory.md")); err == nil {
		t.Error("memory.md written into the directory .apserver links to")
	}
	fi, err := os.Lstat(filepath.Join(proj, ".apserver", "memory.md"))
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("memory.md is not the project's own file: %v %v", fi, err)
	}
	mem, _ := os.ReadFile(filepath.Join(proj, ".apserver", "memory.md"))
	if strings.Contains(string(mem), "hunter2") || !strings.Contains(string(mem), "Use PostgreSQL") {
		t.Errorf("memory.md:\n%s", mem)
	}
}
