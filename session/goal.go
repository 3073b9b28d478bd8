package session

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// Codex's thread goals (protocol/codex/CORE.md §7) are a view of the thread's full-auto
// run: the objective, the token budget and six statuses mapped from the
// run's state and stop condition. thread/goal/set makes a run that asks the
// editor for every approval, like Codex's goal mode; its continuation
// turns start without a userMessage item.

// goalStatus maps a run onto Codex's goal statuses.
func (r *faRun) goalStatus() protocol.ThreadGoalStatus {
	budget := false
	switch r.Stop {
	case controller.StopBudgetTokens, controller.StopBudgetTurns, controller.StopBudgetTime, controller.StopBudgetCost:
		budget = true
	}
	switch r.State {
	case protocol.FullAutoRunning, protocol.FullAutoWaiting:
		return protocol.GoalActive
	case protocol.FullAutoPaused:
		switch {
		case budget:
			return protocol.GoalBudgetLimited
		case r.Stop == controller.StopRetriesExhausted:
			return protocol.GoalBlocked // the same failure, again and again
		}
		return protocol.GoalPaused
	}
	switch {
	case r.Stop == controller.StopCompleted:
		return protocol.GoalComplete
	case budget:
		return protocol.GoalBudgetLimited
	case r.Stop == controller.StopUserStop:
		return protocol.GoalPaused
	}
	return protocol.GoalBlocked
}

// wireGoal renders the run as a Codex goal.
func (t *thread) wireGoal() protocol.ThreadGoal {
	r := t.auto.run
	spent := r.Spent.TimeMs
	if !t.auto.runningSince.IsZero() {
		spent += time.Since(t.auto.runningSince).Milliseconds()
	}
	g := protocol.ThreadGoal{
		ThreadID: t.id, Objective: r.Objective, Status: r.goalStatus(),
		TokensUsed: r.Spent.Tokens, TimeUsedSeconds: spent / 1000,
		CreatedAt: r.GoalCreatedAt, UpdatedAt: r.GoalUpdatedAt,
	}
	if g.CreatedAt == 0 {
		g.CreatedAt = r.StartedAtMs / 1000
	}
	if g.UpdatedAt == 0 {
		g.UpdatedAt = g.CreatedAt
	}
	if b := r.Config.Budgets.Tokens; b > 0 {
		g.TokenBudget = ptr(b)
	}
	return g
}

// goalChanged sends thread/goal/updated for the thread's run (turnID: the
// turn it happened in, nil for none).
func (t *thread) goalChanged(turnID *string) {
	r := t.auto.run
	if r == nil || t.meta.Ephemeral {
		return
	}
	r.GoalUpdatedAt = time.Now().Unix()
	t.notifyRun(protocol.NotifyThreadGoalUpdated, protocol.ThreadGoalUpdatedNotification{ThreadID: t.id, TurnID: turnID, Goal: t.wireGoal()})
}

// goalOnResume syncs a resuming client with the thread's goal, as Codex
// 0.169 does: thread/goal/updated when there is one, thread/goal/cleared
// when there is none.
func (t *thread) goalOnResume() {
	if t.meta.Ephemeral {
		return
	}
	if t.ensureRun() == nil {
		t.notify(protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.id})
		return
	}
	t.notify(protocol.NotifyThreadGoalUpdated, protocol.ThreadGoalUpdatedNotification{ThreadID: t.id, Goal: t.wireGoal()})
}

// SetGoal implements thread/goal/set.
func (m *Manager) SetGoal(ctx context.Context, p protocol.ThreadGoalSetParams, reply Reply) {
	t, err := m.load(ctx, p.ThreadID)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() { t.setGoal(p, reply) })
}

// GetGoal implements thread/goal/get.
func (m *Manager) GetGoal(ctx context.Context, p protocol.ThreadIDParams, reply Reply) {
	t, err := m.load(ctx, p.ThreadID)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() {
		if t.ensureRun() == nil || t.meta.Ephemeral {
			reply(protocol.ThreadGoalGetResult{}, nil)
			return
		}
		g := t.wireGoal()
		reply(protocol.ThreadGoalGetResult{Goal: &g}, nil)
	})
}

// ClearGoal implements thread/goal/clear: the run ends and is forgotten.
func (m *Manager) ClearGoal(ctx context.Context, p protocol.ThreadGoalClearParams, reply Reply) {
	t, err := m.load(ctx, p.ThreadID)
	if err != nil {
		reply(nil, err)
		return
	}
	t.post(func() {
		if t.ensureRun() == nil {
			reply(protocol.ThreadGoalClearResult{Cleared: false}, nil)
			return
		}
		t.auto.epoch++
		t.accrue()
		t.auto.run = nil
		t.auto.runningSince = time.Time{}
		t.m.fa.attn.clear(attnKey{t.id, protocol.AttentionPaused, 0})
		if t.persistent() {
			if db, err := t.m.store(); err == nil {
				if err := db.DeleteRun(context.WithoutCancel(t.ctx), t.id); err != nil {
					t.m.log.Error("deleting a full-auto run", "thread", t.id, "err", err)
				}
			}
		}
		reply(protocol.ThreadGoalClearResult{Cleared: true}, nil)
		t.notify(protocol.NotifyThreadGoalCleared, protocol.ThreadGoalClearedNotification{ThreadID: t.id})
	})
}

func goalErr(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidRequest, format, args...)
}

// setGoal answers thread/goal/set on the thread goroutine, with Codex's
// semantics and error messages.
func (t *thread) setGoal(p protocol.ThreadGoalSetParams, reply Reply) {
	if t.meta.Ephemeral {
		reply(nil, goalErr("ephemeral thread does not support goals: %s", t.id))
		return
	}
	if p.Objective != nil && strings.TrimSpace(*p.Objective) == "" {
		reply(nil, goalErr("goal objective must not be empty"))
		return
	}
	if v := p.TokenBudget.Value; p.TokenBudget.Present && v != nil && *v <= 0 {
		reply(nil, goalErr("goal budgets must be positive when provided"))
		return
	}
	release := t.hold()
	defer release()
	r := t.ensureRun()
	startTurn := false
	switch {
	case r == nil && p.Objective == nil:
		reply(nil, goalErr("cannot update goal for thread %s: no goal exists", t.id))
		return
	case p.Objective != nil && (r == nil || r.State == protocol.FullAutoStopped):
		// A new goal, or one replacing a finished one.
		r = t.newRun(strings.TrimSpace(*p.Objective))
		r.Goal = true
		r.Approvals = controller.ApproveAsk
		r.GoalCreatedAt = time.Now().Unix()
		t.installRun(r)
		startTurn = true
	case p.Objective != nil:
		r.Objective = strings.TrimSpace(*p.Objective)
	}
	if p.TokenBudget.Present {
		r.Config.Budgets.Tokens = 0
		if v := p.TokenBudget.Value; v != nil {
			r.Config.Budgets.Tokens = *v
		}
	}
	if p.Status != nil {
		switch *p.Status {
		case protocol.GoalPaused:
			if r.active() {
				t.setRunState(protocol.FullAutoPaused, "goal paused", controller.StopNone)
			} else if r.goalStatus() != protocol.GoalBudgetLimited && r.State == protocol.FullAutoStopped {
				// Budget limits take precedence over a pause; other
				// finished goals just show paused.
				t.setRunState(protocol.FullAutoPaused, "goal paused", controller.StopNone)
			}
			startTurn = false
		case protocol.GoalActive:
			if !r.active() {
				r.Retries = 0
				t.setRunState(protocol.FullAutoRunning, "goal resumed", controller.StopNone)
			}
			startTurn = true
		case protocol.GoalComplete:
			t.setRunState(protocol.FullAutoStopped, "goal marked complete", controller.StopCompleted)
			startTurn = false
		case protocol.GoalBlocked:
			t.setRunState(protocol.FullAutoStopped, "goal marked blocked", controller.StopWaitingOnHuman)
			startTurn = false
		case protocol.GoalBudgetLimited, protocol.GoalUsageLimited:
			t.setRunState(protocol.FullAutoStopped, "goal marked "+string(*p.Status), controller.StopBudgetTokens)
			startTurn = false
		}
	}
	t.saveRun()
	g := t.wireGoal()
	reply(protocol.ThreadGoalSetResult{Goal: g}, nil)
	// The one thread/goal/updated below says it all.
	t.auto.held = slices.DeleteFunc(t.auto.held, func(n heldNote) bool { return n.method == protocol.NotifyThreadGoalUpdated })
	release()
	t.goalChanged(nil)
	if startTurn && r.active() && t.turn == nil {
		t.startRunTurn(autoTurnInput{kind: controller.KindNormal, hidden: goalText(r)}, "")
	}
}

// goalText is the hidden input of a goal's continuation turn, after Codex's.
func goalText(r *faRun) string {
	var b strings.Builder
	b.WriteString("Continue working toward the active thread goal.\n\nObjective:\n")
	b.WriteString(r.Objective)
	if tb := r.Config.Budgets.Tokens; tb > 0 {
		b.WriteString("\n\nToken budget: ")
		b.WriteString(strconv.FormatInt(tb, 10))
		b.WriteString(", used: ")
		b.WriteString(strconv.FormatInt(r.Spent.Tokens, 10))
		b.WriteString(", remaining: ")
		b.WriteString(strconv.FormatInt(max(0, tb-r.Spent.Tokens), 10))
	}
	b.WriteString("\n\nBefore you say the objective is achieved, audit it against real evidence (tests, builds, the files themselves). " +
		"When it is fully achieved and verified, say \"The task is complete.\"")
	return b.String()
}
