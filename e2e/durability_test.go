package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestResumeAfterKill kills apserver with SIGKILL in the middle of a turn,
// after a command completed and while the next model response stalls, and
// checks that nothing completed is lost (docs/architecture.md Durability).
func TestResumeAfterKill(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "follow up", Steps: []scripted.Step{{Text: "Following up."}}},
		scripted.Rule{Match: "durable", Steps: []scripted.Step{
			{Text: "Checking first.", ToolCalls: []scripted.ToolCall{{Command: "echo durable-output"}}},
			{Deltas: 10, DeltaText: "partial ", StallAfter: 2},
		}},
	)
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "a durable turn please")
	c.waitFor("item/completed", itemOfType(turnID, "commandExecution"))
	waitModelRequests(t, model, 2)
	c.waitFor("item/agentMessage/delta", func(m *message) bool {
		return forTurn(turnID)(m) && strings.HasPrefix(m.str("delta"), "partial ") // deltas may arrive coalesced
	})

	completed := map[string]string{} // item id → type
	for _, m := range c.find("item/completed", forTurn(turnID)) {
		completed[m.str("item.id")] = m.str("item.type")
	}
	for _, typ := range []string{"userMessage", "agentMessage", "commandExecution"} {
		if !slices.Contains(mapValues(completed), typ) {
			t.Fatalf("before the kill: no completed %s item (have %v)", typ, completed)
		}
	}
	c.kill()

	c2 := newClient(t, model, options{dataDir: dataDir})
	rd := c2.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	if got := rd.str("thread.turns.0.status"); got != "interrupted" {
		t.Errorf("thread/read after the kill: turn status %q, want interrupted", got)
	}
	r := c2.call("thread/resume", map[string]any{"threadId": threadID})
	if got := r.str("thread.id"); got != threadID {
		t.Fatalf("thread/resume thread.id = %q, want %q", got, threadID)
	}
	turns, _ := r.get("thread.turns").([]any)
	if len(turns) != 1 {
		t.Fatalf("resumed thread has %d turns, want 1: %s", len(turns), r.Raw)
	}
	turn := turns[0]
	if jget(turn, "id") != turnID || jget(turn, "status") != "interrupted" {
		t.Errorf("resumed turn id %v status %v, want %s interrupted", jget(turn, "id"), jget(turn, "status"), turnID)
	}
	got := map[string]string{}
	items, _ := jget(turn, "items").([]any)
	for _, it := range items {
		got[fmt.Sprint(jget(it, "id"))] = fmt.Sprint(jget(it, "type"))
		if jget(it, "type") == "commandExecution" {
			if out := fmt.Sprint(jget(it, "aggregatedOutput")); !strings.Contains(out, "durable-output") {
				t.Errorf("resumed commandExecution aggregatedOutput = %q, want durable-output", out)
			}
			if jget(it, "status") != "completed" {
				t.Errorf("resumed commandExecution status = %v, want completed", jget(it, "status"))
			}
		}
	}
	for id, typ := range completed {
		if got[id] != typ {
			t.Errorf("completed %s item %s missing after the restart (resumed items: %v)", typ, id, got)
		}
	}
	if len(got) != len(completed) {
		t.Errorf("resumed turn items = %v, want exactly the completed ones %v", got, completed)
	}

	before := len(modelRequests(model))
	_, done := c2.runTurn(threadID, "follow up please")
	if got := done.str("turn.status"); got != "completed" {
		t.Errorf("turn after resume: status %q, want completed", got)
	}
	reqs := modelRequests(model)
	if len(reqs) != before+1 {
		t.Fatalf("model requests after resume turn = %d, want %d", len(reqs), before+1)
	}
	body := string(reqs[len(reqs)-1].Body)
	for _, want := range []string{"a durable turn please", "Checking first.", "durable-output", "follow up please"} {
		if !strings.Contains(body, want) {
			t.Errorf("model request after resume lacks %q from the history:\n%s", want, body)
		}
	}
}

func mapValues(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// TestCleanRestart closes stdin, expects exit status 0, and finds the thread
// again after a restart.
func TestCleanRestart(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "", Steps: []scripted.Step{{Text: "Stored answer."}}})
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir})
	threadID, _ := c.startThread("never")
	_, done := c.runTurn(threadID, "keep this")
	turnID := done.str("turn.id")
	if err := c.close(); err != nil {
		t.Errorf("apserver exit after stdin EOF: %v, want status 0", err)
	}

	c2 := newClient(t, model, options{dataDir: dataDir})
	ids, _ := c2.listIDs(map[string]any{})
	if !slices.Equal(ids, []string{threadID}) {
		t.Errorf("thread/list after restart = %q, want [%s]", ids, threadID)
	}
	lr := c2.call("thread/list", map[string]any{})
	if got := jget(lr.get("data"), "0.status.type"); got != "notLoaded" {
		t.Errorf("thread/list after restart: status %v, want notLoaded (protocol/codex/CORE.md §5)", got)
	}
	r := c2.call("thread/resume", map[string]any{"threadId": threadID})
	if got := c2.find("thread/started", nil); len(got) != 0 {
		t.Errorf("thread/resume sent thread/started (protocol/codex/CORE.md §5: it must not): %v", got)
	}
	turns, _ := r.get("thread.turns").([]any)
	if len(turns) != 1 || jget(turns[0], "id") != turnID || jget(turns[0], "status") != "completed" {
		t.Errorf("resumed turns = %v, want one completed turn %s", r.get("thread.turns"), turnID)
	}
	var texts []string
	if len(turns) == 1 {
		items, _ := jget(turns[0], "items").([]any)
		for _, it := range items {
			texts = append(texts, fmt.Sprint(jget(it, "type")))
		}
	}
	if !slices.Equal(texts, []string{"userMessage", "agentMessage"}) {
		t.Errorf("resumed turn item types = %q, want [userMessage agentMessage]", texts)
	}
	_, done2 := c2.runTurn(threadID, "again")
	if got := done2.str("turn.status"); got != "completed" {
		t.Errorf("turn after clean restart: status %q, want completed", got)
	}
}

// TestKillWhileAwaitingApproval: SIGKILL while an approval is pending; after
// a restart the turn is interrupted, the command never ran, and the thread
// takes new turns.
func TestKillWhileAwaitingApproval(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "after", Steps: []scripted.Step{{Text: "Back again."}}},
		scripted.Rule{Match: "write", Steps: []scripted.Step{{ToolCalls: []scripted.ToolCall{{Command: "echo x > killed.txt"}}}}},
	)
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir})
	threadID, cwd := c.startThread("untrusted")
	_, turnID := c.startTurn(threadID, "please write")
	c.waitFor("item/commandExecution/requestApproval", nil)
	c.kill()

	c2 := newClient(t, model, options{dataDir: dataDir})
	r := c2.call("thread/resume", map[string]any{"threadId": threadID})
	if got := r.str("thread.turns.0.status"); got != "interrupted" || r.str("thread.turns.0.id") != turnID {
		t.Errorf("resumed turn %q status %q, want %s interrupted", r.str("thread.turns.0.id"), got, turnID)
	}
	items, _ := r.get("thread.turns.0.items").([]any)
	for _, it := range items {
		if jget(it, "type") == "commandExecution" {
			t.Errorf("the unapproved command is in the resumed turn: %v", it)
		}
	}
	if got := r.str("thread.status.type"); got != "idle" {
		t.Errorf("resumed thread status %q, want idle", got)
	}
	_, done := c2.runTurn(threadID, "after the crash")
	if got := done.str("turn.status"); got != "completed" {
		t.Errorf("turn after the restart: %q, want completed", got)
	}
	if _, err := os.Stat(filepath.Join(cwd, "killed.txt")); err == nil {
		t.Errorf("killed.txt exists: the unapproved command ran")
	}
}
