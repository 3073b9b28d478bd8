package session

import (
	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/internal/uuid"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tooloutput"
)

// handoff carries out fullauto.Handoff: compaction keeps leaving the
// context too full to work in, so the drive goes on in a fresh thread,
// forked from this one without its turns and started with a handoff (the
// objective, the plan and the latest compaction summary). This drive stops,
// naming the new thread (fullauto.Machine.HandedOff).
func (t *thread) handoff(e fullauto.Handoff) {
	text := t.handoffText(e.Drive.Objective)
	now := t.m.clock.Now().UnixMilli()
	meta := store.Thread{
		ID: uuid.NewV7(), ForkedFromID: t.id, Cwd: t.settings.Cwd, Preview: tooloutput.CutBytes(e.Drive.Objective, 200),
		Ephemeral: t.meta.Ephemeral, CreatedAt: now, UpdatedAt: now,
	}
	nt := t.m.newThread(meta, t.settings)
	from, run := t.id, e.Drive
	nt.post(func() {
		var failed error
		nt.create(func(_ any, err error) { failed = err })
		if failed != nil {
			t.m.log.Error("full auto: creating the handoff thread", "thread", from, "err", failed)
			t.post(func() {
				t.drive(fullauto.TurnStartFailed{Message: "handing off to a fresh thread: " + failed.Error()}, nil)
			})
			return
		}
		nt.drive(fullauto.Adopt{From: run, FromThread: from, Handoff: text}, nil)
	})
	t.drive(fullauto.HandedOff{ThreadID: meta.ID}, nil)
}

// handoffText is the hidden input of the fresh thread's first turn
// (autodrive.HandoffText).
func (t *thread) handoffText(objective string) string {
	return autodrive.HandoffText(t.id, objective, t.pinnedPlan(), latestSummary(t.history))
}

// pinnedPlan is the plan section a compaction would pin now.
func (t *thread) pinnedPlan() string {
	return compaction.PlanSection(t.pinnedContext(&turn{}))
}

// latestSummary is the summary of the latest compaction in h.
func latestSummary(h []model.Entry) string {
	for i := len(h) - 1; i >= 0; i-- {
		if s, ok := entry(h[i]).Summary(); ok {
			return s
		}
	}
	return ""
}
