package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestConcurrentThreads runs streaming turns on several threads of one
// connection at once; each thread's events stay in its own turns and the
// deltas of each message concatenate to its text, non-ASCII included.
func TestConcurrentThreads(t *testing.T) {
	t.Parallel()
	const n = 3
	var rules []scripted.Rule
	text := func(i int) string {
		return fmt.Sprintf("Thread %d says: héllo \"wörld\"\n日本語 ✓ <tag> & back\\slash, then some more words to stream %d.", i, i)
	}
	for i := range n {
		rules = append(rules, scripted.Rule{Match: fmt.Sprintf("concurrent %d", i), Steps: []scripted.Step{
			{Text: text(i), Deltas: 40, InterDelta: 2 * time.Millisecond},
		}})
	}
	model := startModel(t, rules...)
	c := newClient(t, model, options{inProcess: true})
	threads := make([]string, n)
	turns := make([]string, n)
	for i := range n {
		threads[i], _ = c.startThread("never")
	}
	for i := range n {
		_, turns[i] = c.startTurn(threads[i], fmt.Sprintf("concurrent %d", i))
	}
	for i := range n {
		done := c.turnDone(turns[i])
		if done.str("threadId") != threads[i] || done.str("turn.status") != "completed" {
			t.Errorf("thread %d: turn/completed threadId %q status %q", i, done.str("threadId"), done.str("turn.status"))
		}
		msg := c.waitFor("item/completed", itemOfType(turns[i], "agentMessage"))
		var sb strings.Builder
		for _, d := range c.find("item/agentMessage/delta", func(m *message) bool { return m.str("itemId") == msg.str("item.id") && m.str("turnId") == turns[i] }) {
			if d.str("threadId") != threads[i] {
				t.Errorf("delta for turn %s carries thread %s, want %s", turns[i], d.str("threadId"), threads[i])
			}
			sb.WriteString(d.str("delta"))
		}
		if sb.String() != text(i) || msg.str("item.text") != text(i) {
			t.Errorf("thread %d: deltas %q, completed %q, want %q", i, sb.String(), msg.str("item.text"), text(i))
		}
	}
}

// TestTurnOverridesPersist: settings given to turn/start stick for later
// turns (protocol/codex/CORE.md §6, §11 rule 9), also across a restart.
func TestTurnOverridesPersist(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "write", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "echo x > out.txt"}}},
		{Text: "done writing"},
	}})
	dataDir := t.TempDir()
	c := newClient(t, model, options{dataDir: dataDir, inProcess: true})
	threadID, _ := c.startThread("never")

	// Turn 1 overrides the policy to untrusted: it asks.
	r := c.call("turn/start", map[string]any{"threadId": threadID, "input": textInput("write one"), "approvalPolicy": "untrusted"})
	turn1 := r.str("turn.id")
	req := c.waitFor("item/commandExecution/requestApproval", forTurn(turn1))
	c.answer(req, map[string]any{"decision": "decline"})
	c.turnDone(turn1)

	// Turn 2 gives no policy: the override still applies.
	_, turn2 := c.startTurn(threadID, "write two")
	req2 := c.waitAfter(req, "item/commandExecution/requestApproval", forTurn(turn2))
	c.answer(req2, map[string]any{"decision": "decline"})
	c.turnDone(turn2)
	if err := c.close(); err != nil {
		t.Errorf("exit: %v", err)
	}

	c2 := newClient(t, model, options{dataDir: dataDir, inProcess: true})
	res := c2.call("thread/resume", map[string]any{"threadId": threadID})
	if got := res.get("approvalPolicy"); got != "untrusted" {
		t.Errorf("thread/resume approvalPolicy = %v, want the persisted turn override untrusted", got)
	}
	_, turn3 := c2.startTurn(threadID, "write three")
	req3 := c2.waitFor("item/commandExecution/requestApproval", forTurn(turn3))
	c2.answer(req3, map[string]any{"decision": "decline"})
	c2.turnDone(turn3)
}

// TestEphemeralThread: an ephemeral thread has no path and is not listed
// (protocol/codex/CORE.md §5 thread/start).
func TestEphemeralThread(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	r := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "approvalPolicy": "never", "ephemeral": true})
	id := r.str("thread.id")
	if r.get("thread.ephemeral") != true || r.get("thread.path") != nil {
		t.Errorf("ephemeral thread: ephemeral %v path %v, want true and null", r.get("thread.ephemeral"), r.get("thread.path"))
	}
	c.waitFor("thread/started", func(m *message) bool { return m.str("thread.id") == id })
	_, done := c.runTurn(id, "hello")
	if done.str("turn.status") != "completed" {
		t.Errorf("ephemeral turn status %q, want completed", done.str("turn.status"))
	}
	persistent, _ := c.startThread("never")
	c.runTurn(persistent, "hello")
	if ids, _ := c.listIDs(map[string]any{}); !slices.Equal(ids, []string{persistent}) {
		t.Errorf("thread/list = %q, want only the persistent thread %s", ids, persistent)
	}
}
