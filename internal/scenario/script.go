// Package scenario holds what the full-auto scenario suites share: the
// golden decision script that both the in-process suite (session) and the
// binary-level one (e2e) render from stored receipts, so that the two
// compare against the same golden files in the same words. Tests only.
package scenario

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/store"
)

// DecisionScript renders receipts as the golden decision script: one
// line per receipt, with what the controller saw and decided (nothing
// that depends on timing, ids or token counts).
func DecisionScript(rs []store.Receipt) (string, error) {
	var b strings.Builder
	for _, r := range rs {
		switch r.Kind {
		case store.ReceiptDecision:
			var in controller.Input
			var d controller.Decision
			if err := json.Unmarshal(r.Input, &in); err != nil {
				return "", fmt.Errorf("receipt %s input: %w", r.ID, err)
			}
			if err := json.Unmarshal(r.Output, &d); err != nil {
				return "", fmt.Errorf("receipt %s output: %w", r.ID, err)
			}
			fmt.Fprintf(&b, "decide turn=%d %s\n", in.Spent.Turns, describeTurn(in.Turn))
			fmt.Fprintf(&b, "  -> %s rule=%s", d.Action, d.Rule)
			if d.StopCondition != "" {
				fmt.Fprintf(&b, " stop=%s", d.StopCondition)
			}
			if d.WrapUp {
				b.WriteString(" wrapUp")
			}
			fmt.Fprintf(&b, " source=%s", d.Source)
			if !r.Executed {
				fmt.Fprintf(&b, " (not executed: %s)", r.Override)
			}
			b.WriteString("\n")
		case store.ReceiptApproval:
			var in fullauto.ApprovalInput
			var out fullauto.ApprovalOutput
			if err := json.Unmarshal(r.Input, &in); err != nil {
				return "", fmt.Errorf("receipt %s input: %w", r.ID, err)
			}
			if err := json.Unmarshal(r.Output, &out); err != nil {
				return "", fmt.Errorf("receipt %s output: %w", r.ID, err)
			}
			what := in.Request.Command
			if what == "" {
				what = strings.Join(in.Request.Paths, ",")
			}
			fmt.Fprintf(&b, "approve %s %q (%s)\n  -> %s rule=%s source=%s\n", in.Request.Kind, what, in.Strategy, out.Outcome, out.Rule, out.Source)
		}
	}
	return b.String(), nil
}

func describeTurn(s controller.TurnSummary) string {
	kind := s.Kind
	if kind == "" {
		kind = controller.KindNormal
	}
	parts := []string{kind, s.Status}
	if s.Error != nil {
		parts = append(parts, fmt.Sprintf("error=%s(recoverable=%t)", s.Error.Kind, s.Error.Recoverable))
	}
	var steps []string
	for _, st := range s.Steps {
		mark := ""
		if st.Error {
			mark = "!"
		}
		steps = append(steps, mark+st.Action)
	}
	if len(steps) > 0 {
		parts = append(parts, fmt.Sprintf("steps=%q", steps))
	}
	if s.ChecksPassed != nil {
		parts = append(parts, fmt.Sprintf("checks=%t", *s.ChecksPassed))
	}
	if s.ReviewApproved != nil {
		parts = append(parts, fmt.Sprintf("review=%t", *s.ReviewApproved))
	}
	for _, f := range []struct {
		n    int
		name string
	}{{s.Compactions, "compactions"}, {s.PendingApprovals, "pendingApprovals"}, {s.PendingQuestions, "pendingQuestions"}, {s.ApprovalTimeouts, "approvalTimeouts"}} {
		if f.n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", f.name, f.n))
		}
	}
	if s.EmptyReply {
		parts = append(parts, "empty")
	}
	if s.AgentMessage != "" {
		parts = append(parts, fmt.Sprintf("msg=%q", clipText(s.AgentMessage, 60)))
	}
	return strings.Join(parts, " ")
}

func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
