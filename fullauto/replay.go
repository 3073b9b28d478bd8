package fullauto

import (
	"fmt"

	"github.com/apserver/apserver/controller"
)

// ReplayDecision re-decides a stored decision receipt with today's policy
// and machine: controller.Replay, then, when the receipt holds the drive's
// context, how the decision is carried out (Resolve: the overrides), and
// that the decision model had a say when it answered. why explains a
// difference.
func ReplayDecision(in DecisionInput, out controller.Decision, policyHash string, executed bool, override string) (got controller.Decision, why string, same bool) {
	got, same = controller.Replay(controller.Receipt{Input: in.Input, Output: out, PolicyHash: policyHash})
	if !same {
		return got, got.Reason, false
	}
	if in.Model != nil {
		bare := in.Input
		bare.Model = nil
		if !ModelHasSay(bare) {
			return got, "the decision model was asked, but the hard rules now decide alone", false
		}
	}
	if in.Drive != nil {
		_, ex, ov := Resolve(got, *in.Drive)
		if ex != executed || ov != override {
			return got, fmt.Sprintf("carried out as executed=%t override=%q, now executed=%t override=%q", executed, override, ex, ov), false
		}
	}
	return got, got.Reason, true
}

// ReplayApproval re-runs controller.Approve on a stored approval receipt.
// An answer the decision model gave cannot be re-asked; its receipt is
// checked for the policy part (the rules passed the request on).
func ReplayApproval(in ApprovalInput, out ApprovalOutput) (got controller.ApprovalVerdict, why string, same bool) {
	got = controller.Approve(in.Strategy, in.Request, in.Denials)
	want := out.ApprovalVerdict
	if out.Source == controller.SourceModel {
		if !ModelMayAnswerRequest(in.Strategy, in.Request) {
			return got, "the decision model may no longer answer this request: a human decides", false
		}
		if got.Outcome != controller.OutcomeForward {
			return got, fmt.Sprintf("the policy now answers %s (rule %s) instead of asking the decision model", got.Outcome, got.Rule), false
		}
		return got, want.Reason, true
	}
	if got.Outcome != want.Outcome || got.Rule != want.Rule {
		return got, fmt.Sprintf("stored %s (rule %s), now %s (rule %s)", want.Outcome, want.Rule, got.Outcome, got.Rule), false
	}
	return got, want.Reason, true
}

// Replayed is a decision made again by replaying a drive's log: the receipt
// the machine asked to store, and the id it was stored under (the
// ReceiptStored that followed it in the log; "" when the log ends first).
type Replayed struct {
	ReceiptID string
	Receipt   StoreReceipt
}

// ReplayLog replays a drive's log with the options it began with and
// returns the decisions the machine made on the way, in order: the same
// events give the same decisions, which apserver replay compares with the
// stored receipts.
func ReplayLog(lg Log) []Replayed {
	m := New(lg.Base.Options)
	m.setBase(lg.Base)
	var out []Replayed
	waiting := -1 // the decision whose ReceiptStored comes next
	for _, e := range lg.Events {
		if rs, ok := e.Event.(ReceiptStored); ok && waiting >= 0 {
			out[waiting].ReceiptID = rs.ID
			waiting = -1
		}
		for _, eff := range m.Apply(e.AtMs, e.Event) {
			if sr, ok := eff.(StoreReceipt); ok && sr.Kind == ReceiptDecision {
				out = append(out, Replayed{Receipt: sr})
				waiting = len(out) - 1
			}
		}
	}
	return out
}
