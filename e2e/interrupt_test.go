package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/apserver/apserver/model/scripted"
)

// interrupt sends turn/interrupt and requires the {} result.
func (c *client) interrupt(threadID, turnID string) *message {
	c.t.Helper()
	r := c.call("turn/interrupt", map[string]any{"threadId": threadID, "turnId": turnID})
	if obj, ok := r.params.(map[string]any); !ok || len(obj) != 0 {
		c.t.Errorf("turn/interrupt result = %s, want {}", r.Result)
	}
	return r
}

// TestInterruptStreaming interrupts a turn while the agent message streams
// (protocol/codex/CORE.md §6 turn/interrupt).
func TestInterruptStreaming(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "second", Steps: []scripted.Step{{Text: "ok second"}}},
		scripted.Rule{Match: "stream", Steps: []scripted.Step{{Deltas: 500, DeltaText: "tok ", InterDelta: 20 * time.Millisecond}}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "please stream a lot")

	first := c.waitFor("item/agentMessage/delta", forTurn(turnID))
	resp := c.interrupt(threadID, turnID)
	done := c.turnDone(turnID)
	idle := c.waitAfter(first, "thread/status/changed", statusIs(threadID, "idle"))
	if !(resp.Seq < idle.Seq && idle.Seq < done.Seq) {
		t.Errorf("order: interrupt response #%d, idle #%d, turn/completed #%d; want increasing", resp.Seq, idle.Seq, done.Seq)
	}
	if got := done.str("turn.status"); got != "interrupted" {
		t.Errorf("turn status = %q, want interrupted", got)
	}
	if done.get("turn.error") != nil {
		t.Errorf("interrupted turn error = %v, want null", done.get("turn.error"))
	}
	if items, ok := done.get("turn.items").([]any); !ok || len(items) != 0 {
		t.Errorf("interrupted turn/completed items = %v, want [] (protocol/codex/CORE.md §6)", done.get("turn.items"))
	}
	c.sync(threadID)
	if late := c.after(done, "item/agentMessage/delta", forTurn(turnID)); len(late) > 0 {
		t.Errorf("%d agentMessage deltas after the interrupt completed", len(late))
	}
	if got := c.find("item/completed", itemOfType(turnID, "agentMessage")); len(got) != 0 {
		t.Errorf("the partial agentMessage got item/completed: %v", got)
	}

	// The thread takes a new turn.
	_, done2 := c.runTurn(threadID, "now the second one")
	if got := done2.str("turn.status"); got != "completed" {
		t.Errorf("turn after the interrupt: status %q, want completed", got)
	}
	if got := jget(done2.get("turn.items"), "0.text"); got != "ok second" {
		t.Errorf("turn after the interrupt: items %v, want the agentMessage \"ok second\"", done2.get("turn.items"))
	}
}

// TestInterruptCommand interrupts a running command: the turn ends promptly
// and the process is killed.
func TestInterruptCommand(t *testing.T) {
	t.Parallel()
	mark := markFor(t)
	model := startModel(t, scripted.Rule{Match: "sleep", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "exec -a " + mark + " sleep 30"}}},
	}})
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "please sleep")
	item := c.waitFor("item/started", itemOfType(turnID, "commandExecution"))

	pid := waitMarked(t, mark)

	begin := time.Now()
	c.interrupt(threadID, turnID)
	done := c.turnDone(turnID)
	if d := time.Since(begin); d > 2*time.Second {
		t.Errorf("turn/completed came %v after the interrupt, want within 2s", d)
	}
	if got := done.str("turn.status"); got != "interrupted" {
		t.Errorf("turn status = %q, want interrupted", got)
	}
	if !exited(t, pid, time.Until(begin.Add(3*time.Second))) {
		t.Errorf("sleep (pid %d) still alive 3s after the interrupt", pid)
	}
	if got := c.find("item/completed", func(m *message) bool { return m.str("item.id") == item.str("item.id") }); len(got) != 0 {
		t.Errorf("the interrupted command got item/completed (protocol/codex/CORE.md §6: in-flight items get none): %v", got)
	}
}

// exited waits up to d for pid to end and reports whether it did. It
// waits on a pidfd, which is readable once the process has exited (a
// zombie has); a pid already gone has ended.
func exited(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true
	}
	if err != nil {
		t.Fatalf("pidfd_open(%d): %v", pid, err)
	}
	defer unix.Close(fd)
	deadline := time.Now().Add(d)
	for {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(max(0, time.Until(deadline).Milliseconds())))
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			t.Fatalf("poll on the pidfd of %d: %v", pid, err)
		}
		return n > 0
	}
}

// TestInterruptApproval interrupts a turn waiting on an approval: the
// request is resolved after turn/completed.
func TestInterruptApproval(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "write", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "echo hi > waited.txt"}}},
		{Text: "should not be reached"},
	}})
	c := newClient(t, model, options{inProcess: true})
	threadID, cwd := c.startThread("untrusted")
	_, turnID := c.startTurn(threadID, "please write")
	req := c.waitFor("item/commandExecution/requestApproval", nil)

	c.interrupt(threadID, turnID)
	done := c.turnDone(turnID)
	resolved := c.waitFor("serverRequest/resolved", nil)
	if got := done.str("turn.status"); got != "interrupted" {
		t.Errorf("turn status = %q, want interrupted", got)
	}
	if resolved.Seq < done.Seq {
		t.Errorf("serverRequest/resolved #%d before turn/completed #%d, want after", resolved.Seq, done.Seq)
	}
	if resolved.get("requestId") != float64(0) || string(req.ID) != "0" {
		t.Errorf("resolved requestId %v for request id %s, want 0", resolved.get("requestId"), req.ID)
	}
	c.sync(threadID)
	if n := len(c.find("serverRequest/resolved", nil)); n != 1 {
		t.Errorf("serverRequest/resolved = %d, want 1", n)
	}
	if _, err := os.Stat(filepath.Join(cwd, "waited.txt")); err == nil {
		t.Errorf("waited.txt was written although the approval was never given")
	}
	if n := len(modelRequests(model)); n != 1 {
		t.Errorf("model requests = %d, want 1", n)
	}

	// A late answer to the cleaned-up request changes nothing. apserver
	// reads it before the sync.
	c.answer(req, map[string]any{"decision": "accept"})
	c.sync(threadID)
	if _, err := os.Stat(filepath.Join(cwd, "waited.txt")); err == nil {
		t.Errorf("waited.txt was written after a late accept of an interrupted turn's request")
	}
	if n := len(c.find("serverRequest/resolved", nil)); n != 1 {
		t.Errorf("serverRequest/resolved after a late answer = %d, want still 1", n)
	}
	if got := c.find("item/completed", itemOfType(turnID, "commandExecution")); len(got) != 0 {
		t.Errorf("late answer completed the command item: %v", got)
	}
}

// TestInterruptIdle: no active turn.
func TestInterruptIdle(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	c.callErr("turn/interrupt", map[string]any{"threadId": threadID, "turnId": "no-such-turn"}, -32600, "no active turn to interrupt")
}

// TestSteer steers a streaming turn (protocol/codex/CORE.md §6 turn/steer).
func TestSteer(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "wrap up", Steps: []scripted.Step{{Text: "Wrapped up."}}},
		scripted.Rule{Match: "long story", Steps: []scripted.Step{{Deltas: 10, DeltaText: "story ", StallAfter: 3}}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "tell me a long story")
	c.waitFor("item/agentMessage/delta", forTurn(turnID))

	c.callErr("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": "not-the-turn", "input": textInput("x")},
		-32600, "expected active turn id")

	r := c.call("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": turnID, "input": textInput("please wrap up")})
	if got := r.str("turnId"); got != turnID {
		t.Errorf("turn/steer turnId = %q, want %q", got, turnID)
	}
	done := c.turnDone(turnID)
	if got := done.str("turn.status"); got != "completed" {
		t.Errorf("steered turn status = %q, want completed", got)
	}
	steer := c.waitFor("item/completed", func(m *message) bool {
		return itemOfType(turnID, "userMessage")(m) && m.str("item.content.0.text") == "please wrap up"
	})
	if steer.Seq > done.Seq {
		t.Errorf("steer userMessage after turn/completed")
	}
	final := c.waitFor("item/completed", func(m *message) bool {
		return itemOfType(turnID, "agentMessage")(m) && m.str("item.text") == "Wrapped up."
	})
	if final.Seq < steer.Seq {
		t.Errorf("final answer #%d before the steer userMessage #%d", final.Seq, steer.Seq)
	}
	reqs := modelRequests(model)
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "please wrap up") || !strings.Contains(string(reqs[1].Body), "tell me a long story") {
		t.Errorf("model requests = %d; want 2, the second carrying both user messages", len(reqs))
	}
	if n := len(c.find("turn/started", nil)); n != 1 {
		t.Errorf("turn/started sent %d times, want 1 (steer starts no turn)", n)
	}
	// Ended turn: steering now fails.
	c.callErr("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": turnID, "input": textInput("late")},
		-32600, "no active turn to steer")
}

// TestTurnStartWhileBusy: turn/start on a busy thread steers the active turn
// (protocol/codex/CORE.md §11 rule 3).
func TestTurnStartWhileBusy(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "wrap up", Steps: []scripted.Step{{Text: "Wrapped up."}}},
		scripted.Rule{Match: "long story", Steps: []scripted.Step{{Deltas: 10, DeltaText: "story ", StallAfter: 3}}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "tell me a long story")
	c.waitFor("item/agentMessage/delta", forTurn(turnID))

	r := c.call("turn/start", map[string]any{"threadId": threadID, "input": textInput("please wrap up")})
	if got := r.str("turn.id"); got != turnID {
		t.Errorf("turn/start on a busy thread returned turn %q, want the active turn %q", got, turnID)
	}
	done := c.turnDone(turnID)
	if got := done.str("turn.status"); got != "completed" {
		t.Errorf("turn status = %q, want completed", got)
	}
	c.waitFor("item/completed", func(m *message) bool {
		return itemOfType(turnID, "userMessage")(m) && m.str("item.content.0.text") == "please wrap up"
	})
	c.sync(threadID)
	if n := len(c.find("turn/started", nil)); n != 1 {
		t.Errorf("turn/started sent %d times, want 1", n)
	}
	if n := len(c.find("turn/completed", nil)); n != 1 {
		t.Errorf("turn/completed sent %d times, want 1", n)
	}
}

// TestSteerIdle: no active turn.
func TestSteerIdle(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	c.callErr("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": "t", "input": textInput("x")},
		-32600, "no active turn to steer")
}

// TestSteerDuringCommand steers while a command runs: the steer is consumed
// after the command's item/completed (protocol/codex/CORE.md §6 turn/steer).
func TestSteerDuringCommand(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "wrap up", Steps: []scripted.Step{{Text: "Wrapped up."}}},
		scripted.Rule{Match: "slow command", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Command: "sleep 0.5; echo done-sleeping"}}},
			{Text: "not this one"},
		}},
	)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	_, turnID := c.startTurn(threadID, "run the slow command")
	c.waitFor("item/started", itemOfType(turnID, "commandExecution"))

	r := c.call("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": turnID, "input": textInput("please wrap up")})
	if got := r.str("turnId"); got != turnID {
		t.Errorf("turn/steer turnId = %q, want %q", got, turnID)
	}
	done := c.turnDone(turnID)
	cmdDone := c.waitFor("item/completed", itemOfType(turnID, "commandExecution"))
	steer := c.waitFor("item/started", func(m *message) bool {
		return itemOfType(turnID, "userMessage")(m) && m.str("item.content.0.text") == "please wrap up"
	})
	if steer.Seq < cmdDone.Seq {
		t.Errorf("steer userMessage #%d before the running command's item/completed #%d", steer.Seq, cmdDone.Seq)
	}
	if got := cmdDone.str("item.status"); got != "completed" || !strings.Contains(cmdDone.str("item.aggregatedOutput"), "done-sleeping") {
		t.Errorf("steered-over command: status %q output %q, want completed with done-sleeping", got, cmdDone.str("item.aggregatedOutput"))
	}
	if got := done.str("turn.status"); got != "completed" {
		t.Errorf("turn status = %q, want completed", got)
	}
	reqs := modelRequests(model)
	if len(reqs) != 2 {
		t.Fatalf("model requests = %d, want 2", len(reqs))
	}
	body := string(reqs[1].Body)
	if !strings.Contains(body, "done-sleeping") || !strings.Contains(body, "please wrap up") {
		t.Errorf("second model request lacks the tool output or the steer:\n%s", body)
	}
	c.waitFor("item/completed", func(m *message) bool {
		return itemOfType(turnID, "agentMessage")(m) && m.str("item.text") == "Wrapped up."
	})
}

// TestStdinCloseMidTurn: the editor (which passes --on-eof interrupt, as
// the VS Code extension does) goes away while a command runs; the server
// exits promptly, says with status 3 that it interrupted a turn, and takes
// the command with it. (Without the flag a piped script's turn runs on:
// eof_test.go.)
func TestStdinCloseMidTurn(t *testing.T) {
	t.Parallel()
	mark := markFor(t)
	model := startModel(t, scripted.Rule{Match: "sleep", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "exec -a " + mark + " sleep 30"}}},
	}})
	c := newClient(t, model, options{args: []string{"--on-eof", "interrupt"}})
	threadID, _ := c.startThread("never")
	c.startTurn(threadID, "please sleep")
	c.waitFor("item/started", func(m *message) bool { return m.str("item.type") == "commandExecution" })
	pid := waitMarked(t, mark)

	begin := time.Now()
	var ee *exec.ExitError
	if err := c.close(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("exit after stdin EOF mid-turn: %v, want status 3 (a turn was interrupted)", err)
	}
	if done := c.find("turn/completed", nil); len(done) != 1 || done[0].str("turn.status") != "interrupted" {
		t.Errorf("turn/completed = %v, want one, interrupted", done)
	}
	if d := time.Since(begin); d > 5*time.Second {
		t.Errorf("exit took %v after stdin EOF, want a prompt exit", d)
	}
	if !exited(t, pid, time.Until(begin.Add(3*time.Second))) {
		t.Errorf("the turn's command (pid %d) outlived the server", pid)
	}
}
