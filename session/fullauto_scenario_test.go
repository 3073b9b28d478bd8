package session

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/scenario"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

var updateScenarios = flag.Bool("update", false, "rewrite the golden decision scripts of controller/testdata/scenarios")

// scenarioDir holds the public full-auto scenario suite (docs/fullauto.md).
const scenarioDir = "../controller/testdata/scenarios"

// TestScenarios runs every full-auto scenario of the public suite in
// process, on a fake clock, against the scripted model: it checks the
// run's end (action, stop condition, turns), the golden decision script
// (rewritten by -update), and that every receipt replays (decision,
// overrides and approvals: fullauto.ReplayDecision, ReplayApproval).
// Waits cost no time: a step's ttft_ms moves the clock instead of
// delaying the answer, and the runner fires the approval timeouts and
// retry cooldowns it waits for. e2e TestScenarios runs a few of them
// through the binary and apserver replay.
//
// A scenario is a txtar archive:
//
//	-- script.json --    the scripted model (model/scripted.LoadScript)
//	-- start.json --     fullAuto/start params (threadId is added)
//	-- expect.json --    {"action", "stopCondition", "turns"}: the run's end
//	-- decisions --      the golden decision script
//	-- config.toml --    (optional) the user config file
//	-- thread.json --    (optional) thread/start params (cwd is added)
//	-- answers --        (optional) how the editor answers server requests:
//	                     one "METHOD RESULT-JSON" or "METHOD none" per line
//	-- workspace/PATH -- (optional) files of the workspace
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(scenarioDir, "*.txtar"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in %s (%v)", scenarioDir, err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, f)
		})
	}
}

// clockTransport moves a fake clock by the time-to-first-token of the
// scripted step that answered each model request (the server itself
// answers at once).
type clockTransport struct {
	clock *fakeClock
	srv   *scripted.Server
	ttft  func(rule, step int) time.Duration
	mu    sync.Mutex
	seen  int
}

func (ct *clockTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	ct.mu.Lock()
	defer ct.mu.Unlock()
	reqs := ct.srv.Requests()
	for ; ct.seen < len(reqs); ct.seen++ {
		if rq := reqs[ct.seen]; rq.Wire == scripted.WireResponses || rq.Wire == scripted.WireChat {
			ct.clock.Advance(ct.ttft(rq.Rule, rq.Step))
		}
	}
	return resp, err
}

// scenarioRun is one scenario's Manager, client, clock and model.
type scenarioRun struct {
	m     *Manager
	c     *fakeClient
	clock *fakeClock
	srv   *scripted.Server
}

// startScenarioManager starts a Manager for a scenario: the user config
// cfgText, the scripted model sc (its ttft_ms on the fake clock).
func startScenarioManager(t *testing.T, sc scripted.Script, cfgText string) *scenarioRun {
	t.Helper()
	ttfts := map[[2]int]time.Duration{}
	strip := func(rule int, steps []scripted.Step) {
		for i := range steps {
			ttfts[[2]int{rule, i}] = steps[i].TTFT
			steps[i].TTFT = 0
		}
	}
	for i := range sc.Rules {
		strip(i, sc.Rules[i].Steps)
	}
	strip(-1, sc.Default)
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := t.TempDir()
	cfgFile := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgFile, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_DATA_HOME": filepath.Join(home, ".local", "share"),
		"OPENAI_API_KEY": "test", "OPENAI_BASE_URL": srv.URL(), "APSERVER_MODEL": "scripted-model",
	}
	wire, modelName := "responses", "scripted-model"
	cfg, err := config.Load(config.LoadOptions{UserFile: cfgFile, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Wire: &wire, Model: &modelName}})
	if err != nil {
		t.Fatalf("config.toml: %v", err)
	}
	r := &scenarioRun{c: newFakeClient(), clock: newFakeClock(), srv: srv}
	ct := &clockTransport{clock: r.clock, srv: srv, ttft: func(rule, step int) time.Duration {
		n := len(sc.Default)
		if rule >= 0 {
			n = len(sc.Rules[rule].Steps)
		}
		if n == 0 {
			return 0
		}
		return ttfts[[2]int{rule, min(step, n-1)}]
	}}
	dbPath := filepath.Join(home, "a.db")
	r.m = NewManager(Options{
		OpenStore:  func() (*store.Store, error) { return store.Open(dbPath, store.Options{}) },
		Config:     cfg,
		Client:     r.c,
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Version:    "test",
		HTTPClient: &http.Client{Transport: ct},
		Clock:      r.clock,
	})
	t.Cleanup(func() { _ = r.m.Close() })
	return r
}

func runScenario(t *testing.T, path string) {
	cwd := t.TempDir()
	sc, err := scenario.Load(path, cwd)
	if err != nil {
		t.Fatal(err)
	}
	ar, want, answers := sc.Archive, sc.Expect, sc.Answers
	var start protocol.FullAutoStartParams
	if err := json.Unmarshal(sc.Start, &start); err != nil {
		t.Fatalf("start.json: %v", err)
	}
	threadParams := protocol.ThreadStartParams{}
	threadParams.ApprovalPolicy = &protocol.AskForApproval{Mode: "never"}
	if sc.Thread != nil {
		if err := json.Unmarshal(sc.Thread, &threadParams); err != nil {
			t.Fatalf("thread.json: %v", err)
		}
	}

	r := startScenarioManager(t, sc.Script, sc.Config)
	h := &harness{m: r.m, c: r.c, srv: r.srv}
	threadParams.Cwd = &cwd
	th := mustCall[protocol.ThreadStartResult](t, h, "thread/start", func(rp Reply) { r.m.StartThread(context.Background(), threadParams, rp) })
	id := th.Thread.ID
	start.ThreadID = id
	mustCall[protocol.FullAutoRunResult](t, h, "fullAuto/start", func(rp Reply) { r.m.StartFullAuto(context.Background(), start, rp) })

	end := r.drive(t, id, answers)
	var n protocol.FullAutoStatusChangedNotification
	if err := json.Unmarshal(end.Params, &n); err != nil {
		t.Fatal(err)
	}
	gotAction, gotCond := "", ""
	if n.Run.LastDecision != nil {
		gotAction = n.Run.LastDecision.Action
	}
	if n.Run.StopCondition != nil {
		gotCond = *n.Run.StopCondition
	}
	if gotAction != want.Action || gotCond != want.StopCondition || n.Run.Spent.Turns != want.Turns {
		t.Errorf("run ended with %s/%s after %d turns, want %s/%s after %d\n%s",
			gotAction, gotCond, n.Run.Spent.Turns, want.Action, want.StopCondition, want.Turns, end.Params)
	}
	if got := len(filter(r.c.snapshot(), protocol.NotifyTurnCompleted, id)); got != want.Turns {
		t.Errorf("%d turn/completed, want %d", got, want.Turns)
	}

	db, err := r.m.store()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := db.Receipts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	golden := decisionScript(t, rs)
	if *updateScenarios {
		ar.Set("decisions", golden)
		if err := os.WriteFile(path, []byte(ar.Format()), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if g, _ := ar.Get("decisions"); g != golden {
		t.Errorf("decision script differs (run with -update and review the diff):\ngot:\n%swant:\n%s", golden, g)
	}
	replayReceipts(t, rs)
}

// Waits the runner cuts short: an approval nobody answers (the default
// timeout is 10 min) and the cooldown after a failed turn (at most 60 s).
// Timers due later, such as a turn's 2 h cap, are left alone.
const (
	maxApprovalWait = 10 * time.Minute
	maxCooldown     = time.Minute
)

// drive answers the requests of thread id as answers says, fires the
// timers the run waits on, and returns the fullAuto/statusChanged that
// stops or pauses the run.
func (r *scenarioRun) drive(t *testing.T, id string, answers map[string]string) event {
	t.Helper()
	deadline := time.NewTimer(testTimeout)
	defer deadline.Stop()
	seen := 0
	waitTimer := false
	for {
		r.c.mu.Lock()
		log := append([]event(nil), r.c.log...)
		changed := r.c.changed
		r.c.mu.Unlock()
		for ; seen < len(log); seen++ {
			e := log[seen]
			if e.Kind != "notify" || threadOf(e) != id {
				continue
			}
			switch e.Method {
			case protocol.NotifyFullAutoStatusChanged:
				var n protocol.FullAutoStatusChangedNotification
				_ = json.Unmarshal(e.Params, &n)
				if n.State == protocol.FullAutoStopped || n.State == protocol.FullAutoPaused {
					return e
				}
			case protocol.NotifyTurnCompleted:
				// A failed turn is retried after a cooldown.
				var n protocol.TurnNotification
				_ = json.Unmarshal(e.Params, &n)
				waitTimer = n.Turn.Status == protocol.TurnFailed
			case protocol.NotifyTurnStarted:
				waitTimer = false
			}
		}
		var added <-chan struct{}
		if waitTimer {
			var ok bool
			var at time.Time
			at, ok, added = r.clock.next()
			if ok && at.Sub(r.clock.Now()) <= maxCooldown {
				r.clock.Advance(at.Sub(r.clock.Now()))
				waitTimer = false
				continue
			}
		}
		select {
		case fc := <-r.c.calls:
			a, ok := answers[fc.method]
			switch {
			case !ok:
				t.Fatalf("unexpected request %s %s (the scenario's answers do not cover it)", fc.method, fc.params)
			case a == "none":
				r.clock.fireWithin(t, maxApprovalWait) // the approval timeout
			default:
				fc.answer <- callAnswer{raw: json.RawMessage(a)}
			}
		case <-changed:
		case <-added:
		case <-deadline.C:
			t.Fatalf("the run did not end; log:\n%s", dump(log))
		}
	}
}

// decisionScript renders receipts as the golden decision script.
func decisionScript(t *testing.T, rs []store.Receipt) string {
	t.Helper()
	out, err := scenario.DecisionScript(rs)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// replayReceipts checks that every receipt replays: the decision, how it
// was carried out (the overrides), and the approvals.
func replayReceipts(t *testing.T, rs []store.Receipt) {
	t.Helper()
	for _, r := range rs {
		var why string
		var same bool
		switch r.Kind {
		case store.ReceiptDecision:
			var in fullauto.DecisionInput
			var out controller.Decision
			if json.Unmarshal(r.Input, &in) != nil || json.Unmarshal(r.Output, &out) != nil {
				t.Fatalf("receipt #%d does not decode", r.Seq)
			}
			if in.Drive == nil {
				t.Errorf("decision receipt #%d holds no run context: its overrides cannot be replayed", r.Seq)
			}
			_, why, same = fullauto.ReplayDecision(in, out, r.PolicyHash, r.Executed, r.Override)
		case store.ReceiptApproval:
			var in fullauto.ApprovalInput
			var out fullauto.ApprovalOutput
			if json.Unmarshal(r.Input, &in) != nil || json.Unmarshal(r.Output, &out) != nil {
				t.Fatalf("receipt #%d does not decode", r.Seq)
			}
			_, why, same = fullauto.ReplayApproval(in, out)
		}
		if !same {
			t.Errorf("receipt #%d (%s) does not replay: %s", r.Seq, r.Kind, why)
		}
	}
}
