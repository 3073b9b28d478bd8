package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/brains"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestAlignmentStopsFullAuto: under full auto, on a thread whose approval
// policy never asks, a command installing a dependency that contradicts a
// recorded decision waits for a human, the decision named in the
// request's reason; approving it runs the command and records a decision
// superseding the one it went against. Without the brain the same command
// runs unasked.
func TestAlignmentStopsFullAuto(t *testing.T) {
	for _, withBrain := range []bool{true, false} {
		h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-driver", Steps: []scripted.Step{
			{Text: "Installing the driver.", ToolCalls: []scripted.ToolCall{{Command: "bin/pip install mysql-connector-python"}}},
			{Text: "The task is complete."},
		}}}}, false)
		cwd := t.TempDir()
		os.MkdirAll(filepath.Join(cwd, "bin"), 0o755)
		os.WriteFile(filepath.Join(cwd, "bin", "pip"), []byte("#!/bin/sh\necho \"$@\" > installed.txt\n"), 0o755)
		br := brains.New(brains.Options{Store: h.m.Store, Debounce: -1})
		t.Cleanup(br.Close)
		pg, err := br.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: cwd, Title: "Use PostgreSQL", Text: "All data lives in PostgreSQL.", Alternatives: []string{"MySQL"}})
		if err != nil {
			t.Fatal(err)
		}
		if withBrain {
			h.m.SetAligner(br)
		}
		id := h.startThread(t, threadParams(&cwd, protocol.ApprovalNever)).Thread.ID
		mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
			h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-driver: install the database driver")}, r)
		})
		if !withBrain {
			waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
			if _, err := os.Stat(filepath.Join(cwd, "installed.txt")); err != nil {
				t.Fatalf("without the brain the command did not run: %v", err)
			}
			if n := len(filter(h.c.snapshot(), protocol.RequestCommandApproval, "")); n != 0 {
				t.Fatalf("without the brain, %d approval requests", n)
			}
			continue
		}
		var fc *fakeCall
		select {
		case fc = <-h.c.calls:
		case <-time.After(testTimeout):
			t.Fatalf("no approval request; log:\n%s", dump(h.c.snapshot()))
		}
		var p protocol.CommandApprovalParams
		if err := json.Unmarshal(fc.params, &p); err != nil || fc.method != protocol.RequestCommandApproval || p.Reason == nil ||
			!strings.Contains(*p.Reason, pg.Decision.ID) || !strings.Contains(*p.Reason, `"Use PostgreSQL"`) || !strings.Contains(*p.Reason, "conflicting") {
			t.Fatalf("request %s %s, want a command approval naming %s", fc.method, fc.params, pg.Decision.ID)
		}
		if p.Alignment == nil || p.Alignment.Status != protocol.AlignmentConflicting || len(p.Alignment.Decisions) == 0 || p.Alignment.Decisions[0].ID != pg.Decision.ID {
			t.Errorf("the request's alignment = %+v, want the conflicting verdict naming %s", p.Alignment, pg.Decision.ID)
		}
		if _, err := os.Stat(filepath.Join(cwd, "installed.txt")); err == nil {
			t.Fatal("the command ran before the approval")
		}
		// The run waits, its attention item naming the decision.
		waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoWaiting))
		if att, _ := json.Marshal(h.m.fa.attn.snapshot()); !strings.Contains(string(att), pg.Decision.ID) {
			t.Errorf("attention = %s, want the decision named", att)
		}
		fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"accept"}`)}
		waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
		if _, err := os.Stat(filepath.Join(cwd, "installed.txt")); err != nil {
			t.Fatalf("after the approval the command did not run: %v", err)
		}
		// The item's record and the thread's receipts keep the verdict, and
		// the receipt's record judges the same again (apserver replay).
		var item protocol.CommandExecutionItem
		for _, e := range filter(h.c.snapshot(), protocol.NotifyItemCompleted, id) {
			var n struct {
				Item protocol.CommandExecutionItem `json:"item"`
			}
			if json.Unmarshal(e.Params, &n) == nil && n.Item.Command != "" {
				item = n.Item
			}
		}
		if item.Alignment == nil || item.Alignment.Status != protocol.AlignmentConflicting {
			t.Errorf("the command's item/completed alignment = %+v, want the verdict", item.Alignment)
		}
		db, _ := h.m.Store()
		rs, err := db.Receipts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var aligned int
		var kinds []string
		sets := brain.DecisionSets{}
		for _, r := range rs {
			var rec brain.Record
			if r.Kind == brain.ReceiptKind && json.Unmarshal(r.Input, &rec) == nil {
				sets.Add(rec)
			}
		}
		for _, r := range rs {
			kinds = append(kinds, r.Kind)
			if r.Kind != brain.ReceiptKind {
				continue
			}
			aligned++
			var rec brain.Record
			var want protocol.AlignmentVerdict
			if json.Unmarshal(r.Input, &rec) != nil || json.Unmarshal(r.Output, &want) != nil || sets.Resolve(&rec) != nil {
				t.Fatalf("alignment receipt #%d does not decode or names decisions no receipt holds", r.Seq)
			}
			got, _ := json.Marshal(brain.ReplayVerdict(rec))
			if wb, _ := json.Marshal(want); string(got) != string(wb) || want.Status != protocol.AlignmentConflicting || r.Executed {
				t.Errorf("alignment receipt #%d: stored %s (executed %v), replayed %s", r.Seq, wb, r.Executed, got)
			}
		}
		if aligned != 1 {
			t.Errorf("%d alignment receipts, want 1; receipts: %v", aligned, kinds)
		}
		l, err := br.ListDecisions(context.Background(), protocol.ProjectDecisionListParams{Cwd: cwd, All: true})
		if err != nil || len(l.Decisions) != 2 {
			t.Fatalf("decisions after the approval: %+v %v", l, err)
		}
		old, neu := l.Decisions[0], l.Decisions[1]
		if old.Status != protocol.DecisionSuperseded || old.SupersededBy != neu.ID || neu.Source != "alignment" || neu.Status != protocol.DecisionActive ||
			!strings.Contains(neu.Text, "mysql-connector-python") {
			t.Fatalf("after the approval: %+v / %+v", old, neu)
		}
	}
}

// TestRecordDecisionTool: the model's record_decision call records a
// proposed decision (source "model") in the thread's project and tells
// the model its id; a call without text is refused.
func TestRecordDecisionTool(t *testing.T) {
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-decide", Steps: []scripted.Step{
		{Text: "Recording it.", ToolCalls: []scripted.ToolCall{
			{Name: "record_decision", Arguments: `{"title":"Use Redis for caching","text":"The cache is Redis.","alternatives":["Memcached"],"files":["app/cache/**"]}`},
			{Name: "record_decision", Arguments: `{"title":"Half a decision"}`},
		}},
		{Text: "Done."},
	}}}}, false)
	cwd := t.TempDir()
	br := brains.New(brains.Options{Store: h.m.Store, Debounce: -1})
	t.Cleanup(br.Close)
	h.m.SetAligner(br)
	id := h.startThread(t, threadParams(&cwd, protocol.ApprovalNever)).Thread.ID
	h.startTurn(t, id, "S-decide")
	h.turnCompleted(t, id)
	l, err := br.ListDecisions(context.Background(), protocol.ProjectDecisionListParams{Cwd: cwd, All: true})
	if err != nil || len(l.Decisions) != 1 {
		t.Fatalf("decisions: %+v %v", l, err)
	}
	d := l.Decisions[0]
	if d.Status != protocol.DecisionProposed || d.Source != "model" || d.Title != "Use Redis for caching" || len(d.Scope.Files) != 1 || d.Alternatives[0] != "Memcached" {
		t.Fatalf("decision = %+v", d)
	}
	reqs := h.srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(last, "Recorded decision "+d.ID) || !strings.Contains(last, "title and text are required") {
		t.Errorf("the model was not told the outcomes: %s", last)
	}
}

// TestProjectContextInPlainThread: under project_context = true a plain
// thread whose workspace keeps decisions gets the project's context block
// in its instructions (the decision in it); with the key off, or in a
// workspace that is not a project, the instructions have no block.
func TestProjectContextInPlainThread(t *testing.T) {
	for _, tc := range []struct {
		name      string
		on, decid bool
		want      bool
	}{{"on", true, true, true}, {"off", false, true, false}, {"not a project", true, false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-ctx", Steps: []scripted.Step{{Text: "Fine."}}}}}, false)
			h.m.opts.Config.Brain.ProjectContext = tc.on
			cwd := t.TempDir()
			br := brains.New(brains.Options{Store: h.m.Store, Debounce: -1})
			t.Cleanup(br.Close)
			if tc.decid {
				if _, err := br.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: cwd, Title: "Use PostgreSQL", Text: "All data lives in PostgreSQL."}); err != nil {
					t.Fatal(err)
				}
			}
			h.m.SetAligner(br)
			id := h.startThread(t, threadParams(&cwd, protocol.ApprovalNever)).Thread.ID
			h.startTurn(t, id, "S-ctx")
			h.turnCompleted(t, id)
			// The turn's request (once idle the thread may also ask for
			// its rolling summary, which is not the turn's).
			var body string
			for _, r := range h.srv.Requests() {
				if b := string(r.Body); strings.Contains(b, "S-ctx") && !strings.Contains(b, "Compaction request") {
					body = b
				}
			}
			if body == "" {
				t.Fatal("no request of the turn reached the model")
			}
			got := strings.Contains(body, "# Project context for the thread") && strings.Contains(body, "Use PostgreSQL") && strings.Contains(body, "Thread "+id)
			if got != tc.want || (!tc.want && strings.Contains(body, "# Project context")) {
				t.Fatalf("the block in the instructions: %v, want %v; request:\n%s", got, tc.want, body)
			}
		})
	}
}

// TestProjectSummaries: under project_context = true a plain thread of a
// project gets a rolling summary once it goes idle after a turn (the
// compaction summarizer, the scripted model), listed by
// project/summary/list and cited in the next turn's context block; a
// later turn refreshes it. Without the key no summary is asked for.
func TestProjectSummaries(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := newHarness(t, scripted.Script{Rules: []scripted.Rule{
			{Match: "Compaction request", Steps: []scripted.Step{{Text: "SUMMARY-1: the user asked which database; PostgreSQL."}}},
			{Match: "S-sum", Steps: []scripted.Step{{Text: "We use PostgreSQL."}}},
		}}, false)
		h.m.opts.Config.Brain.ProjectContext = on
		cwd := t.TempDir()
		br := brains.New(brains.Options{Store: h.m.Store, Debounce: -1})
		t.Cleanup(br.Close)
		if _, err := br.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: cwd, Title: "Use PostgreSQL", Text: "All data lives in PostgreSQL."}); err != nil {
			t.Fatal(err)
		}
		h.m.SetAligner(br)
		id := h.startThread(t, threadParams(&cwd, protocol.ApprovalNever)).Thread.ID
		h.startTurn(t, id, "S-sum: which database?")
		h.turnCompleted(t, id)
		summaries := func(want int) []protocol.ProjectThreadSummary {
			t.Helper()
			deadline := time.Now().Add(testTimeout)
			for {
				l, err := br.ListSummaries(context.Background(), protocol.ProjectSummaryListParams{Cwd: cwd})
				if err != nil {
					t.Fatal(err)
				}
				if len(l.Summaries) == 1 && l.Summaries[0].Turns >= want || time.Now().After(deadline) {
					return l.Summaries
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
		second := func() {
			t.Helper()
			tr := h.startTurn(t, id, "S-sum: and the cache?")
			waitNote(t, h, protocol.NotifyTurnCompleted, id, 0, func(b json.RawMessage) bool {
				var n protocol.TurnNotification
				return json.Unmarshal(b, &n) == nil && n.Turn.ID == tr.ID
			})
		}
		if !on {
			second()
			for _, r := range h.srv.Requests() {
				if strings.Contains(string(r.Body), "Compaction request") {
					t.Fatal("without project_context a summary was asked for")
				}
			}
			if l, _ := br.ListSummaries(context.Background(), protocol.ProjectSummaryListParams{Cwd: cwd}); len(l.Summaries) != 0 {
				t.Fatalf("without project_context, summaries: %+v", l.Summaries)
			}
			continue
		}
		got := summaries(1)
		if len(got) != 1 || got[0].ThreadID != id || got[0].Turns != 1 || !strings.Contains(got[0].Summary, "SUMMARY-1") {
			t.Fatalf("after one turn, summaries = %+v", got)
		}
		second()
		var body string
		for _, r := range h.srv.Requests() {
			if b := string(r.Body); strings.Contains(b, "and the cache?") && !strings.Contains(b, "Compaction request") {
				body = b
			}
		}
		if !strings.Contains(body, "## Conversation summaries") || !strings.Contains(body, "SUMMARY-1") {
			t.Errorf("the second turn's request does not cite the summary:\n%s", body)
		}
		if got := summaries(2); len(got) != 1 || got[0].Turns != 2 {
			t.Errorf("after two turns, summaries = %+v", got)
		}
		asked := 0
		for _, r := range h.srv.Requests() {
			if strings.Contains(string(r.Body), "Compaction request") {
				asked++
			}
		}
		if asked != 2 {
			t.Errorf("the summarizer was asked %d times, want 2 (once per idle after a new turn)", asked)
		}
	}
}

// TestAlignmentStopsFileChange: under full auto a patch adding a
// dependency a decision rejects waits for a human; the fileChange
// approval request and the item carry the verdict, and the thread keeps
// an alignment receipt of it. Declined, the file is not written.
func TestAlignmentStopsFileChange(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: requirements.txt\n+fastapi\n+mysql-connector-python==8.3\n*** End Patch"
	h := newHarness(t, scripted.Script{Rules: []scripted.Rule{{Match: "S-req", Steps: []scripted.Step{
		{Text: "Adding the driver.", ToolCalls: []scripted.ToolCall{{Name: "apply_patch", Input: patch}}},
		{Text: "The task is complete."},
	}}}}, false)
	cwd := t.TempDir()
	br := brains.New(brains.Options{Store: h.m.Store, Debounce: -1})
	t.Cleanup(br.Close)
	pg, err := br.AddDecision(context.Background(), protocol.ProjectDecisionAddParams{Cwd: cwd, Title: "Use PostgreSQL", Text: "All data lives in PostgreSQL.", Alternatives: []string{"MySQL"}})
	if err != nil {
		t.Fatal(err)
	}
	h.m.SetAligner(br)
	id := h.startThread(t, threadParams(&cwd, protocol.ApprovalNever)).Thread.ID
	mustCall[protocol.FullAutoRunResult](t, h, "start", func(r Reply) {
		h.m.StartFullAuto(context.Background(), protocol.FullAutoStartParams{ThreadID: id, Objective: ptr("S-req: add the database driver")}, r)
	})
	var fc *fakeCall
	select {
	case fc = <-h.c.calls:
	case <-time.After(testTimeout):
		t.Fatalf("no approval request; log:\n%s", dump(h.c.snapshot()))
	}
	var p protocol.FileChangeApprovalParams
	if err := json.Unmarshal(fc.params, &p); err != nil || fc.method != protocol.RequestFileChangeApproval || p.Alignment == nil ||
		p.Alignment.Status != protocol.AlignmentConflicting || len(p.Alignment.Decisions) == 0 || p.Alignment.Decisions[0].ID != pg.Decision.ID {
		t.Fatalf("request %s %s, want a file change approval carrying the verdict against %s", fc.method, fc.params, pg.Decision.ID)
	}
	fc.answer <- callAnswer{raw: json.RawMessage(`{"decision":"decline"}`)}
	waitNote(t, h, protocol.NotifyFullAutoStatusChanged, id, 0, hasState(protocol.FullAutoStopped))
	if _, err := os.Stat(filepath.Join(cwd, "requirements.txt")); err == nil {
		t.Error("the declined change was written")
	}
	var item protocol.FileChangeItem
	for _, e := range filter(h.c.snapshot(), protocol.NotifyItemCompleted, id) {
		var n struct {
			Item protocol.FileChangeItem `json:"item"`
		}
		if json.Unmarshal(e.Params, &n) == nil && len(n.Item.Changes) > 0 {
			item = n.Item
		}
	}
	if item.Alignment == nil || item.Alignment.Status != protocol.AlignmentConflicting {
		t.Errorf("the fileChange item's alignment = %+v, want the verdict", item.Alignment)
	}
	db, _ := h.m.Store()
	rs, _ := db.Receipts(context.Background(), id)
	found := false
	for _, r := range rs {
		found = found || r.Kind == brain.ReceiptKind && !r.Executed && strings.Contains(string(r.Input), "requirements.txt")
	}
	if !found {
		t.Error("no alignment receipt of the stopped change")
	}
}
