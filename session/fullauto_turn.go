package session

import (
	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/protocol"
)

// responseUsage runs after each model response (turn.go): the drive counts
// the tokens and cost, and a goal reports its progress.
func (t *thread) responseUsage(tr *turn, last protocol.TokenUsageBreakdown) {
	u := fullauto.Response{Input: last.InputTokens, Cached: last.CachedInputTokens, Output: last.OutputTokens}
	if w := t.contextWindow(tr); w != nil {
		u.ContextWindow = *w
	}
	if p, ok := t.m.opts.Config.Prices[tr.modelName]; ok {
		u.Price = fullauto.Price{InputPerMTok: p.InputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok, OutputPerMTok: p.OutputPerMTok}
	}
	t.drive(fullauto.ResponseDone{TurnID: tr.id, Usage: u}, nil)
}

// turnEnded runs right after turn/completed has been sent for tr: the drive
// sums the turn up and decides what comes next.
func (t *thread) turnEnded(tr *turn, status string, te *protocol.TurnError) {
	end := fullauto.TurnEnd{Summary: controller.TurnSummary{TurnID: tr.id, Status: status}}
	if t.autoDrive().Active() { // only a run decides on the turn
		end = fullauto.TurnEnd{Summary: t.summarize(tr, status, te), EndSnapshot: tr.ckpt.End, NoTools: tr.startSnap == nil}
	}
	end.Replaced = tr.replaced
	t.drive(fullauto.TurnEnded{End: end}, nil)
}

// fingerprint takes the workspace fingerprint off the thread goroutine
// (unless the machine knows it) and hands it back.
func (t *thread) fingerprint(e fullauto.Fingerprint) {
	cwd, ctx := t.settings.Cwd, t.ctx
	cache := t.auto.fpCache
	t.auto.fpCache = nil
	go func() {
		fp := e.Known
		if fp == "" {
			fp, cache = autodrive.WorkspaceFingerprint(ctx, cwd, cache)
		}
		t.postEvent(ctx, func() {
			t.auto.fpCache = cache
			t.drive(fullauto.Fingerprinted{Token: e.Token, Fingerprint: fp}, nil)
		})
	}()
}

// askDecisionModel asks the decision model about a finished turn and
// hands the answer back (nil when it failed: the policy decides).
func (t *thread) askDecisionModel(e fullauto.AskModel) {
	dm := t.m.decisionModel()
	ctx := t.ctx
	go func() {
		var ans *controller.ModelAnswer
		if dm != nil {
			a, err := dm.Decide(ctx, e.Input)
			if err != nil {
				t.m.log.Warn("decision model failed; the policy decides", "thread", t.id, "err", err)
			} else {
				ans = &a
			}
		}
		t.postEvent(ctx, func() { t.drive(fullauto.ModelAnswered{Token: e.Token, Answer: ans}, nil) })
	}()
}

// summarize builds the controller's view of a finished turn
// (autodrive.Summarize).
func (t *thread) summarize(tr *turn, status string, te *protocol.TurnError) controller.TurnSummary {
	ft := autodrive.FinishedTurn{ID: tr.id, Status: status, Error: te, ElapsedMs: t.m.clock.Now().Sub(tr.started).Milliseconds(),
		Items: tr.items, Plan: tr.plan, Rules: t.commandRules(), RulesContext: t.rulesContext()}
	if tr.lastAgent != nil {
		ft.LastAgent = tr.lastAgent.Text
	}
	if tr.histStart <= len(t.history) {
		ft.History = t.history[tr.histStart:]
	}
	return autodrive.Summarize(ft)
}
