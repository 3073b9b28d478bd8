package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/session"
)

const testTimeout = time.Minute

// recorder is the session's client in these tests: it keeps the run
// notifications and declines requests.
type recorder struct {
	mu      sync.Mutex
	runs    []protocol.RunUpdatedNotification
	changed chan struct{}
}

func (c *recorder) Notify(method string, params any) {
	p, ok := params.(protocol.RunUpdatedNotification)
	if !ok {
		return
	}
	c.mu.Lock()
	c.runs = append(c.runs, p)
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

func (c *recorder) Call(method string, params any) session.ClientCall { return declined{} }

type declined struct{}

func (declined) ID() int64 { return 0 }
func (declined) Wait(context.Context) (json.RawMessage, error) {
	return json.RawMessage(`{"decision":"decline"}`), nil
}

// waitRun waits for a run/updated of run that pred accepts.
func (c *recorder) waitRun(t *testing.T, what, run string, pred func(protocol.RunUpdatedNotification) bool) protocol.RunUpdatedNotification {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		c.mu.Lock()
		for _, n := range c.runs {
			if n.RunID == run && pred(n) {
				c.mu.Unlock()
				return n
			}
		}
		ch := c.changed
		seen := fmt.Sprintf("%+v", c.runs)
		c.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("timed out waiting for %s of run %s; run/updated seen: %s", what, run, seen)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// planText is a planner's answer: one small task.
const planText = `{"summary":"the plan","clarification":null,"tasks":[{"id":"t1","title":"write a.txt","description":"Write a.txt.",` +
	`"kind":"file_create","dependencies":[],"risk":"low","acceptance":{"criteria":["a.txt exists"],"checks":["test -f a.txt"],"files":[]},"estimate":"1m"}]}`

// A panic in the run machine as its goroutine applies an event, or in a
// run's slow step, fails that run: the reason is stored and sent in
// run/updated, the stack is logged, and the next run (with its planner
// thread) goes on as usual.
func TestPanicFailsTheRunOnly(t *testing.T) {
	for _, tc := range []struct {
		site  string
		match func(what any) bool
	}{
		{"apply", func(w any) bool { ev, ok := w.(runs.Event); return ok && ev.Type == runs.EvWorktreeReady }},
		{"work", func(w any) bool { _, ok := w.(runs.CreateWorktree); return ok }},
	} {
		t.Run(tc.site, func(t *testing.T) {
			// Not parallel: testPanic is the package's.
			rn, rec, repo, logs := newTestRunnerLogs(t, nil)

			var once sync.Once
			hook := func(site, run string, what any) {
				if site != tc.site || !tc.match(what) {
					return
				}
				fire := false
				once.Do(func() { fire = true })
				if fire {
					panic("injected panic at " + site)
				}
			}
			testPanic.Store(&hook)
			t.Cleanup(func() { testPanic.Store(nil) })

			start := func() string {
				r, err := rn.Start(protocol.RunStartParams{Cwd: repo, Request: "write a.txt"}).Do(context.Background())
				if err != nil {
					t.Fatalf("run/start: %v", err)
				}
				return r.ID
			}
			victim := start()
			want := "internal error: injected panic at " + tc.site
			failed := rec.waitRun(t, "its failure", victim, func(n protocol.RunUpdatedNotification) bool { return n.Status == protocol.RunFailed })
			if failed.Reason == nil || !strings.Contains(*failed.Reason, want) {
				t.Errorf("run/updated failed with reason %v, want %q", failed.Reason, want)
			}
			// Stored: run/read rebuilds the run from its log.
			if r, err := rn.Read(protocol.RunParams{RunID: victim}).Do(context.Background()); err != nil || r.Status != protocol.RunFailed || r.Reason == nil || !strings.Contains(*r.Reason, want) {
				t.Errorf("run/read after the panic = %+v, %v", r, err)
			}
			if l := logs.String(); !strings.Contains(l, "bug: panic in a run") || !strings.Contains(l, "goroutine ") {
				t.Errorf("the log has no panic with its stack:\n%s", l)
			}
			// The next run plans as usual: its planner thread works.
			next := start()
			rec.waitRun(t, "the plan approval", next, func(n protocol.RunUpdatedNotification) bool {
				return n.WaitingFor != nil && *n.WaitingFor == protocol.WaitPlanApproval
			})
		})
	}
}
