package autodrive

import (
	"context"
	"fmt"

	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
)

// Codex's thread goals (protocol/codex/CORE.md §7) are a view of the
// thread's drive: the machine decides (fullauto.Machine.SetGoal,
// ClearGoal, GoalOnResume); these read its answers.

// GoalSetResult is thread/goal/set's answer among effs: the goal, or the
// machine's refusal.
func GoalSetResult(effs []fullauto.Effect) (any, error) {
	if r, ok := Answer[fullauto.Refused](effs); ok {
		return nil, r.Err
	}
	g, _ := Answer[fullauto.GoalAnswer](effs)
	return protocol.ThreadGoalSetResult{Goal: g.Goal}, nil
}

// GoalClearResult is thread/goal/clear's answer among effs.
func GoalClearResult(effs []fullauto.Effect) protocol.ThreadGoalClearResult {
	c, _ := Answer[fullauto.GoalCleared](effs)
	return protocol.ThreadGoalClearResult{Cleared: c.Cleared}
}

// Goal is thread/goal/get's answer: the drive as a goal, none without a
// drive or on an ephemeral thread.
func (d *Drive) Goal() protocol.ThreadGoalGetResult {
	if d.Run() == nil || !d.th.Persistent() {
		return protocol.ThreadGoalGetResult{}
	}
	g := d.Machine().Goal(d.Now())
	return protocol.ThreadGoalGetResult{Goal: &g}
}

// TurnBegan tells the machine a turn started (right after turn/started),
// of the drive's input in, or nil for a client's turn; it returns what the
// turn starts with beyond its user message: a call carried over a restart
// (nil for none) and hidden input ("" for none), which the model sees as
// the user's but no item shows (like Codex's goal continuation).
func (d *Drive) TurnBegan(turnID string, in *fullauto.TurnInput) (carried *ResumedCall, hidden string) {
	kind := ""
	if in != nil {
		kind = in.Kind
	}
	d.Do(fullauto.TurnStarted{TurnID: turnID, Kind: kind}, nil)
	if in == nil {
		return nil, ""
	}
	rc, _ := in.Resume.(*ResumedCall)
	return rc, in.Hidden
}

// StoreHidden stores hidden input of turn turnID, so that a reload
// rebuilds the same model history.
func (d *Drive) StoreHidden(ctx context.Context, turnID, text string) error {
	if !d.th.Persistent() {
		return nil
	}
	db, err := d.env.Store()
	if err == nil {
		err = db.PutHiddenInput(ctx, d.th.ID(), turnID, text)
	}
	if err != nil {
		return fmt.Errorf("storing hidden input: %w", err)
	}
	return nil
}
