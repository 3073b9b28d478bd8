package projects

import (
	"context"
	"slices"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
)

// Suggest mode (docs/manager.md#suggest): a tick proposes the run it
// would start; the proposal is stored in the settings, shown in the
// attention summary, project/status and manager/explain, and the run
// starts only after manager/approve.

// settleProposal keeps the pending proposal as the tick left it: kept
// while the tick proposes it, withdrawn once the tick proposes nothing or
// started it. (The attention item follows the tick's decision: attend.)
func (s *Service) settleProposal(ctx context.Context, ws string, st *manager.Settings, d manager.Decision) error {
	if d.Result == manager.ResultWaitingForApproval && d.ProposalID != "" || st.Proposal == nil {
		return nil
	}
	st.Proposal = nil
	return s.save(ctx, ws, *st)
}

// Approve approves the pending proposal id of a workspace (suggest mode),
// then ticks: the tick starts the proposal's run (unless a budget or a
// slot stops it; it starts once they allow).
func (s *Service) Approve(ctx context.Context, cwd, id string) (manager.Decision, error) {
	ws, err := workspace(cwd)
	if err != nil {
		return manager.Decision{}, err
	}
	unlock, err := s.lock(ctx, ws)
	if err != nil {
		return manager.Decision{}, err
	}
	st, err := s.settings(ctx, ws)
	if err == nil {
		switch {
		case st.Mode != manager.ModeSuggest:
			err = invalid("proposalId: the project is in mode %s, not suggest: it proposes nothing", st.Mode)
		case st.Proposal == nil || st.Proposal.ID != id:
			pending := "none is pending"
			if st.Proposal != nil {
				pending = "the pending one is " + st.Proposal.ID
			}
			err = invalid("proposalId: %q is not the project's pending proposal (%s)", id, pending)
		case !slices.Contains(st.Approved, id):
			st.Approved = append(st.Approved, id)
			err = s.save(ctx, ws, st)
		}
	}
	unlock()
	if err != nil {
		return manager.Decision{}, err
	}
	return s.Tick(ctx, ws)
}

// ApproveWire implements manager/approve.
func (s *Service) ApproveWire(ctx context.Context, p protocol.ManagerApproveParams) (protocol.ManagerTickResult, error) {
	if err := p.Validate(); err != nil {
		return protocol.ManagerTickResult{}, err
	}
	d, err := s.Approve(ctx, p.Cwd, p.ProposalID)
	if err != nil {
		return protocol.ManagerTickResult{}, err
	}
	return wireDecision(d), nil
}
