package projects

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// fakeTree is the blueprint's tree: phase p1 ("Accounts") with the fake
// project's tasks, phase p2 ("Reports"); amends are recorded.
type fakeTree struct {
	f      *fakeProject
	amends *[]string
}

func (ft fakeTree) Amend(ctx context.Context, bp, heading, text string) (string, error) {
	*ft.amends = append(*ft.amends, bp+"|"+heading+"|"+text)
	return "bpv_2", nil
}

func (ft fakeTree) Tree(ctx context.Context, bp string) ([]protocol.BlueprintNode, error) {
	nodes := []protocol.BlueprintNode{{ID: "p1", Kind: protocol.KindPhase, Title: "Accounts", Status: protocol.NodePlanned}}
	for _, id := range ft.f.order {
		nodes = append(nodes, protocol.BlueprintNode{ID: id, Kind: protocol.KindTask, Depth: 1, Title: "Task " + id, Status: protocol.NodePlanned})
	}
	return append(nodes, protocol.BlueprintNode{ID: "p2", Kind: protocol.KindPhase, Title: "Reports", Status: protocol.NodePlanned}), nil
}

// attnLog records what the service puts in the attention summary.
type attnLog struct {
	mu   sync.Mutex
	last map[string]*protocol.AttentionItem
}

func (a *attnLog) set(cwd string, it *protocol.AttentionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.last == nil {
		a.last = map[string]*protocol.AttentionItem{}
	}
	a.last[cwd] = it
}

func (a *attnLog) get(cwd string) *protocol.AttentionItem {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last[cwd]
}

// intentService is a Service whose classifier is the scripted model
// (over HTTP) answering each rule's steps in order.
func intentService(t *testing.T, f *fakeProject, rules ...scripted.Rule) (*Service, *scripted.Server, *attnLog) {
	s, srv, al, _ := intentServiceTree(t, f, rules...)
	return s, srv, al
}

func intentServiceTree(t *testing.T, f *fakeProject, rules ...scripted.Rule) (*Service, *scripted.Server, *attnLog, fakeTree) {
	t.Helper()
	for i := range rules {
		rules[i].Sequential = true
	}
	srv, err := scripted.Start(scripted.Script{Rules: rules, Default: []scripted.Step{{Text: "unexpected"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := config.Default()
	pc := cfg.Providers[cfg.Provider]
	pc.BaseURL, pc.APIKey, pc.APIKeyEnv, pc.Wire = srv.URL(), "test-key", "", "responses"
	cfg.Providers[cfg.Provider] = pc
	cfg.RequestMaxRetries = 0
	s0, _ := newService(t, f, time.Now)
	al := &attnLog{}
	ft := fakeTree{f: f, amends: new([]string)}
	s := New(Options{Store: s0.opts.Store, Runs: f, Blueprints: f, Intent: IntentOptions{Tree: ft, Config: cfg}, Attention: al.set})
	return s, srv, al, ft
}

func answer(intent string, conf string, target string) scripted.Step {
	return scripted.Step{Text: `{"intent":"` + intent + `","confidence":` + conf + `,"target":"` + target + `"}`}
}

func route(t *testing.T, s *Service, ws, text string) (string, bool) {
	t.Helper()
	out := s.RouteIntent(context.Background(), IntentRequest{ThreadID: "th1", Cwd: ws, Model: "gpt-test", Text: text})
	if out.Confirm != nil {
		t.Errorf("%q: a confirmation was asked", text)
	}
	return out.Message, out.Answer
}

// TestIntentOffAsksNoModel: in a workspace that is not a project, or a
// project whose mode is off, a message reaches no classifier.
func TestIntentOffAsksNoModel(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, srv, _ := intentService(t, f, scripted.Rule{Match: "phase 1", Steps: []scripted.Step{answer("START_BUILD", "0.9", "phase 1")}})
	ws := t.TempDir()
	if msg, ans := route(t, s, ws, "start building phase 1"); msg != "" || !ans {
		t.Errorf("no project: RouteIntent = %q, %v; want \"\", true", msg, ans)
	}
	if _, err := s.UpdateSettings(context.Background(), ws, func(st *manager.Settings) { st.BlueprintID = "bp"; st.Mode = manager.ModeOff }); err != nil {
		t.Fatal(err)
	}
	if msg, ans := route(t, s, ws, "start building phase 1"); msg != "" || !ans {
		t.Errorf("mode off: RouteIntent = %q, %v; want \"\", true", msg, ans)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d classification requests reached the model, want 0", n)
	}
	if f.starts != 0 {
		t.Errorf("%d runs started, want 0", f.starts)
	}
}

// TestIntentStartBuild: "start building phase 1" under full_auto sets the
// phase, ticks (a run for the first ready task) and says so; the routing
// is a receipt that replays, and status and explain show it.
func TestIntentStartBuild(t *testing.T) {
	f := newFake(map[string][]string{"b": {"a"}}, []string{"a", "b"})
	s, srv, _ := intentService(t, f, scripted.Rule{Match: "start building phase 1", Steps: []scripted.Step{answer("START_BUILD", "0.92", "phase 1")}})
	ws := t.TempDir()
	ctx := context.Background()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(2)); err != nil {
		t.Fatal(err)
	}
	msg, ans := route(t, s, ws, "start building phase 1")
	if ans {
		t.Error("START_BUILD: the model is asked to answer too")
	}
	if !strings.Contains(msg, `active phase to "Accounts" (p1)`) || !strings.Contains(msg, "started run r1 for task a") {
		t.Errorf("message %q: want the phase set and run r1 started for a", msg)
	}
	st, _ := s.Settings(ctx, ws)
	if st.Phase != "p1" || f.starts != 1 {
		t.Errorf("phase %q, %d runs started; want p1, 1", st.Phase, f.starts)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || !strings.Contains(reqs[0].LastUserText, "1. Accounts\n2. Reports") || reqs[0].Model != "gpt-test" {
		t.Errorf("classification requests %+v: want one, to the thread's model, listing the phases", reqs)
	}
	n, diffs, err := s.Replay(ctx, ws)
	if err != nil || len(diffs) != 0 || n != 2 {
		t.Errorf("Replay = %d, %v, %v; want 2 rows (the routing and its tick), no diff", n, diffs, err)
	}
	status, err := s.Status(ctx, protocol.ProjectCwdParams{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if status.LastTick == nil || status.LastTick.Result != "started_run" {
		t.Errorf("status lastTick = %+v, want started_run (the routing is not a tick)", status.LastTick)
	}
	if len(status.Recent) != 2 || status.Recent[0].Kind != "intent" || status.Recent[0].Intent != "START_BUILD" || status.Recent[0].Message != msg ||
		status.Recent[1].Kind != "tick" || status.Recent[1].Result != "started_run" {
		t.Errorf("status recent = %+v, want the routing then its tick", status.Recent)
	}
	// The tick names the run it started, so that a client shows it even
	// when a later tick is the last one by the time it reads the status.
	if r := status.Recent[1]; r.RunID == "" || r.RunID != status.LastTick.RunID || len(r.TaskIDs) != 1 {
		t.Errorf("the started run in recent = %+v, lastTick %+v", r, status.LastTick)
	}
	ex, err := s.Explain(ctx, protocol.ProjectCwdParams{Cwd: ws})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex.Intents) != 1 || ex.Intents[0].Target != "phase 1" || ex.Intents[0].ThreadID != "th1" {
		t.Errorf("explain intents = %+v", ex.Intents)
	}
}

// TestIntentStartBuildUnknownTarget: a target the tree does not have
// starts nothing, and the thread is told why.
func TestIntentStartBuildUnknownTarget(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, _, _ := intentService(t, f, scripted.Rule{Match: "billing", Steps: []scripted.Step{answer("START_BUILD", "0.9", "the billing feature")}})
	ws := t.TempDir()
	if _, err := s.UpdateSettings(context.Background(), ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	msg, ans := route(t, s, ws, "build the billing feature")
	if ans || !strings.Contains(msg, `The manager did nothing: nothing started: no phase or node of the blueprint matches "the billing feature"`) {
		t.Errorf("RouteIntent = %q, %v", msg, ans)
	}
	if f.starts != 0 {
		t.Errorf("%d runs started, want 0", f.starts)
	}
	if _, diffs, err := s.Replay(context.Background(), ws); err != nil || len(diffs) != 0 {
		t.Errorf("Replay: %v %v", diffs, err)
	}
}

// TestIntentPause: "pause the autopilot" pauses it (the heartbeat skips
// a paused project) and the pause shows in attention.
func TestIntentPause(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, _, al := intentService(t, f, scripted.Rule{Match: "pause", Steps: []scripted.Step{answer("PAUSE_AUTOPILOT", "0.97", "")}})
	ws := t.TempDir()
	ctx := context.Background()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	msg, ans := route(t, s, ws, "pause the autopilot")
	if ans || !strings.Contains(msg, "paused the autopilot") {
		t.Errorf("RouteIntent = %q, %v", msg, ans)
	}
	if st, _ := s.Settings(ctx, ws); !st.Paused {
		t.Error("not paused")
	}
	if it := al.get(ws); it == nil || it.Kind != protocol.AttentionPaused {
		t.Errorf("attention item = %+v, want paused", it)
	}
	status, _ := s.Status(ctx, protocol.ProjectCwdParams{Cwd: ws})
	if len(status.Attention) != 1 || status.Attention[0].Kind != protocol.AttentionPaused {
		t.Errorf("status attention = %+v", status.Attention)
	}
	if d, _ := s.Tick(ctx, ws); d.Result != manager.ResultIdle || f.starts != 0 {
		t.Errorf("tick after the pause = %+v, %d starts", d, f.starts)
	}
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { st.Paused = false }); err != nil {
		t.Fatal(err)
	}
	if it := al.get(ws); it != nil {
		t.Errorf("resumed: attention item %+v is still there", it)
	}
}

// TestIntentLowConfidenceIsAQuestion: below 0.6 the message is answered
// as a question, and the thread is told why.
func TestIntentLowConfidenceIsAQuestion(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, _, _ := intentService(t, f, scripted.Rule{Match: "maybe", Steps: []scripted.Step{answer("START_BUILD", "0.4", "phase 1")}})
	ws := t.TempDir()
	if _, err := s.UpdateSettings(context.Background(), ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	msg, ans := route(t, s, ws, "maybe we could build phase 1?")
	if !ans || !strings.Contains(msg, "confidence 0.40, below 0.6: answered as a question") {
		t.Errorf("RouteIntent = %q, %v", msg, ans)
	}
	if f.starts != 0 {
		t.Errorf("%d runs started, want 0", f.starts)
	}
}

// TestIntentRetryThenFailure: an invalid answer is asked again once; a
// valid second answer is used; two invalid ones make a question, with
// the thread told what was wrong.
func TestIntentRetryThenFailure(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, srv, _ := intentService(t, f,
		scripted.Rule{Match: "keep building please", Steps: []scripted.Step{{Text: `{"intent":"GO","confidence":1,"target":""}`}, answer("CONTINUE_BUILD", "0.9", "")}},
		scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "Sure!"}, {Text: `{"intent":"OTHER","confidence":7,"target":""}`}}})
	ws := t.TempDir()
	ctx := context.Background()
	if _, err := s.UpdateSettings(ctx, ws, func(st *manager.Settings) { fullAuto(1)(st); st.Paused = true }); err != nil {
		t.Fatal(err)
	}
	msg, ans := route(t, s, ws, "keep building please")
	if ans || !strings.Contains(msg, "resumed the autopilot and started run r1") {
		t.Errorf("keep building: RouteIntent = %q, %v", msg, ans)
	}
	if st, _ := s.Settings(ctx, ws); st.Paused {
		t.Error("CONTINUE_BUILD left the autopilot paused")
	}
	msg, ans = route(t, s, ws, "hello")
	if !ans || !strings.Contains(msg, "answered as a question") || !strings.Contains(msg, "confidence: 7 is not between 0 and 1") {
		t.Errorf("hello: RouteIntent = %q, %v", msg, ans)
	}
	if n := len(srv.Requests()); n != 4 {
		t.Errorf("%d classification requests, want 4 (two per message)", n)
	}
	status, _ := s.Status(ctx, protocol.ProjectCwdParams{Cwd: ws})
	if len(status.Recent) == 0 || status.Recent[0].Error == "" || status.Recent[0].Intent != "QUESTION" {
		t.Errorf("the failed routing's record = %+v", status.Recent)
	}
}

// TestIntentPlanChangeAsksFirst: ADJUST_PLAN and UPDATE_REQUIREMENTS
// change nothing until the user confirms; confirmed, the blueprint is
// amended (a new version ingested); declined, it is not. Each answer is a
// receipt; replay skips the answers and reproduces the routings.
func TestIntentPlanChangeAsksFirst(t *testing.T) {
	f := newFake(nil, []string{"a"})
	s, _, _, ft := intentServiceTree(t, f,
		scripted.Rule{Match: "split the login", Steps: []scripted.Step{answer("ADJUST_PLAN", "0.9", "login")}},
		scripted.Rule{Match: "passwords need 12", Steps: []scripted.Step{answer("UPDATE_REQUIREMENTS", "0.8", "")}})
	ws := t.TempDir()
	ctx := context.Background()
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	req := func(text string) IntentOutcome {
		return s.RouteIntent(ctx, IntentRequest{ThreadID: "th1", Cwd: ws, Model: "gpt-test", Text: text})
	}
	out := req("split the login feature in two")
	if out.Answer || out.Confirm == nil || !strings.Contains(out.Confirm.Question, "change the plan (login)") || !strings.Contains(out.Confirm.Question, `"Plan adjustment"`) {
		t.Fatalf("ADJUST_PLAN outcome = %+v", out)
	}
	if len(*ft.amends) != 0 || f.starts != 0 {
		t.Fatalf("changed before the confirmation: %v, %d runs", *ft.amends, f.starts)
	}
	if msg := out.Confirm.Apply(ctx, false); !strings.Contains(msg, "left the plan as it is") || len(*ft.amends) != 0 {
		t.Errorf("declined: %q, amends %v", msg, *ft.amends)
	}
	out = req("passwords need 12 characters")
	if out.Confirm == nil {
		t.Fatalf("UPDATE_REQUIREMENTS outcome = %+v", out)
	}
	msg := out.Confirm.Apply(ctx, true)
	if !strings.Contains(msg, "ingesting version bpv_2 of blueprint bp") {
		t.Errorf("confirmed: %q", msg)
	}
	if want := []string{"bp|Requirements update|passwords need 12 characters"}; !slices.Equal(*ft.amends, want) {
		t.Errorf("amends = %q, want %q", *ft.amends, want)
	}
	n, diffs, err := s.Replay(ctx, ws)
	if err != nil || len(diffs) != 0 || n != 4 {
		t.Errorf("Replay = %d, %v, %v; want 4 rows (two routings, two answers), no diff", n, diffs, err)
	}
}
