package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/store"
)

// Context compaction over the real binary (docs/protocol.md, "Compaction").

const compactMarker = "Compaction request:" // in every summary request apserver sends

// isCompactRequest: the request asks for a handoff summary.
func isCompactRequest(r scripted.Request) bool {
	return strings.Contains(r.LastUserText, compactMarker)
}

// requestTokens is the size of a request as the scripted model reports it
// (100 plus a quarter of the body's bytes).
func requestTokens(r scripted.Request) int { return 100 + len(r.Body)/4 }

// summaries answers summary requests with "Summary #1", "#2", ….
func summaries(n int) scripted.Rule {
	r := scripted.Rule{Match: compactMarker, Sequential: true}
	for i := 1; i <= n; i++ {
		r.Steps = append(r.Steps, scripted.Step{Text: fmt.Sprintf("## Task\nRead the parts.\n## Done\n[completed] Summary #%d of the work so far.", i)})
	}
	return r
}

// writeFile writes size bytes of distinct lines to dir/name.
func writeFile(t *testing.T, dir, name string, size int) {
	t.Helper()
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "%s line %05d: the quick brown fox jumps over the lazy dog\n", name, i)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()[:size]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCompactStartIdle: thread/compact/start on an idle thread answers {}
// and runs a turn holding exactly one contextCompaction item, in the order
// of protocol/codex/CORE.md §9 G (plus Codex's warning after the item).
// The next turn's prompt starts from the summary; thread/read still shows
// every item.
func TestCompactStartIdle(t *testing.T) {
	t.Parallel()
	model := startModel(t, summaries(5),
		scripted.Rule{Match: "first question", Steps: []scripted.Step{{Text: "First answer, about FIRST-DETAIL. " + strings.Repeat("Long explanation. ", 100)}}},
		scripted.Rule{Match: "second question", Steps: []scripted.Step{{Text: "Second answer."}}},
	)
	c := newClient(t, model, options{})
	threadID, _ := c.startThread("never")
	c.runTurn(threadID, "first question")

	resp := c.call("thread/compact/start", map[string]any{"threadId": threadID})
	if string(resp.Result) != "{}" {
		t.Fatalf("thread/compact/start = %s, want {}", resp.Result)
	}
	started := c.waitAfter(resp, "turn/started", nil)
	turnID := started.str("turn.id")
	done := c.turnDone(turnID)
	got := c.labelsBetween(resp, done)
	want := []string{
		"thread/status/changed", "turn/started",
		"item/started", "item/completed", "warning",
		"thread/status/changed",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("notifications after thread/compact/start = %v, want %v\n%s", got, want, c.dump(resp.Seq))
	}
	for _, m := range c.find("", forTurn(turnID)) {
		if strings.HasPrefix(m.Method, "item/") && m.str("item.type") != "contextCompaction" {
			t.Errorf("compaction turn has a %s item", m.str("item.type"))
		}
	}
	if done.str("turn.status") != "completed" || len(done.get("turn.items").([]any)) != 0 {
		t.Errorf("turn/completed = %s, want completed with items []", done.Raw)
	}
	if s := c.find("thread/status/changed", nil); s[len(s)-1].str("status.type") != "idle" {
		t.Errorf("thread ends %s, want idle", s[len(s)-1].Raw)
	}

	c.runTurn(threadID, "second question")
	reqs := modelRequests(model)
	last := reqs[len(reqs)-1]
	if !strings.Contains(string(last.Body), "Summary #1") {
		t.Errorf("the request after the compaction lacks the summary")
	}
	if strings.Contains(string(last.Body), "FIRST-DETAIL") {
		t.Errorf("the request after the compaction still holds the summarized answer")
	}
	if !strings.Contains(string(last.Body), "first question") {
		t.Errorf("the request after the compaction lost the earlier user message")
	}

	// The tombstone keeps everything: thread/read shows the first answer.
	read := c.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	if !strings.Contains(read.Raw, "FIRST-DETAIL") || !strings.Contains(read.Raw, `"contextCompaction"`) {
		t.Errorf("thread/read after a compaction: %s", read.Raw)
	}
}

// TestCompactStartDuringTurn: a compaction started while a turn runs
// replaces that turn (it ends interrupted), then the compaction turn runs;
// steering the compaction turn is refused with activeTurnNotSteerable.
func TestCompactStartDuringTurn(t *testing.T) {
	t.Parallel()
	hang := scripted.Rule{Match: compactMarker, Steps: []scripted.Step{{Hang: true}}}
	model := startModel(t, hang,
		scripted.Rule{Match: "long task", Steps: []scripted.Step{{Deltas: 10, DeltaText: "working ", StallAfter: 2}}},
	)
	c := newClient(t, model, options{})
	threadID, _ := c.startThread("never")
	_, running := c.startTurn(threadID, "long task")
	c.waitFor("item/agentMessage/delta", forTurn(running))

	resp := c.call("thread/compact/start", map[string]any{"threadId": threadID})
	if string(resp.Result) != "{}" {
		t.Fatalf("thread/compact/start = %s, want {}", resp.Result)
	}
	old := c.turnDone(running)
	if old.str("turn.status") != "interrupted" {
		t.Errorf("the running turn ended %s, want interrupted", old.Raw)
	}
	started := c.waitAfter(old, "turn/started", nil)
	compactTurn := started.str("turn.id")
	item := c.waitAfter(started, "item/started", itemOfType(compactTurn, "contextCompaction"))
	if got, want := c.labelsBetween(resp, item), []string{"thread/status/changed", "turn/completed", "thread/status/changed", "turn/started"}; !slices.Equal(got, want) {
		t.Errorf("notifications = %v, want %v\n%s", got, want, c.dump(resp.Seq))
	}

	// Steering (turn/steer, or turn/start on the busy thread) is refused.
	for _, m := range []struct {
		method string
		params map[string]any
	}{
		{"turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": compactTurn, "input": textInput("more")}},
		{"turn/start", map[string]any{"threadId": threadID, "input": textInput("more")}},
	} {
		r := c.request(m.method, m.params)
		if r.Error == nil || r.Error.Code != -32600 {
			t.Fatalf("%s into a compaction turn = %s, want error -32600", m.method, r.Raw)
		}
		if !strings.Contains(string(r.Error.Data), `"codexErrorInfo":{"activeTurnNotSteerable":{"turnKind":"compact"}}`) {
			t.Errorf("%s error data = %s", m.method, r.Error.Data)
		}
	}
	c.call("turn/interrupt", map[string]any{"threadId": threadID, "turnId": compactTurn})
	if d := c.turnDone(compactTurn); d.str("turn.status") != "interrupted" {
		t.Errorf("compaction turn ended %s", d.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(compactTurn, "contextCompaction"))); n != 0 {
		t.Errorf("an interrupted compaction completed its item")
	}
}

// TestCompactionStuckLoop: the model keeps reading files too big for any
// compaction to help (each compaction keeps the step in flight, and that
// alone passes the trigger: each output is cut to its share of the window,
// so the step reads the file five times in parallel). The turn stops after
// 3 automatic compactions with contextWindowExceeded, not after hours.
func TestCompactionStuckLoop(t *testing.T) {
	t.Parallel()
	read := func(name string, times int) scripted.Step {
		var calls []scripted.ToolCall
		for range times {
			calls = append(calls, scripted.ToolCall{Command: "cat " + name})
		}
		return scripted.Step{ToolCalls: calls}
	}
	loop := scripted.Rule{Match: "read everything", Sequential: true, Steps: []scripted.Step{read("small.txt", 1)}}
	for range 10 {
		loop.Steps = append(loop.Steps, read("huge.txt", 5))
	}
	model := startModel(t, summaries(10), loop)
	cfg := "model_auto_compact_token_limit = 4000\n[[models]]\nid = \"scripted-model\"\ncontext_window = 8192\n"
	c := newFAClient(t, model, faOptions{config: cfg})
	threadID, cwd := c.startThread("never")
	writeFile(t, cwd, "small.txt", 2000)
	writeFile(t, cwd, "huge.txt", 12000)
	_, done := c.runTurn(threadID, "read everything")

	if done.str("turn.status") != "failed" || done.str("turn.error.codexErrorInfo") != "contextWindowExceeded" {
		t.Fatalf("turn ended %s, want failed with contextWindowExceeded", done.Raw)
	}
	turnID := done.str("turn.id")
	if n := len(c.find("item/completed", itemOfType(turnID, "contextCompaction"))); n != 3 {
		t.Errorf("%d compactions, want 3", n)
	}
	compactions := 0
	for _, r := range modelRequests(model) {
		if isCompactRequest(r) {
			compactions++
		}
	}
	if compactions != 3 {
		t.Errorf("%d summary requests, want 3", compactions)
	}
}

// TestCompactionFullAutoLongRun is the acceptance run: an 8k-token window,
// tool output that fills it, at least 5 automatic compactions, and the
// objective finished. Every request after a compaction is below the
// trigger and holds AGENTS.md, the objective and the plan verbatim; the
// receipts show the compactions; a restart in the middle resumes from the
// latest compaction.
func TestCompactionFullAutoLongRun(t *testing.T) {
	t.Parallel()
	const (
		parts     = 14
		partBytes = 8800 // about 2,200 tokens: three fill the window
		window    = 8192
		trigger   = window * 9 / 10
		objective = "C-long: read part-01.txt to part-14.txt in order and report when all are read"
		agents    = "AGENTS-RULE: always read the parts in numeric order, never skip one."
		planStep  = "Read every part file in numeric order"
	)
	steps := []scripted.Step{{
		Text: "Starting with part 1.",
		ToolCalls: []scripted.ToolCall{
			{Name: "update_plan", Arguments: `{"plan":[{"step":"` + planStep + `","status":"in_progress"},{"step":"Report that all parts are read","status":"pending"}]}`},
			{Command: "cat part-01.txt"}, {Command: "cat part-01.txt"},
		},
	}}
	// Each output is cut to its share of the window (about a quarter of
	// what the instructions and tools leave), so each step reads its part
	// twice in parallel to fill the window as a whole part once did.
	for i := 2; i <= parts; i++ {
		cat := scripted.ToolCall{Command: fmt.Sprintf("cat part-%02d.txt", i)}
		steps = append(steps, scripted.Step{ToolCalls: []scripted.ToolCall{cat, cat}})
	}
	steps = append(steps, scripted.Step{Text: "The task is complete: all 14 parts are read."})
	model := startModel(t, summaries(40), scripted.Rule{Match: "C-long", Sequential: true, Steps: steps})

	dataDir := t.TempDir()
	cfg := fmt.Sprintf("[[models]]\nid = \"scripted-model\"\ncontext_window = %d\n", window)
	c := newFAClient(t, model, faOptions{dataDir: dataDir, config: cfg})
	threadID, cwd := c.startThread("never")
	if err := os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte(agents+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= parts; i++ {
		writeFile(t, cwd, fmt.Sprintf("part-%02d.txt", i), partBytes)
	}
	c.startFullAuto(threadID, map[string]any{"objective": objective, "approvals": "never"})

	// Restart after the second compaction.
	first := c.waitFor("item/completed", func(m *message) bool { return m.str("item.type") == "contextCompaction" })
	c.waitAfter(first, "item/completed", func(m *message) bool { return m.str("item.type") == "contextCompaction" })
	c.kill()
	before := len(modelRequests(model))

	c2 := newFAClient(t, model, faOptions{dataDir: dataDir, config: cfg})
	end := c2.runEndedStepwise(threadID)
	if end.str("run.stopCondition") != "completed" {
		t.Fatalf("run ended %s, want completed", end.Raw)
	}

	// The first request after the restart starts from the latest
	// compaction stored before it.
	read := c2.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	reqs := modelRequests(model)
	var firstAfter *scripted.Request
	for i := before; i < len(reqs); i++ {
		if !isCompactRequest(reqs[i]) && !reqs[i].Partial { // not one cut by the kill
			firstAfter = &reqs[i]
			break
		}
	}
	if firstAfter == nil {
		t.Fatal("no model request after the restart")
	}
	body := string(firstAfter.Body)
	var present []int
	for k := 1; k <= 40; k++ {
		if strings.Contains(body, fmt.Sprintf("Summary #%d ", k)) {
			present = append(present, k)
		}
	}
	if len(present) != 1 || present[0] < 2 {
		t.Errorf("first request after the restart holds summaries %v, want only the latest (at least #2)", present)
	}
	if strings.Contains(body, "part-01.txt line") {
		t.Errorf("first request after the restart holds output the compactions replaced")
	}

	// Every request after a compaction: below the trigger, with AGENTS.md,
	// the objective and the plan verbatim.
	compactions, seenCompaction := 0, false
	for _, r := range reqs {
		if r.Partial {
			// Cut short by the kill above while it was being sent: the
			// restarted process sends the step again, whole.
			continue
		}
		if isCompactRequest(r) {
			compactions++
			seenCompaction = true
			continue
		}
		if !seenCompaction {
			continue
		}
		seenCompaction = false
		b := string(r.Body)
		if n := requestTokens(r); n >= trigger {
			t.Errorf("request after compaction %d has %d tokens, trigger %d", compactions, n, trigger)
		}
		for _, want := range []string{agents, objective, planStep} {
			if !strings.Contains(b, want) {
				t.Errorf("request after compaction %d lacks %q", compactions, want)
			}
		}
	}
	if compactions < 5 {
		t.Errorf("%d compactions, want at least 5", compactions)
	}
	if got := strings.Count(read.Raw, `"type":"contextCompaction"`); got != compactions {
		t.Errorf("thread/read shows %d contextCompaction items, the model got %d summary requests", got, compactions)
	}

	// The receipts record the compactions, and replay agrees with them.
	c2.close()
	out, err := exec.Command(binPath, "replay", "--data-dir", dataDir, threadID).CombinedOutput()
	if err != nil {
		t.Fatalf("apserver replay: %v\n%s", err, out)
	}
	db, err := store.OpenReadOnly(filepath.Join(dataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Receipts(context.Background(), threadID)
	if err != nil {
		t.Fatal(err)
	}
	recorded := 0
	for _, r := range rs {
		var in struct {
			Turn struct {
				Compactions  int     `json:"compactions"`
				ContextRatio float64 `json:"contextRatio"`
			} `json:"turn"`
		}
		if json.Unmarshal(r.Input, &in) == nil && in.Turn.Compactions > 0 {
			recorded += in.Turn.Compactions
			if in.Turn.ContextRatio <= 0 || in.Turn.ContextRatio >= 0.9 {
				t.Errorf("receipt %s: context ratio %v after compaction", r.ID, in.Turn.ContextRatio)
			}
		}
	}
	if recorded == 0 {
		t.Errorf("no receipt records a compaction")
	}
}

// TestCompactionRefusedAndOverflow: a compaction whose result would not be
// smaller than what it replaces is refused (a client's compaction turn
// completes with a warning, the history stays); a summary request the model rejects as too long is retried
// without the oldest entry.
func TestCompactionRefusedAndOverflow(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		model := startModel(t, summaries(3), scripted.Rule{Match: "hi", Steps: []scripted.Step{{Text: "Hello, TINY-DETAIL."}}})
		c := newClient(t, model, options{})
		threadID, _ := c.startThread("never")
		c.runTurn(threadID, "hi")
		resp := c.call("thread/compact/start", map[string]any{"threadId": threadID})
		turnID := c.waitAfter(resp, "turn/started", nil).str("turn.id")
		done := c.turnDone(turnID)
		if done.str("turn.status") != "completed" {
			t.Fatalf("compaction of a tiny thread ended %s, want completed (nothing to do is not an error)", done.Raw)
		}
		warn := c.after(resp, "warning", func(m *message) bool { return strings.Contains(m.str("message"), "would not shrink") })
		if len(warn) != 1 {
			t.Errorf("%d warnings saying the compaction would not shrink the context, want 1\n%s", len(warn), c.dump(resp.Seq))
		}
		if n := len(c.find("error", forTurn(turnID))); n != 0 {
			t.Errorf("a refused compaction sent %d error notifications", n)
		}
		if s := c.find("thread/status/changed", nil); s[len(s)-1].str("status.type") != "idle" {
			t.Errorf("thread ends %s, want idle", s[len(s)-1].Raw)
		}
		c.runTurn(threadID, "hi again")
		reqs := modelRequests(model)
		if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "TINY-DETAIL") || strings.Contains(last, "Summary #") {
			t.Errorf("after a refused compaction the history changed")
		}
	})
	t.Run("overflow", func(t *testing.T) {
		t.Parallel()
		overflow := scripted.Rule{Match: compactMarker, Steps: []scripted.Step{{
			HTTPError: 400, ErrorMessage: "context_length_exceeded: the input is too long", FailTimes: 2,
			Text: "## Task\nSummary after dropping the oldest entries.",
		}}}
		model := startModel(t, overflow, scripted.Rule{Match: "question", Steps: []scripted.Step{{Text: strings.Repeat("A long answer. ", 200)}}})
		c := newClient(t, model, options{})
		threadID, _ := c.startThread("never")
		c.runTurn(threadID, "OLDEST question")
		c.runTurn(threadID, "newer question")
		resp := c.call("thread/compact/start", map[string]any{"threadId": threadID})
		done := c.turnDone(c.waitAfter(resp, "turn/started", nil).str("turn.id"))
		if done.str("turn.status") != "completed" {
			t.Fatalf("compaction ended %s", done.Raw)
		}
		var sizes []int
		var firstHasOldest, lastHasOldest bool
		for _, r := range modelRequests(model) {
			if isCompactRequest(r) {
				sizes = append(sizes, len(r.Body))
				has := strings.Contains(r.LastUserText, "OLDEST question")
				if len(sizes) == 1 {
					firstHasOldest = has
				}
				lastHasOldest = has
			}
		}
		if len(sizes) != 3 || !(sizes[0] > sizes[1] && sizes[1] > sizes[2]) {
			t.Errorf("summary request sizes %v, want 3, each smaller than the one before", sizes)
		}
		if !firstHasOldest || lastHasOldest {
			t.Errorf("the oldest entry was not the one dropped (first has it: %v, last has it: %v)", firstHasOldest, lastHasOldest)
		}
	})
}

// TestCompactionHandoff: when compaction keeps leaving the context above
// 75% of the window (twice in a row: each big read is kept as the step in
// flight; each output is cut to its share of the window, so a step reads
// its file three times in parallel), full auto does not compact again:
// it continues the run in a fresh thread, started with the objective, the
// plan and the latest summary. The old run stops with stopCondition
// "handoff", its receipt says so, and replay agrees.
func TestCompactionHandoff(t *testing.T) {
	t.Parallel()
	const objective = "C-handoff: read the three big files"
	read := func(name string) scripted.Step {
		return scripted.Step{ToolCalls: []scripted.ToolCall{{Command: "cat " + name}, {Command: "cat " + name}, {Command: "cat " + name}}}
	}
	steps := []scripted.Step{
		{Text: "Planning.", ToolCalls: []scripted.ToolCall{
			{Name: "update_plan", Arguments: `{"plan":[{"step":"Read the big files","status":"in_progress"}]}`},
			{Command: "cat big1.txt"}, {Command: "cat big1.txt"}, {Command: "cat big1.txt"},
		}},
		read("big2.txt"), // compaction, the read kept: above 75%
		read("big3.txt"), // again: the run hands off after this turn
		{Text: "Read three files; one more check to do."},
		{Text: "The task is complete: all big files are read."},
	}
	model := startModel(t, summaries(10), scripted.Rule{Match: "C-handoff", Sequential: true, Steps: steps})
	dataDir := t.TempDir()
	c := newFAClient(t, model, faOptions{dataDir: dataDir, config: "[[models]]\nid = \"scripted-model\"\ncontext_window = 8192\n"})
	threadID, cwd := c.startThread("never")
	for _, name := range []string{"big1.txt", "big2.txt", "big3.txt"} {
		writeFile(t, cwd, name, 16000)
	}
	c.startFullAuto(threadID, map[string]any{"objective": objective, "approvals": "never"})

	old := c.runEnded(threadID)
	if old.str("run.stopCondition") != "handoff" {
		for _, r := range modelRequests(model) {
			t.Logf("request compact=%v tokens=%d last=%.60q", isCompactRequest(r), requestTokens(r), r.LastUserText)
		}
		t.Fatalf("run ended %s, want stopCondition handoff", old.Raw)
	}
	started := c.waitFor("thread/started", func(m *message) bool { return m.str("thread.id") != threadID })
	fresh := started.str("thread.id")
	if !strings.Contains(old.str("reason"), fresh) {
		t.Errorf("the stopped run does not name the fresh thread %s: %s", fresh, old.str("reason"))
	}
	end := c.runEnded(fresh)
	if end.str("run.stopCondition") != "completed" || end.str("run.objective") != objective {
		t.Fatalf("fresh thread's run ended %s", end.Raw)
	}
	var first *scripted.Request
	for _, r := range modelRequests(model) {
		if !isCompactRequest(r) && strings.Contains(r.LastUserText, "continues from thread "+threadID) {
			first = &r
			break
		}
	}
	if first == nil {
		t.Fatal("no request started from the handoff")
	}
	for _, want := range []string{objective, "Read the big files", "Summary #2 "} {
		if !strings.Contains(first.LastUserText, want) {
			t.Errorf("the handoff lacks %q:\n%s", want, first.LastUserText)
		}
	}
	if strings.Contains(string(first.Body), "big1.txt line") || requestTokens(*first) > 4000 {
		t.Errorf("the fresh thread's first request carries the old context (%d tokens)", requestTokens(*first))
	}

	c.close()
	if out, err := exec.Command(binPath, "replay", "--data-dir", dataDir, threadID).CombinedOutput(); err != nil {
		t.Fatalf("apserver replay: %v\n%s", err, out)
	}
	db, err := store.OpenReadOnly(filepath.Join(dataDir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Receipts(context.Background(), threadID)
	if err != nil {
		t.Fatal(err)
	}
	if last := rs[len(rs)-1]; last.Override != "handoff" {
		t.Errorf("last receipt override %q, want handoff", last.Override)
	}
}

// TestCompactStartDuringFullAutoRun: a client's thread/compact/start while
// a full-auto run's turn streams replaces that turn with the compaction
// turn. The run is not paused by it: the replaced turn is counted but not
// decided on, the decision comes after the compaction turn, and the run
// goes on, one turn at a time, from the compacted history to completion.
func TestCompactStartDuringFullAutoRun(t *testing.T) {
	t.Parallel()
	model := startModel(t, summaries(3),
		scripted.Rule{Match: `turn="4"`, Steps: []scripted.Step{{Text: "Checked everything. The task is complete."}}},
		scripted.Rule{Match: `turn="3"`, Steps: []scripted.Step{{Text: "Step three done; more to do."}}},
		scripted.Rule{Match: "C-run", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Command: "cat big.txt"}}},
			{Deltas: 10, DeltaText: "working ", StallAfter: 2},
		}},
	)
	c := newFAClient(t, model, faOptions{})
	threadID, cwd := c.startThread("never")
	writeFile(t, cwd, "big.txt", 12000)
	run := c.startFullAuto(threadID, map[string]any{"objective": "C-run: do the steps", "budgets": map[string]any{"turns": 8}})
	first := c.waitAfter(run, "turn/started", nil).str("turn.id")
	c.waitFor("item/agentMessage/delta", forTurn(first))

	resp := c.call("thread/compact/start", map[string]any{"threadId": threadID})
	if d := c.turnDone(first); d.str("turn.status") != "interrupted" {
		t.Fatalf("the run's turn ended %s, want interrupted", d.Raw)
	}
	compactTurn := c.waitAfter(resp, "turn/started", nil).str("turn.id")
	if d := c.turnDone(compactTurn); d.str("turn.status") != "completed" {
		t.Fatalf("the compaction turn ended %s", d.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(compactTurn, "contextCompaction"))); n != 1 {
		t.Fatalf("compaction turn completed %d contextCompaction items, want 1", n)
	}
	end := c.runEnded(threadID)
	if got := end.str("run.stopCondition"); got != "completed" {
		t.Fatalf("run ended %s, want completed:\n%s", got, c.dump(run.Seq))
	}
	if got := end.get("run.spent.turns"); got != 4.0 {
		t.Errorf("run spent %v turns, want 4 (the replaced one, the compaction and two more)", got)
	}
	for _, m := range c.after(run, "fullAuto/statusChanged", nil) {
		if st := m.str("state"); st != "running" && st != "stopped" {
			t.Errorf("the run went %s: %s", st, m.Raw)
		}
	}
	decisions := c.after(run, "fullAuto/decision", nil)
	if len(decisions) != 3 {
		t.Errorf("%d decisions, want 3 (after the compaction turn and the two after it)", len(decisions))
	}
	for _, d := range decisions {
		if d.str("turnId") == first {
			t.Errorf("the replaced turn was decided on: %s", d.Raw)
		}
	}
	// One turn at a time: every turn/started comes after the previous
	// turn's turn/completed.
	running := ""
	for _, m := range c.after(run, "", nil) {
		switch m.Method {
		case "turn/started":
			if running != "" {
				t.Errorf("turn %s started while %s ran", m.str("turn.id"), running)
			}
			running = m.str("turn.id")
		case "turn/completed":
			running = ""
		}
	}
	// The turns after the compaction start from its summary, not from the
	// file the replaced turn read.
	var after []scripted.Request
	for _, r := range modelRequests(model) {
		if strings.Contains(r.LastUserText, `turn="3"`) || strings.Contains(r.LastUserText, `turn="4"`) {
			after = append(after, r)
		}
	}
	if len(after) != 2 {
		t.Fatalf("%d requests for turns 3 and 4, want 2", len(after))
	}
	for _, r := range after {
		body := string(r.Body)
		if !strings.Contains(body, "Summary #1") || strings.Contains(body, "big.txt line 00100") || !strings.Contains(body, "C-run: do the steps") {
			t.Errorf("a request after the compaction: summary %v, file content %v, objective %v",
				strings.Contains(body, "Summary #1"), strings.Contains(body, "big.txt line 00100"), strings.Contains(body, "C-run: do the steps"))
		}
	}
}

// TestCompactionOnOverflow: a model whose window apserver does not know
// refuses a request as too long. The turn compacts and sends the request
// again, and goes on from the summary; the refusal teaches apserver the
// window, so a later request that grows past it is compacted before it is
// sent; a request refused again after its compaction ends the turn with
// contextWindowExceeded instead of looping.
func TestCompactionOnOverflow(t *testing.T) {
	t.Parallel()
	tooLong := func(failTimes int, text string) scripted.Step {
		return scripted.Step{HTTPError: 400, ErrorMessage: "This model's maximum context length is 8192 tokens (context_length_exceeded)", FailTimes: failTimes, Text: text}
	}
	model := startModel(t, summaries(5),
		scripted.Rule{Match: "first question", Steps: []scripted.Step{{Text: "First answer, about FIRST-DETAIL. " + strings.Repeat("Long explanation. ", 2400)}}},
		scripted.Rule{Match: "second question", Steps: []scripted.Step{tooLong(1, "Second answer.")}},
		scripted.Rule{Match: "third question", Steps: []scripted.Step{tooLong(0, "")}},
		scripted.Rule{Match: "fourth question", Steps: []scripted.Step{{Text: "Fourth answer. " + strings.Repeat("A much longer explanation. ", 2500)}}},
		scripted.Rule{Match: "fifth question", Steps: []scripted.Step{{Text: "Fifth answer."}}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, firstDone := c.runTurn(threadID, "first question")
	first := firstDone.str("turn.id")

	_, second := c.startTurn(threadID, "second question")
	done := c.turnDone(second)
	if done.str("turn.status") != "completed" {
		t.Fatalf("the refused turn ended %s, want completed after a compaction", done.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(second, "contextCompaction"))); n != 1 {
		t.Errorf("%d contextCompaction items in the refused turn, want 1", n)
	}
	var asks []string
	for _, r := range modelRequests(model) {
		if !isCompactRequest(r) && strings.Contains(r.LastUserText, "second question") {
			asks = append(asks, string(r.Body))
		}
	}
	if len(asks) != 2 {
		t.Fatalf("%d requests for the second question, want 2 (refused, then sent again)", len(asks))
	}
	if !strings.Contains(asks[1], "Summary #1") || strings.Contains(asks[1], "FIRST-DETAIL") {
		t.Errorf("the request sent again does not start from the summary")
	}

	// The refusal taught apserver the window (at most the refused
	// request's size): a request that grows past 90% of it is compacted
	// before it is sent, not refused first.
	c.runTurn(threadID, "fourth question")
	_, fifth := c.startTurn(threadID, "fifth question")
	if d := c.turnDone(fifth); d.str("turn.status") != "completed" {
		t.Fatalf("fifth turn ended %s", d.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(fifth, "contextCompaction"))); n != 1 {
		t.Errorf("%d contextCompaction items before the grown request, want 1 (the learned window)", n)
	}
	// The client's context meter knows the window too, once learned.
	if u := c.find("thread/tokenUsage/updated", forTurn(first)); len(u) == 0 || u[0].get("tokenUsage.modelContextWindow") != nil {
		t.Errorf("before the refusal the window is unknown: %v", u)
	}
	if u := c.find("thread/tokenUsage/updated", forTurn(fifth)); len(u) == 0 || u[0].get("tokenUsage.modelContextWindow") == nil {
		t.Errorf("after the refusal thread/tokenUsage/updated has no modelContextWindow: %v", u)
	}

	_, third := c.startTurn(threadID, "third question")
	end := c.turnDone(third)
	if end.str("turn.status") != "failed" || end.str("turn.error.codexErrorInfo") != "contextWindowExceeded" {
		t.Fatalf("a turn refused after its compaction ended %s, want failed with contextWindowExceeded", end.Raw)
	}
	n := 0
	for _, r := range modelRequests(model) {
		if !isCompactRequest(r) && strings.Contains(r.LastUserText, "third question") {
			n++
		}
	}
	if n > 2 {
		t.Errorf("the third question was sent %d times, want at most 2 (once more after one compaction)", n)
	}
}

// TestLearnedWindowPerProvider: two providers serve a model of the same
// name with different windows that no configuration gives. The first
// refuses a request as too long, and apserver learns its window; a thread
// on the second provider, whose window is larger, sends a request of the
// same size without compacting it first: a learned window belongs to the
// provider that refused, not to every model of that name.
func TestLearnedWindowPerProvider(t *testing.T) {
	t.Parallel()
	long := "First answer. " + strings.Repeat("Long explanation. ", 2400)
	small := startModel(t, summaries(5),
		scripted.Rule{Match: "first question", Steps: []scripted.Step{{Text: long}}},
		scripted.Rule{Match: "second question", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "This model's maximum context length is 8192 tokens (context_length_exceeded)", FailTimes: 1, Text: "Second answer."}}},
	)
	large := startModel(t, summaries(5),
		scripted.Rule{Match: "first question", Steps: []scripted.Step{{Text: long}}},
		scripted.Rule{Match: "second question", Steps: []scripted.Step{{Text: "Second answer from the large window."}}},
	)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	text := fmt.Sprintf("[providers.large]\nbase_url = %q\n", large.URL()+"/v1")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, small, options{args: []string{"--config", cfg}, inProcess: true})

	// The small provider refuses the second question: apserver compacts,
	// sends it again and learns the window.
	threadA, _ := c.startThread("never")
	c.runTurn(threadA, "first question")
	_, second := c.startTurn(threadA, "second question")
	if d := c.turnDone(second); d.str("turn.status") != "completed" {
		t.Fatalf("the refused turn ended %s, want completed after a compaction", d.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(second, "contextCompaction"))); n != 1 {
		t.Fatalf("%d contextCompaction items in the refused turn, want 1", n)
	}

	// The same model name on the large provider: the same conversation is
	// sent as it is, and the client is not told the small window.
	start := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "model": "scripted-model", "modelProvider": "large", "approvalPolicy": "never"})
	threadB := start.str("thread.id")
	if start.str("modelProvider") != "large" {
		t.Fatalf("thread/start modelProvider = %q, want large", start.str("modelProvider"))
	}
	c.runTurn(threadB, "first question")
	_, secondB := c.startTurn(threadB, "second question")
	if d := c.turnDone(secondB); d.str("turn.status") != "completed" {
		t.Fatalf("the large provider's turn ended %s", d.Raw)
	}
	if n := len(c.find("item/completed", itemOfType(secondB, "contextCompaction"))); n != 0 {
		t.Errorf("%d contextCompaction items on the large provider, want 0: the small provider's window was applied to it", n)
	}
	for _, r := range modelRequests(large) {
		if isCompactRequest(r) {
			t.Errorf("the large provider was asked for a summary")
		}
	}
	if u := c.find("thread/tokenUsage/updated", forTurn(secondB)); len(u) == 0 || u[0].get("tokenUsage.modelContextWindow") != nil {
		t.Errorf("the large provider's thread was told a context window: %v", u)
	}
	if u := c.find("thread/tokenUsage/updated", forTurn(second)); len(u) == 0 || u[0].get("tokenUsage.modelContextWindow") == nil {
		t.Errorf("the small provider's thread was not told its learned window: %v", u)
	}
}

// TestMessageLargerThanWindow: a user message that alone is larger than
// the model's window fails its turn at once, saying so with the sizes, and
// nothing is sent to the model (no summary request that could not help,
// no request the provider would refuse). The thread stays usable: the next
// message is answered, and the model never sees the oversized one.
func TestMessageLargerThanWindow(t *testing.T) {
	t.Parallel()
	model := startModel(t, summaries(5),
		scripted.Rule{Match: "small question", Steps: []scripted.Step{{Text: "Small answer."}}},
	)
	c := newFAClient(t, model, faOptions{config: "[[models]]\nid = \"scripted-model\"\ncontext_window = 8192\n", inProcess: true})
	threadID, _ := c.startThread("never")
	big := "BIG-MESSAGE " + strings.Repeat("All work and no play makes Jack a dull boy. ", 2000) // 88 kB, about 22,000 tokens
	_, turnID := c.startTurn(threadID, big)
	done := c.turnDone(turnID)
	if done.str("turn.status") != "failed" || done.str("turn.error.codexErrorInfo") != "contextWindowExceeded" {
		t.Fatalf("turn ended %s, want failed with contextWindowExceeded", done.Raw)
	}
	msg := done.str("turn.error.message")
	for _, want := range []string{"the message alone is larger than the model's context window", fmt.Sprintf("(%d bytes)", len(big)), "8192 tokens", "nothing was sent"} {
		if !strings.Contains(msg, want) {
			t.Errorf("turn error %q does not say %q", msg, want)
		}
	}
	if n := len(modelRequests(model)); n != 0 {
		t.Errorf("the model got %d requests for a message larger than its window, want 0", n)
	}
	// The user's message is still an item of the turn, whole.
	items := c.find("item/completed", itemOfType(turnID, "userMessage"))
	if len(items) != 1 || items[0].str("item.content.0.text") != big {
		t.Errorf("the oversized message is not a whole userMessage item (%d items)", len(items))
	}
	_, next := c.runTurn(threadID, "small question")
	if next.str("turn.status") != "completed" {
		t.Fatalf("the next turn ended %s", next.Raw)
	}
	for _, r := range modelRequests(model) {
		if strings.Contains(string(r.Body), "BIG-MESSAGE") {
			t.Errorf("a model request holds the oversized message")
		}
	}
}

// TestCompactionSmallWindowLongToolOutput: a full-auto run on an 8k-token
// window whose check prints some 2,600 lines, in every turn. A tool output
// that alone would fill most of the window is cut for the model to a
// budget of the window (head and tail kept, the middle elided with a
// marker saying how to read the rest), so the compactions keep making
// room and the run goes on to the end. The commandExecution item the
// client gets still holds the whole output, and the model can page
// through it with read_output.
func TestCompactionSmallWindowLongToolOutput(t *testing.T) {
	t.Parallel()
	const (
		window    = 8192
		objective = "C-small: print the long log in every turn and report"
		turns     = 16
	)
	// Each turn's check, its whole output, and the id a cut names the
	// output by (16 hex digits of its SHA-256). The output differs from
	// turn to turn, as a log's times do: the same result every time would
	// be a stuck loop to full auto.
	check := func(n int) string { return fmt.Sprintf("seq -f 'test case %%04g of the suite, run %d: ok' 1 2600", n) }
	whole := func(n int) string {
		var b strings.Builder
		for i := 1; i <= 2600; i++ {
			fmt.Fprintf(&b, "test case %04d of the suite, run %d: ok\n", i, n)
		}
		return b.String()
	}
	sum := sha256.Sum256([]byte(whole(2)))
	outputID := hex.EncodeToString(sum[:8])
	rules := []scripted.Rule{summaries(60)}
	for n := turns; n >= 1; n-- {
		match := fmt.Sprintf(`turn="%d"`, n)
		if n == 1 {
			match = "C-small"
		}
		steps := []scripted.Step{{Text: fmt.Sprintf("Printing the log, turn %d.", n), ToolCalls: []scripted.ToolCall{{Command: check(n)}}}}
		if n == 2 {
			// Page through the rest of the output the marker names.
			steps = append(steps, scripted.Step{ToolCalls: []scripted.ToolCall{{Name: "read_output", Arguments: `{"id":"` + outputID + `","offset":1300,"limit":3}`}}})
		}
		final := fmt.Sprintf("Turn %d: the log is printed; more next turn.", n)
		if n == turns {
			final = "The task is complete: the log was printed in every turn."
		}
		steps = append(steps, scripted.Step{Text: final})
		rules = append(rules, scripted.Rule{Match: match, Steps: steps})
	}
	model := startModel(t, rules...)
	cfg := fmt.Sprintf("[[models]]\nid = \"scripted-model\"\ncontext_window = %d\n", window)
	c := newFAClient(t, model, faOptions{config: cfg, inProcess: true})
	threadID, cwd := c.startThread("never")
	// A workspace's instructions take their part of the window too.
	agents := strings.Repeat("AGENTS-RULE: keep every log line as the suite prints it.\n", 40) // 2.3 kB
	if err := os.WriteFile(filepath.Join(cwd, "AGENTS.md"), []byte(agents), 0o644); err != nil {
		t.Fatal(err)
	}
	c.startFullAuto(threadID, map[string]any{"objective": objective, "approvals": "never"})
	end := c.runEndedStepwise(threadID)
	if end.str("run.stopCondition") != "completed" {
		t.Fatalf("run ended %s, want completed", end.Raw)
	}

	// Every commandExecution item holds the whole output.
	cmds := c.find("item/completed", func(m *message) bool {
		return m.str("threadId") == threadID && m.str("item.type") == "commandExecution"
	})
	if len(cmds) < turns {
		t.Fatalf("%d commandExecution items, want %d", len(cmds), turns)
	}
	for i, m := range cmds {
		out := m.str("item.aggregatedOutput")
		if out != whole(i+1) {
			t.Errorf("commandExecution item holds %d lines, want the whole 2,600", strings.Count(out, "\n"))
		}
	}
	// The model saw the head and tail of each output, a marker in place of
	// the middle, and never a request past the window.
	var sawMarker bool
	for _, r := range modelRequests(model) {
		if n := requestTokens(r); n > window {
			t.Errorf("a request of %d tokens, past the %d-token window", n, window)
		}
		body := string(r.Body)
		if strings.Contains(body, "test case 0001 of the suite, run 2") && strings.Contains(body, "test case 2600 of the suite, run 2") &&
			!strings.Contains(body, "test case 1300 of the suite") && strings.Contains(body, `read_output {\"id\": \"`+outputID) {
			sawMarker = true
		}
	}
	if !sawMarker {
		t.Errorf("no request shows an output cut to its head and tail with a read_output marker")
	}
	// read_output returned the lines asked for, from the whole output.
	var paged bool
	for _, r := range modelRequests(model) {
		if body := string(r.Body); strings.Contains(body, "Lines 1300 to 1302 of 2600 of output "+outputID) {
			if strings.Contains(body, "test case 1302 of the suite, run 2: ok") &&
				!strings.Contains(body, "test case 1303 of the suite") {
				paged = true
			}
		}
	}
	if !paged {
		t.Errorf("no request holds read_output's page of lines 1300 to 1302")
	}
	// The run went on through its compactions.
	if n := len(c.find("item/completed", func(m *message) bool { return m.str("item.type") == "contextCompaction" })); n < 2 {
		t.Errorf("%d compactions, want at least 2: the window is meant to fill", n)
	}
}

// TestMessageLargerThanLearnedWindow: the same, on a model whose window no
// configuration gives. The provider refuses the request as too long; the
// window learned from that refusal (an upper bound) shows that the
// message with the instructions and tools fills it, so the turn fails
// saying so, without a summary request that could
// not help (a compaction keeps the latest message verbatim).
func TestMessageLargerThanLearnedWindow(t *testing.T) {
	t.Parallel()
	model := startModel(t, summaries(5),
		scripted.Rule{Match: "BIG-MESSAGE", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "This model's maximum context length is 8192 tokens (context_length_exceeded)"}}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	big := "BIG-MESSAGE " + strings.Repeat("All work and no play makes Jack a dull boy. ", 2000)
	_, turnID := c.startTurn(threadID, big)
	done := c.turnDone(turnID)
	if done.str("turn.status") != "failed" || done.str("turn.error.codexErrorInfo") != "contextWindowExceeded" {
		t.Fatalf("turn ended %s, want failed with contextWindowExceeded", done.Raw)
	}
	msg := done.str("turn.error.message")
	for _, want := range []string{"the message does not fit the model's context window", fmt.Sprintf("(%d bytes)", len(big)), "window is at most", "refused it as too long"} {
		if !strings.Contains(msg, want) {
			t.Errorf("turn error %q does not say %q", msg, want)
		}
	}
	reqs := modelRequests(model)
	for _, r := range reqs {
		if isCompactRequest(r) {
			t.Errorf("a summary request was sent for a message larger than the window")
		}
	}
	if len(reqs) != 1 {
		t.Errorf("the model got %d requests, want 1 (the one it refused)", len(reqs))
	}
}
