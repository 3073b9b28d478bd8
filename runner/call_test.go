package runner

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// newTestRunner is a runner over a real session whose planner (a scripted
// model at the HTTP level) answers planText, and a git repository to run
// in. wrap, when set, wraps the session's thread port the runner gets.
func newTestRunner(t *testing.T, wrap func(port.Threads) port.Threads) (*Runner, *recorder, string) {
	t.Helper()
	rn, rec, repo, _ := newTestRunnerLogs(t, wrap)
	return rn, rec, repo
}

// newTestRunnerLogs is newTestRunner that also returns the log.
func newTestRunnerLogs(t *testing.T, wrap func(port.Threads) port.Threads) (*Runner, *recorder, string, *syncBuffer) {
	t.Helper()
	srv, err := scripted.Start(scripted.Script{Rules: []scripted.Rule{{Match: "Plan this request", Steps: []scripted.Step{{Text: planText}}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := config.Default()
	pc := cfg.Providers[cfg.Provider]
	pc.BaseURL, pc.APIKey, pc.APIKeyEnv, pc.Wire = srv.URL(), "test-key", "", "responses"
	cfg.Providers[cfg.Provider] = pc
	cfg.RequestMaxRetries = 0

	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "README.md"), []byte("# r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@e", "commit", "-q", "-m", "start")

	rec := &recorder{changed: make(chan struct{})}
	logs := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	db := filepath.Join(t.TempDir(), "a.db")
	mgr := session.NewManager(session.Options{
		OpenStore: func() (*store.Store, error) { return store.Open(db, store.Options{}) },
		Config:    cfg, Client: rec, Logger: log, Version: "test", DataDir: t.TempDir(),
	})
	t.Cleanup(func() { _ = mgr.Close() })
	var threads port.Threads = mgr.Threads()
	if wrap != nil {
		threads = wrap(threads)
	}
	rn := New(Options{Threads: threads, Store: mgr.Store, Config: cfg, DataDir: t.TempDir(), Logger: log})
	t.Cleanup(rn.Close)
	return rn, rec, repo, logs
}

// The typed API answers Go values: the run started, the run read back,
// the stored runs; bad params and unknown runs are errors with the
// protocol's codes, as on the wire.
func TestCallDo(t *testing.T) {
	rn, rec, repo := newTestRunner(t, nil)
	ctx := context.Background()

	started, err := rn.Start(protocol.RunStartParams{Cwd: repo, Request: "write a.txt"}).Do(ctx)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if started.ID == "" || started.Request != "write a.txt" {
		t.Fatalf("Start = %+v, want the new run", started)
	}
	rec.waitRun(t, "the plan approval", started.ID, func(n protocol.RunUpdatedNotification) bool {
		return n.WaitingFor != nil && *n.WaitingFor == protocol.WaitPlanApproval
	})
	read, err := rn.Read(protocol.RunParams{RunID: started.ID}).Do(ctx)
	if err != nil || read.ID != started.ID || len(read.Plan.Tasks) != 1 || read.Plan.Tasks[0].ID != "t1" {
		t.Fatalf("Read = %+v, %v; want the run with its plan of t1", read, err)
	}
	list, err := rn.List(protocol.RunListParams{Cwd: &repo}).Do(ctx)
	if err != nil || len(list) != 1 || list[0].ID != started.ID {
		t.Fatalf("List(cwd) = %+v, %v; want the one run", list, err)
	}
	other := t.TempDir()
	if list, err := rn.List(protocol.RunListParams{Cwd: &other}).Do(ctx); err != nil || len(list) != 0 {
		t.Fatalf("List(other cwd) = %+v, %v; want none", list, err)
	}

	if _, err := rn.Pause(protocol.RunParams{}).Do(ctx); !errors.Is(err, protocol.ErrInvalidParams) || !strings.Contains(err.Error(), "runId") {
		t.Errorf("Pause without runId = %v, want invalid params naming runId", err)
	}
	if _, err := rn.Resume(protocol.RunParams{RunID: "nope"}).Do(ctx); !errors.Is(err, protocol.ErrInvalidRequest) || !strings.Contains(err.Error(), "run not found: nope") {
		t.Errorf("Resume of an unknown run = %v, want run not found", err)
	}
	if _, err := rn.PlanApprove(protocol.RunParams{RunID: started.ID}).Do(ctx); err != nil {
		t.Fatalf("PlanApprove: %v", err)
	}
	if _, err := rn.PlanApprove(protocol.RunParams{RunID: started.ID}).Do(ctx); err == nil || !strings.Contains(err.Error(), "not waiting for plan approval") {
		t.Errorf("PlanApprove again = %v, want not waiting for plan approval", err)
	}
}

// notifyOrder is the runner's thread port with its Notify calls
// recorded, in the order the runner makes them (the session then sends
// them on).
type notifyOrder struct {
	port.Threads
	mu   sync.Mutex
	runs []protocol.RunUpdatedNotification
}

func (o *notifyOrder) Notify(method string, params any) {
	if n, ok := params.(protocol.RunUpdatedNotification); ok {
		o.mu.Lock()
		o.runs = append(o.runs, n)
		o.mu.Unlock()
	}
	o.Threads.Notify(method, params)
}

// cancelled says whether run/updated has told that run is cancelled.
func (o *notifyOrder) cancelled(run string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.runs {
		if n.RunID == run && n.Status == protocol.RunCancelled {
			return true
		}
	}
	return false
}

// Then answers a call that changes a run before the run sends its
// notifications about the change: a server's response to run/cancel goes
// out before the run/updated that says the run is cancelled.
func TestCallThenAnswersBeforeNotifying(t *testing.T) {
	order := &notifyOrder{}
	rn, rec, repo := newTestRunner(t, func(th port.Threads) port.Threads { order.Threads = th; return order })
	ctx := context.Background()
	for i := range 5 {
		started, err := rn.Start(protocol.RunStartParams{Cwd: repo, Request: "write a.txt"}).Do(ctx)
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		rec.waitRun(t, "the plan approval", started.ID, func(n protocol.RunUpdatedNotification) bool {
			return n.WaitingFor != nil && *n.WaitingFor == protocol.WaitPlanApproval
		})

		type answer struct {
			run      protocol.Run
			err      error
			notified bool // the run had been said cancelled when the answer came
		}
		ch := make(chan answer, 1)
		rn.Cancel(protocol.RunParams{RunID: started.ID}).Then(ctx, func(r protocol.Run, err error) {
			ch <- answer{r, err, order.cancelled(started.ID)}
		})
		a := <-ch
		if a.err != nil || a.run.Status != protocol.RunCancelled {
			t.Fatalf("Cancel #%d = %+v, %v; want the cancelled run", i, a.run, a.err)
		}
		if a.notified {
			t.Fatalf("Cancel #%d: run/updated (cancelled) was sent before Cancel's answer", i)
		}
		rec.waitRun(t, "the cancellation", started.ID, func(n protocol.RunUpdatedNotification) bool { return n.Status == protocol.RunCancelled })
	}
}
