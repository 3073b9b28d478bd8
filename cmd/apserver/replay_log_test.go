package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// loggedRun drives a machine as the session does — two turns, each
// decided and its receipt stored — and returns the log and the receipts
// as the store keeps them.
func loggedRun(t *testing.T) (store.FullAutoLog, []store.Receipt) {
	t.Helper()
	m := fullauto.New(fullauto.Options{ThreadID: "th"})
	var lg store.FullAutoLog
	var rs []store.Receipt
	now := int64(1000)
	var feed func(ev fullauto.Event)
	feed = func(ev fullauto.Event) {
		now += 100
		for _, e := range m.Apply(now, ev) {
			switch e := e.(type) {
			case fullauto.LogEvent:
				if e.Fresh {
					lg.Base, _ = json.Marshal(e.Base)
				}
				b, err := json.Marshal(e.Entry)
				if err != nil {
					t.Fatal(err)
				}
				lg.Entries = append(lg.Entries, b)
			case fullauto.Fingerprint:
				defer feed(fullauto.Fingerprinted{Token: e.Token, Fingerprint: "fp"})
			case fullauto.StoreReceipt:
				seq := len(rs) + 1
				in, _ := json.Marshal(e.Input)
				out, _ := json.Marshal(e.Output)
				id := "r" + string(rune('0'+seq))
				rs = append(rs, store.Receipt{Seq: seq, ID: id, Kind: e.Kind, TurnID: e.TurnID, Input: in, Output: out,
					PolicyHash: e.PolicyHash, Executed: e.Executed, Override: e.Override})
				if e.Kind == fullauto.ReceiptDecision {
					defer feed(fullauto.ReceiptStored{ID: id, Seq: seq})
				}
			}
		}
	}
	feed(fullauto.Start{Params: protocol.FullAutoStartParams{Objective: ptrTo("make it work")}})
	feed(fullauto.TurnStarted{TurnID: "t1", Kind: controller.KindNormal})
	feed(fullauto.TurnEnded{End: fullauto.TurnEnd{Summary: controller.TurnSummary{TurnID: "t1", Status: controller.StatusCompleted,
		AgentMessage: "Halfway.", Steps: []controller.Step{{Tool: "x", Action: "x: 1"}}}}})
	feed(fullauto.TurnStarted{TurnID: "t2", Kind: controller.KindNormal})
	feed(fullauto.TurnEnded{End: fullauto.TurnEnd{Summary: controller.TurnSummary{TurnID: "t2", Status: controller.StatusCompleted,
		AgentMessage: "The task is complete."}}})
	if len(rs) != 2 {
		t.Fatalf("%d receipts, want 2", len(rs))
	}
	return lg, rs
}

// TestReplayLog: apserver replay replays the run's event log through the
// machine and gets the stored decisions again; a stored decision the log
// does not give is named.
func TestReplayLog(t *testing.T) {
	lg, rs := loggedRun(t)
	var out bytes.Buffer
	if err := replayLog(&out, lg, rs); err != nil || !strings.Contains(out.String(), "2 decisions replayed, 0 differ") {
		t.Fatalf("replayLog = %v\n%s", err, out.String())
	}

	var d controller.Decision
	_ = json.Unmarshal(rs[1].Output, &d)
	d.Action, d.Rule = controller.ActContinue, "continue"
	rs[1].Output, _ = json.Marshal(d)
	out.Reset()
	if err := replayLog(&out, lg, rs); !errors.Is(err, errReplayDiffers) || !strings.Contains(out.String(), "2 decisions replayed, 1 differ") {
		t.Errorf("replayLog with a tampered receipt = %v\n%s", err, out.String())
	}
}
