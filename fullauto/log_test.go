package fullauto

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// TestLogReplaysTheRun: a drive driven through Apply — turns with their
// usage and decisions, an approval forwarded and declined, a pause and a
// resume, a client's turn, a stop — keeps an event log that, encoded and
// decoded as the store keeps it, rebuilds the same machine (Replay) and
// makes the same decisions again, each under the receipt the log names
// (ReplayLog).
func TestLogReplaysTheRun(t *testing.T) {
	opts := Options{ThreadID: "th", ErrorBackoffMs: 500, ApprovalTimeoutMs: 9000}
	d := newDriver(t, opts, protocol.FullAutoStartParams{Approvals: ptr(protocol.FullAutoApprovePolicy)})
	more := controller.TurnSummary{AgentMessage: "more to do", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}}
	d.starts = []TurnInput{{Kind: controller.KindNormal}}
	d.m.TurnStarted(d.now, "t1", controller.KindNormal)
	d.apply(d.m.ResponseDone(d.now, "t1", Response{Input: 1200, Cached: 200, Output: 300, Price: Price{InputPerMTok: 3, OutputPerMTok: 15}}))
	outcome, effs := d.m.RequestAsked(d.now, "t1", "k1", controller.ApprovalRequest{Kind: "command", Command: "git push", RuleDecision: "prompt"})
	d.apply(effs)
	if outcome != controller.OutcomeForward {
		t.Fatalf("RequestAsked = %q, want forward", outcome)
	}
	_, _, effs = d.m.RequestForwarded(d.now, "t1", 7, "command", "git push", "approve command: git push")
	d.apply(effs)
	d.apply(d.m.RequestSettled(d.now+10, "t1", 7, Settled{Declined: true}))
	var decided []StoreReceipt // d.decided holds a turn's
	d.end("t1", more)
	decided = append(decided, d.decided...)
	d.apply(d.m.Pause(d.now))
	d.apply(d.m.TurnStarted(d.now, "c1", "")) // a client's turn while paused
	d.apply(d.m.TurnEnded(d.now+5, TurnEnd{Summary: controller.TurnSummary{TurnID: "c1", Status: controller.StatusCompleted}}))
	effs, err := d.m.Resume(d.now + 20)
	if err != nil {
		t.Fatal(err)
	}
	d.apply(effs)
	d.turn("t2", controller.TurnSummary{Status: controller.StatusFailed, Error: &controller.TurnError{Message: "overloaded", Recoverable: true}})
	decided = append(decided, d.decided...)
	d.turn("t3", more)
	d.apply(d.m.Stop(d.now + 30))
	decided = append(decided, d.decided...) // t3's and the stop's
	if len(decided) != 4 {
		t.Fatalf("%d decisions, want 4", len(decided))
	}

	// The log as the store keeps it: JSON entries and base.
	lg := d.m.Log()
	base, err := json.Marshal(lg.Base)
	if err != nil {
		t.Fatal(err)
	}
	var entries []json.RawMessage
	for _, e := range lg.Events {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("encoding %T: %v", e.Event, err)
		}
		entries = append(entries, b)
	}
	stored, err := DecodeLog(base, entries)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored.Events) != len(lg.Events) || !reflect.DeepEqual(stored.Base, lg.Base) {
		t.Fatalf("decoded log has %d events, base %+v; want %d, %+v", len(stored.Events), stored.Base, len(lg.Events), lg.Base)
	}

	r := Replay(opts, stored)
	got, _ := json.Marshal(r.Drive())
	want, _ := json.Marshal(d.m.Drive())
	if string(got) != string(want) {
		t.Errorf("Replay(log).Run() =\n%s\nwant\n%s", got, want)
	}
	if r.Token() != d.m.Token() || !reflect.DeepEqual(r.Wire(d.now), d.m.Wire(d.now)) {
		t.Errorf("Replay(log): token %d, wire %+v; want %d, %+v", r.Token(), r.Wire(d.now), d.m.Token(), d.m.Wire(d.now))
	}
	if len(r.Log().Events) != len(lg.Events) {
		t.Errorf("Replay(log).Log() has %d events, want %d", len(r.Log().Events), len(lg.Events))
	}

	again := ReplayLog(stored)
	if len(again) != len(decided) {
		t.Fatalf("ReplayLog made %d decisions, want %d", len(again), len(decided))
	}
	seq := 0
	for i, rd := range again {
		w, g := decided[i], rd.Receipt
		if !reflect.DeepEqual(g.Output, w.Output) || g.Executed != w.Executed || g.Override != w.Override || g.TurnID != w.TurnID {
			t.Errorf("ReplayLog decision %d = %+v, want %+v", i, g, w)
		}
		if rd.ReceiptID == "" {
			t.Errorf("ReplayLog decision %d names no receipt", i)
		}
		var n int
		if _, err := fmt.Sscanf(rd.ReceiptID, "r%d", &n); err != nil || n <= seq {
			t.Errorf("ReplayLog decision %d under receipt %q, want the receipts in order", i, rd.ReceiptID)
		}
		seq = n
	}
}

// TestLogStartsWithTheRun: a thread's events before its drive are not in
// the drive's log; a drive started during a client's turn records that turn
// in the log's base, so a replay decides on it as the live machine did;
// clearing the goal forgets the log.
func TestLogStartsWithTheRun(t *testing.T) {
	m := New(Options{ThreadID: "th"})
	m.Apply(1, TurnStarted{TurnID: "c1"})
	m.Apply(2, ResponseDone{TurnID: "c1", Usage: Response{Input: 10, Output: 5}})
	if n := len(m.Log().Events); n != 0 {
		t.Fatalf("log has %d events before any run, want 0", n)
	}
	effs := m.Apply(3, Start{Params: protocol.FullAutoStartParams{Objective: ptr("go")}})
	lg, ok := effs[0].(LogEvent)
	if !ok || !lg.Fresh || lg.Base.TurnID != "c1" || lg.Base.Usage.Output != 5 {
		t.Fatalf("first effect of Start = %+v, want a fresh LogEvent with base turn c1 (5 output tokens)", effs[0])
	}
	m.Apply(4, TurnEnded{End: TurnEnd{Summary: controller.TurnSummary{TurnID: "c1", Status: controller.StatusCompleted}}})
	live, _ := json.Marshal(m.Drive())
	r := Replay(Options{ThreadID: "th"}, m.Log())
	again, _ := json.Marshal(r.Drive())
	if string(live) != string(again) {
		t.Errorf("replayed run\n%s\nwant\n%s", again, live)
	}
	if r.deciding == nil || r.deciding.Turn.Usage.Output != 5 {
		t.Errorf("replayed machine decides on %+v, want turn c1 with its 5 output tokens", r.deciding)
	}
	m.Apply(5, ClearGoal{})
	if n := len(m.Log().Events); n != 0 {
		t.Errorf("log has %d events after the run was cleared, want 0", n)
	}
}

// TestAnswersAreEffects: what an event asks is answered among its effects.
func TestAnswersAreEffects(t *testing.T) {
	m := New(Options{ThreadID: "th", DecisionModel: true})
	if _, ok := first[Refused](m.Apply(1, Resume{})); !ok {
		t.Errorf("Resume with no run: no Refused")
	}
	if _, ok := first[Refused](m.Apply(1, Start{})); !ok {
		t.Errorf("Start with no objective on an empty thread: no Refused")
	}
	m.Apply(2, Start{Params: protocol.FullAutoStartParams{Objective: ptr("go"), Approvals: ptr(protocol.FullAutoApprovePolicy)}})
	r, ok := first[Refused](m.Apply(3, Start{Params: protocol.FullAutoStartParams{Objective: ptr("again")}}))
	var pe *protocol.Error
	if !ok || !errors.As(r.Err, &pe) {
		t.Errorf("Start on a going run = %v, want Refused with a protocol error", r.Err)
	}
	m.Apply(4, TurnStarted{TurnID: "t1"})
	req := controller.ApprovalRequest{Kind: "command", Command: "git push", RuleDecision: "prompt"}
	if v, ok := first[Verdict](m.Apply(5, RequestAsked{TurnID: "t1", Key: "k", Request: req})); !ok || v.Outcome != controller.OutcomeForward {
		t.Errorf("RequestAsked = %+v, %v; want Verdict forward", v, ok)
	}
	if a, ok := first[AskAboutRequest](m.Apply(6, RequestPassedOn{Key: "k", Request: req})); !ok || a.Objective != "go" {
		t.Errorf("RequestPassedOn = %+v, %v; want AskAboutRequest for objective go", a, ok)
	}
	if _, ok := first[AskAboutRequest](m.Apply(7, RequestPassedOn{Key: "k", Request: req})); ok {
		t.Errorf("RequestPassedOn twice: the model is asked once per request")
	}
	if tr, ok := first[Tracked](m.Apply(8, RequestForwarded{TurnID: "t1", ID: 3, Kind: "command", Command: "git push"})); !ok || tr.TimeoutMs != 0 {
		t.Errorf("RequestForwarded = %+v, %v; want Tracked", tr, ok)
	}
	if c, ok := first[GoalCleared](m.Apply(9, ClearGoal{})); !ok || !c.Cleared {
		t.Errorf("ClearGoal = %+v, %v; want GoalCleared{true}", c, ok)
	}
}

func first[A Effect](effs []Effect) (A, bool) {
	a, ok, _ := split[A](effs)
	return a, ok
}
