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
