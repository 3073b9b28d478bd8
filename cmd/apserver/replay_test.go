package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apserver/apserver/brain"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

func decisionReceipt(t *testing.T, seq int, in controller.Input, out controller.Decision) store.Receipt {
	t.Helper()
	ib, _ := json.Marshal(in)
	ob, _ := json.Marshal(out)
	return store.Receipt{Seq: seq, ID: "r", Kind: store.ReceiptDecision, TurnID: "turn-" + string(rune('0'+seq)),
		Input: ib, Output: ob, PolicyHash: controller.PolicyHash(in.Config), Executed: true}
}

// contextReceipt is a decision receipt that holds the run's context, and
// how the decision was carried out.
func contextReceipt(t *testing.T, seq int, in controller.Input, c fullauto.DriveContext, executed bool, override string) store.Receipt {
	t.Helper()
	r := decisionReceipt(t, seq, in, controller.Decide(in))
	r.Input, _ = json.Marshal(fullauto.DecisionInput{Input: in, Drive: &c})
	r.Executed, r.Override = executed, override
	return r
}

func TestReplay(t *testing.T) {
	done := controller.Input{Objective: "o", Config: controller.DefaultConfig(),
		Turn: controller.TurnSummary{TurnID: "t1", Status: controller.StatusCompleted, AgentMessage: "The task is complete."}}
	goOn := done
	goOn.Turn.AgentMessage = "More to do."
	approval := fullauto.ApprovalInput{Strategy: controller.ApproveNever,
		Request: controller.ApprovalRequest{Kind: "command", Command: "make build", Paths: []string{}}, Denials: map[string]int{}}
	ai, _ := json.Marshal(approval)
	verdict := controller.Approve(approval.Strategy, approval.Request, approval.Denials)
	ao, _ := json.Marshal(fullauto.ApprovalOutput{ApprovalVerdict: verdict, Source: "policy"})
	wrongVerdict := verdict
	wrongVerdict.Outcome = controller.OutcomeForward
	wo, _ := json.Marshal(fullauto.ApprovalOutput{ApprovalVerdict: wrongVerdict, Source: "policy"})

	interrupted := done
	interrupted.Turn.Status = controller.StatusInterrupted
	timedOut := done
	timedOut.Turn.ApprovalTimeouts = 1
	goal := fullauto.DriveContext{Goal: true, OnTimeout: "pause"}
	stopOnTimeout := fullauto.DriveContext{OnTimeout: "stop"}

	tampered := controller.Decide(goOn)
	tampered.Action, tampered.Rule = controller.ActStop, "done"
	otherPolicy := decisionReceipt(t, 4, done, controller.Decide(done))
	otherPolicy.PolicyHash = "0000"

	tests := []struct {
		name    string
		rs      []store.Receipt
		differs []string // "#seq" of each receipt that must be named
	}{
		{"all agree", []store.Receipt{
			decisionReceipt(t, 1, goOn, controller.Decide(goOn)),
			{Seq: 2, Kind: store.ReceiptApproval, Input: ai, Output: ao},
			decisionReceipt(t, 3, done, controller.Decide(done)),
		}, nil},
		{"overrides carried out as the run says", []store.Receipt{
			contextReceipt(t, 1, interrupted, goal, false, fullauto.OverrideGoalInterrupted),
			contextReceipt(t, 2, timedOut, goal, false, fullauto.OverrideTimeoutMode),
			contextReceipt(t, 3, timedOut, stopOnTimeout, true, ""),
			contextReceipt(t, 4, goOn, fullauto.DriveContext{TurnRunning: true}, false, fullauto.OverrideTurnStarted),
		}, nil},
		{"overrides the machine would not apply", []store.Receipt{
			contextReceipt(t, 1, interrupted, fullauto.DriveContext{OnTimeout: "pause"}, false, fullauto.OverrideGoalInterrupted),
			contextReceipt(t, 2, timedOut, stopOnTimeout, false, fullauto.OverrideTimeoutMode),
			contextReceipt(t, 3, goOn, fullauto.DriveContext{}, false, fullauto.OverrideTurnStarted),
		}, []string{"#1", "#2", "#3"}},
		{"a tampered decision, a wrong approval and another policy", []store.Receipt{
			decisionReceipt(t, 1, goOn, tampered),
			{Seq: 2, Kind: store.ReceiptApproval, Input: ai, Output: wo},
			decisionReceipt(t, 3, done, controller.Decide(done)),
			otherPolicy,
		}, []string{"#1", "#2", "#4"}},
	}
	for _, tc := range tests {
		var out bytes.Buffer
		err := replay(&out, tc.rs, false)
		if (err != nil) != (len(tc.differs) > 0) || (err != nil && !errors.Is(err, errReplayDiffers)) {
			t.Errorf("%s: replay = %v\n%s", tc.name, err, out.String())
		}
		var diffLines []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.HasPrefix(l, "DIFF") {
				diffLines = append(diffLines, strings.Fields(l)[1])
			}
		}
		if strings.Join(diffLines, " ") != strings.Join(tc.differs, " ") {
			t.Errorf("%s: receipts reported as differing = %v, want %v\n%s", tc.name, diffLines, tc.differs, out.String())
		}
	}
}

// TestReplayAlignment: an alignment receipt replays to its verdict from
// its record; a stored verdict the rules would not give now differs.
func TestReplayAlignment(t *testing.T) {
	ds := []protocol.ProjectDecision{{ID: "dec_1", Title: "Use PostgreSQL", Text: "All data in PostgreSQL.", Alternatives: []string{"MySQL"}, Status: protocol.DecisionActive}}
	v, rec := brain.JudgeRecorded(protocol.AlignmentAction{Kind: protocol.ActionCommand, Command: "pip install mysql-connector-python"}, brain.Task{}, ds, nil)
	if v.Status != protocol.AlignmentConflicting {
		t.Fatalf("verdict = %+v", v)
	}
	in, _ := json.Marshal(rec)
	out, _ := json.Marshal(v)
	wrong := v
	wrong.Status = protocol.AlignmentAligned
	wo, _ := json.Marshal(wrong)
	lean := rec
	lean.Decisions = nil // as AlignThread stores a set the thread's receipts hold already
	li, _ := json.Marshal(lean)
	lost := lean
	lost.DecisionsHash = "0123" // a set no receipt holds
	lo, _ := json.Marshal(lost)
	rs := []store.Receipt{
		{Seq: 1, Kind: brain.ReceiptKind, TurnID: "t1", Input: li, Output: out}, // stored before the receipt that holds its set
		{Seq: 2, Kind: brain.ReceiptKind, TurnID: "t1", Input: in, Output: out},
		{Seq: 3, Kind: brain.ReceiptKind, TurnID: "t1", Input: lo, Output: out},
		{Seq: 4, Kind: brain.ReceiptKind, TurnID: "t1", Input: in, Output: wo},
	}
	var buf bytes.Buffer
	err := replay(&buf, rs, false)
	for _, want := range []string{"ok   #1 alignment", "ok   #2 alignment", "DIFF #3 alignment", "DIFF #4 alignment", "conflicting (rules, dec_1)"} {
		if !errors.Is(err, errReplayDiffers) || !strings.Contains(buf.String(), want) {
			t.Errorf("replay = %v, want %q in\n%s", err, want, buf.String())
		}
	}
}
