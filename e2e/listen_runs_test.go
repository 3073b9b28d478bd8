package e2e

import (
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// TestListenRunThreadRouting: on a socket, a run's task thread is routed
// like any thread (docs/protocol.md, several clients): run/* goes to every
// client; the thread's own notifications go only to the client that
// subscribed to it (thread/resume), never to the other one.
func TestListenRunThreadRouting(t *testing.T) {
	t.Parallel()
	model := startModel(t, reviewRule,
		scripted.Rule{Match: "Plan this request", Steps: []scripted.Step{{Text: planJSON(t, planTask{ID: "t1", Title: "R1-task write r.txt",
			Kind: "file_create", Dependencies: []string{}, Risk: "low", Acceptance: accept("test -f r.txt"), Estimate: "1m"})}}},
		scripted.Rule{Match: "R1-task", Steps: []scripted.Step{
			// Slow enough for A to subscribe before the first turn ends.
			{Text: "Working on it.", ToolCalls: []scripted.ToolCall{{Command: "echo r > r.txt"}}, TTFT: 3 * time.Second},
			{Text: "The task is complete."},
		}})
	repo := shoutRepo(t)
	l := startListener(t, model, repo, "ws://127.0.0.1:0", "--ws-auth", "none")
	a, b := twoClients(t, l)

	id := a.call("run/start", map[string]any{"cwd": repo, "request": "write r", "baseBranch": "main",
		"trust": map[string]any{"planning": "auto"}}).str("run.id")
	started := a.wait("the task's thread", 0, func(m *message) bool {
		return m.Method == "run/task/updated" && m.str("runId") == id && m.str("task.threadId") != ""
	})
	thread := started.str("task.threadId")
	a.call("thread/resume", map[string]any{"threadId": thread})

	for _, c := range []*wsClient{a, b} {
		end := c.wait("run/completed", 0, func(m *message) bool { return m.Method == "run/completed" && m.str("run.id") == id })
		if end.str("run.status") != "completed" {
			t.Fatalf("run/completed = %s", end.Raw)
		}
	}
	// A followed the task thread to the end of its turns.
	a.wait("the task thread's turn/completed", 0, func(m *message) bool { return m.Method == "turn/completed" && m.str("threadId") == thread })
	a.wait("the task thread's item/completed", 0, func(m *message) bool { return m.Method == "item/completed" && m.str("threadId") == thread })
	// B never subscribed: nothing about the thread reached it but the
	// run's own notifications (which name it in task.threadId).
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, m := range b.msgs {
		if m.str("threadId") == thread {
			t.Errorf("B, not subscribed to the task thread, got %s", m.Raw)
		}
	}
}
