package session

import (
	"context"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
)

// Codex's thread goals (protocol/codex/CORE.md §7) are a view of the thread's full-auto
// drive: the objective, the token budget and six statuses mapped from the
// drive's state and stop condition (fullauto.Drive.GoalStatus). thread/goal/set
// makes a drive that asks the editor for every approval, like Codex's goal
// mode; its continuation turns start without a userMessage item. The
// machine (fullauto.Machine.SetGoal, ClearGoal, GoalOnResume) decides;
// autodrive reads its answers (goal.go there); this file answers.

// goalOnResume syncs a resuming client with the thread's goal, as Codex
// 0.169 does.
func (t *thread) goalOnResume() {
	t.drive(fullauto.GoalOnResume{}, nil)
}

// SetGoal implements thread/goal/set.
func (m *Manager) SetGoal(ctx context.Context, p protocol.ThreadGoalSetParams, reply Reply) {
	m.onLoad(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.SetGoal{Params: p}, func(effs []fullauto.Effect) { reply(autodrive.GoalSetResult(effs)) })
	})
}

// GetGoal implements thread/goal/get.
func (m *Manager) GetGoal(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	m.onLoad(ctx, p.ThreadID, reply, func(t *thread) {
		reply(t.autod().Goal(), nil)
	})
}

// ClearGoal implements thread/goal/clear: the drive ends and is forgotten.
func (m *Manager) ClearGoal(ctx context.Context, p protocol.ThreadGoalClearParams, reply Reply) {
	m.onLoad(ctx, p.ThreadID, reply, func(t *thread) {
		t.drive(fullauto.ClearGoal{}, func(effs []fullauto.Effect) { reply(autodrive.GoalClearResult(effs), nil) })
	})
}
