package fullauto

import (
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

// The tests below call the machine one method per event, as its driver
// did before Apply; each method here is Apply with that event, its answer
// read from the effects and the log's entries left out, so the tests judge
// the same effects as before.

// split takes the answer (of type A) and the log entries out of effs.
func split[A Effect](effs []Effect) (ans A, ok bool, rest []Effect) {
	for _, e := range effs {
		switch x := e.(type) {
		case A:
			ans, ok = x, true
		case LogEvent:
		default:
			rest = append(rest, e)
		}
	}
	return ans, ok, rest
}

func plain(effs []Effect) []Effect {
	_, _, rest := split[LogEvent](effs)
	return rest
}

func refusal(effs []Effect) ([]Effect, error) {
	r, ok, rest := split[Refused](effs)
	if ok {
		return nil, r.Err
	}
	return rest, nil
}

func (m *Machine) Load(r *Drive) { m.Apply(0, Loaded{Run: *r}) }

func (m *Machine) Start(now int64, p protocol.FullAutoStartParams, preview string) ([]Effect, error) {
	return refusal(m.Apply(now, Start{Params: p, Preview: preview}))
}
func (m *Machine) Pause(now int64) []Effect { return plain(m.Apply(now, Pause{})) }
func (m *Machine) Resume(now int64) ([]Effect, error) {
	return refusal(m.Apply(now, Resume{}))
}
func (m *Machine) Stop(now int64) []Effect { return plain(m.Apply(now, Stop{})) }
func (m *Machine) TimerFired(now int64, token int) []Effect {
	return plain(m.Apply(now, TimerFired{Token: token}))
}
func (m *Machine) TurnStartFailed(now int64, msg string) []Effect {
	return plain(m.Apply(now, TurnStartFailed{Message: msg}))
}
func (m *Machine) Carry(now int64, token int, in TurnInput) []Effect {
	return plain(m.Apply(now, Carry{Token: token, Input: in}))
}
func (m *Machine) TurnStarted(now int64, turnID, kind string) []Effect {
	return plain(m.Apply(now, TurnStarted{TurnID: turnID, Kind: kind}))
}
func (m *Machine) DeadlineReached(now int64, turnID string) []Effect {
	return plain(m.Apply(now, DeadlineReached{TurnID: turnID}))
}
func (m *Machine) Compacted(now int64, turnID string, ratio float64) []Effect {
	return plain(m.Apply(now, Compacted{TurnID: turnID, Ratio: ratio}))
}
func (m *Machine) HandedOff(now int64, id string) []Effect {
	return plain(m.Apply(now, HandedOff{ThreadID: id}))
}
func (m *Machine) Adopt(now int64, from Drive, fromThread, handoff string) []Effect {
	return plain(m.Apply(now, Adopt{From: from, FromThread: fromThread, Handoff: handoff}))
}
func (m *Machine) ResponseDone(now int64, turnID string, u Response) []Effect {
	return plain(m.Apply(now, ResponseDone{TurnID: turnID, Usage: u}))
}
func (m *Machine) TurnEnded(now int64, te TurnEnd) []Effect {
	return plain(m.Apply(now, TurnEnded{End: te}))
}
func (m *Machine) Fingerprinted(now int64, token int, fp string) []Effect {
	return plain(m.Apply(now, Fingerprinted{Token: token, Fingerprint: fp}))
}
func (m *Machine) ModelAnswered(now int64, token int, ans *controller.ModelAnswer) []Effect {
	return plain(m.Apply(now, ModelAnswered{Token: token, Answer: ans}))
}
func (m *Machine) ReceiptStored(now int64, id string, seq int) []Effect {
	return plain(m.Apply(now, ReceiptStored{ID: id, Seq: seq}))
}
func (m *Machine) SetGoal(now int64, p protocol.ThreadGoalSetParams) (protocol.ThreadGoal, []Effect, error) {
	effs := m.Apply(now, SetGoal{Params: p})
	if r, ok, _ := split[Refused](effs); ok {
		return protocol.ThreadGoal{}, nil, r.Err
	}
	g, _, rest := split[GoalAnswer](effs)
	return g.Goal, rest, nil
}
func (m *Machine) ClearGoal(now int64) (bool, []Effect) {
	c, _, rest := split[GoalCleared](m.Apply(now, ClearGoal{}))
	return c.Cleared, rest
}
func (m *Machine) GoalOnResume(now int64) []Effect { return plain(m.Apply(now, GoalOnResume{})) }
func (m *Machine) RequestAsked(now int64, turnID, key string, req controller.ApprovalRequest) (string, []Effect) {
	v, _, rest := split[Verdict](m.Apply(now, RequestAsked{TurnID: turnID, Key: key, Request: req}))
	return v.Outcome, rest
}
func (m *Machine) ModelMayAnswer(key string, req controller.ApprovalRequest) (bool, string, ApprovalInput) {
	a, ok, _ := split[AskAboutRequest](m.Apply(0, RequestPassedOn{Key: key, Request: req}))
	return ok, a.Objective, a.Input
}
func (m *Machine) ModelAnsweredRequest(now int64, turnID string, in ApprovalInput, ans RequestAnswer, errMsg string) (bool, []Effect) {
	v, _, rest := split[Verdict](m.Apply(now, ModelAnsweredRequest{TurnID: turnID, Input: in, Answer: ans, Err: errMsg}))
	return v.Outcome != controller.OutcomeForward, rest
}
func (m *Machine) RequestForwarded(now int64, turnID string, id int64, kind, command, reason string) (bool, int64, []Effect) {
	tr, ok, rest := split[Tracked](m.Apply(now, RequestForwarded{TurnID: turnID, ID: id, Kind: kind, Command: command, Reason: reason}))
	return ok, tr.TimeoutMs, rest
}
func (m *Machine) RequestSettled(now int64, turnID string, id int64, s Settled) []Effect {
	return plain(m.Apply(now, RequestSettled{TurnID: turnID, ID: id, Settled: s}))
}
func (m *Machine) Restore(now int64, pend []Pending) []Effect {
	return plain(m.Apply(now, Restore{Pending: pend}))
}
func (m *Machine) RequestMoved(old, id int64) { m.Apply(0, RequestMoved{Old: old, ID: id}) }
func (m *Machine) ResentAnswered(now int64, id int64, s Settled) (bool, string, []Effect) {
	c, ok, rest := split[CarryOn](m.Apply(now, ResentAnswered{ID: id, Settled: s}))
	return ok, c.Kind, rest
}
