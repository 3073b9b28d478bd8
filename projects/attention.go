package projects

import (
	"fmt"
	"time"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
)

// What of a project waits on a human (docs/manager.md#explain-and-status):
// the runs of its blueprint that wait (the runner also puts those in the
// attention summary) and the manager's own waits — a suggestion to
// approve, a budget spent, a paused autopilot — which the Service puts in
// the attention summary itself (Options.Attention).

// managerWait is the manager's own wait, if any: st are the project's
// settings, last the last tick's decision (nil when none), since its time.
func managerWait(ws string, st manager.Settings, last *manager.Decision, since int64) *protocol.AttentionItem {
	if st.Mode == manager.ModeOff || st.Mode == "" {
		return nil
	}
	it := &protocol.AttentionItem{SinceMs: since}
	switch {
	case st.Paused:
		it.Kind, it.Reason = protocol.AttentionPaused, fmt.Sprintf("the autopilot of project %s is paused", ws)
	case last == nil:
		return nil
	case last.Result == manager.ResultWaitingForApproval && len(last.TaskIDs) > 0:
		it.Kind, it.Reason = protocol.AttentionApproval, fmt.Sprintf("project %s: %s", ws, last.Reason)
		it.TaskID = last.TaskIDs[0]
		if last.ProposalID != "" { // suggest: manager/approve {cwd, proposalId}
			it.ProposalID, it.Cwd = last.ProposalID, ws
		}
	case last.Result == manager.ResultBudgetExhausted:
		it.Kind, it.Reason = protocol.AttentionPaused, fmt.Sprintf("project %s: a daily budget is spent (%s)", ws, last.Reason)
	default:
		return nil
	}
	return it
}

// runWaits are the project's runs that wait on a human.
func runWaits(runs []manager.Run) []protocol.AttentionItem {
	var out []protocol.AttentionItem
	for _, r := range runs {
		if r.ID == "" || !r.Active() || (r.Status != protocol.RunWaiting && r.Status != protocol.RunPaused) {
			continue
		}
		it := protocol.AttentionItem{Kind: protocol.AttentionApproval, RunID: r.ID, Reason: fmt.Sprintf("run %s is %s", r.ID, r.Status)}
		if r.WaitingFor != nil {
			it.Reason += " for " + string(*r.WaitingFor)
			if *r.WaitingFor == protocol.WaitClarification {
				it.Kind = protocol.AttentionQuestion
			}
		}
		if len(r.TaskIDs) > 0 {
			it.TaskID = r.TaskIDs[0]
		}
		out = append(out, it)
	}
	return out
}

// attend puts the manager's wait of ws in the attention summary, or takes
// it out; d is the decision of the tick just made (nil: the last one).
func (s *Service) attend(ws string, st manager.Settings, d *manager.Decision, now time.Time) {
	s.mu.Lock()
	if s.lastDecision == nil {
		s.lastDecision = map[string]manager.Decision{}
	}
	if d != nil {
		s.lastDecision[ws] = *d
	}
	var last *manager.Decision
	if ld, ok := s.lastDecision[ws]; ok {
		last = &ld
	}
	s.mu.Unlock()
	if s.opts.Attention != nil {
		s.opts.Attention(ws, managerWait(ws, st, last, now.UnixMilli()))
	}
}
