package fullauto

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/apserver/apserver/controller"
)

// Apply applies one event at now (unix ms) and returns the effects its
// driver must carry out in order: the one contract of the pure cores
// (runs.Machine.Apply too). An event that asks something (a request's
// method, a rung of the approval ladder) gets its answer among the
// effects (Refused, GoalAnswer, GoalCleared, Verdict, AskAboutRequest,
// Tracked, CarryOn).
//
// While the thread has a drive, every event goes into the drive's log
// (LogEvent, first among the effects, so the driver stores it before
// carrying out the rest); Replay rebuilds the machine from that log.
func (m *Machine) Apply(now int64, ev Event) []Effect {
	base := m.base()
	had := m.drive != nil
	m.installed = false
	m.out = nil
	effs := m.handle(now, ev)
	if !had && m.drive == nil || m.opts.Ephemeral {
		return effs
	}
	e := Entry{AtMs: now, Event: ev}
	lg := LogEvent{Entry: e}
	if m.installed || !had {
		m.log = Log{Base: base}
		lg.Fresh, lg.Base = true, base
	}
	m.log.Events = append(m.log.Events, e)
	if m.drive == nil { // cleared: the run and its log are forgotten
		m.log = Log{}
	}
	return append([]Effect{lg}, effs...)
}

// handle is Apply without the log.
func (m *Machine) handle(now int64, ev Event) []Effect {
	switch e := ev.(type) {
	case Start:
		effs, err := m.onStart(now, e.Params, e.Preview)
		return refused(effs, err)
	case Pause:
		return m.onPause(now)
	case Resume:
		if m.drive == nil {
			return []Effect{Refused{errNoDrive(m.opts.ThreadID)}}
		}
		effs, err := m.onResume(now)
		return refused(effs, err)
	case Stop:
		return m.onStop(now)
	case SetGoal:
		g, effs, err := m.onSetGoal(now, e.Params)
		if err != nil {
			return []Effect{Refused{err}}
		}
		return append(effs, GoalAnswer{g})
	case ClearGoal:
		cleared, effs := m.onClearGoal(now)
		return append(effs, GoalCleared{cleared})
	case GoalOnResume:
		return m.onGoalOnResume(now)
	case TimerFired:
		return m.onTimerFired(now, e.Token)
	case TurnStartFailed:
		return m.onTurnStartFailed(now, e.Message)
	case Carry:
		return m.onCarry(now, e.Token, e.Input)
	case TurnStarted:
		return m.onTurnStarted(now, e.TurnID, e.Kind)
	case DeadlineReached:
		return m.onDeadlineReached(now, e.TurnID)
	case Compacted:
		return m.onCompacted(now, e.TurnID, e.Ratio)
	case HandedOff:
		return m.onHandedOff(now, e.ThreadID)
	case Adopt:
		return m.onAdopt(now, e.From, e.FromThread, e.Handoff)
	case ResponseDone:
		return m.onResponseDone(now, e.TurnID, e.Usage)
	case TurnEnded:
		return m.onTurnEnded(now, e.End)
	case Fingerprinted:
		return m.onFingerprinted(now, e.Token, e.Fingerprint)
	case ModelAnswered:
		return m.onModelAnswered(now, e.Token, e.Answer)
	case ReceiptStored:
		return m.onReceiptStored(now, e.ID, e.Seq)
	case Loaded:
		r := e.Run
		m.drive, m.installed = &r, true
		return nil
	case Reloaded:
		m.reloaded()
		return nil
	case Restore:
		return m.onRestore(now, e.Pending)
	case RequestAsked:
		outcome, effs := m.onRequestAsked(now, e.TurnID, e.Key, e.Request)
		if outcome == "" {
			return effs
		}
		return append(effs, Verdict{outcome})
	case RequestPassedOn:
		ok, objective, in := m.onModelMayAnswer(e.Key, e.Request)
		if !ok {
			return nil
		}
		return []Effect{AskAboutRequest{Objective: objective, Input: in}}
	case ModelAnsweredRequest:
		accepted, effs := m.onModelAnsweredRequest(now, e.TurnID, e.Input, e.Answer, e.Err)
		v := Verdict{controller.OutcomeForward}
		if accepted {
			v.Outcome = e.Answer.Outcome
		}
		return append(effs, v)
	case RequestForwarded:
		tracked, timeoutMs, effs := m.onRequestForwarded(now, e.TurnID, e.ID, e.Kind, e.Command, e.Reason)
		if tracked {
			effs = append(effs, Tracked{timeoutMs})
		}
		return effs
	case RequestSettled:
		return m.onRequestSettled(now, e.TurnID, e.ID, e.Settled)
	case RequestMoved:
		m.onRequestMoved(e.Old, e.ID)
		return nil
	case ResentAnswered:
		carry, kind, effs := m.onResentAnswered(now, e.ID, e.Settled)
		if carry {
			effs = append(effs, CarryOn{Kind: kind, Token: m.epoch})
		}
		return effs
	}
	panic(fmt.Sprintf("fullauto: unknown event %T", ev)) // a new event without a case: a bug the tests catch
}

func refused(effs []Effect, err error) []Effect {
	if err != nil {
		return []Effect{Refused{err}}
	}
	return effs
}

// Log is a drive's events since it was installed (fullAuto/start, a new
// goal, a handoff adopted), with the thread's turn as the drive found it.
type Log struct {
	Base   Base    `json:"base"`
	Events []Entry `json:"events"`
}

// Base is what the machine knew of the thread's running turn when a drive
// was installed: a drive started during a client's turn decides on that
// turn when it ends.
type Base struct {
	// Options are the machine's when the log began (apserver replay
	// replays with them).
	Options  Options          `json:"options"`
	TurnID   string           `json:"turnId,omitempty"`
	Kind     string           `json:"kind,omitempty"`
	Usage    controller.Usage `json:"usage"`
	Ratio    float64          `json:"ratio,omitempty"`
	Timeouts int              `json:"timeouts,omitempty"`
}

func (m *Machine) base() Base {
	b := Base{Options: m.opts, TurnID: m.turnID}
	if c := m.cur; c != nil && c.id == m.turnID {
		b.Kind, b.Usage, b.Ratio, b.Timeouts = c.kind, c.usage, c.ratio, c.timeouts
	}
	return b
}

// Log is the current drive's log (empty when there is no drive). The caller
// must not change it.
func (m *Machine) Log() Log { return m.log }

// Replay rebuilds a thread's machine from a drive's log: the state the
// events left, the log itself, and no effects (the driver's Reloaded and
// Restore continue the drive after a restart).
func Replay(opts Options, lg Log) *Machine {
	m := New(opts)
	m.setBase(lg.Base)
	for _, e := range lg.Events {
		m.Apply(e.AtMs, e.Event)
	}
	m.log.Base = lg.Base
	m.log.Events = slices.Clip(m.log.Events)
	return m
}

// reloaded forgets what does not survive a restart: the running turn, the
// requests it forwarded, the decision under way, a delayed turn. The drive's
// time stops accruing until Restore.
func (m *Machine) reloaded() {
	m.turnID, m.cur = "", nil
	m.pending = map[int64]pending{}
	m.forwarded, m.modelAsked = "", nil
	m.deciding, m.delayed, m.await = nil, nil, nil
	m.accruing = false
	m.epoch++
}

// DecodeLog decodes a stored log: its base and its entries (each as
// Entry.MarshalJSON encodes it).
func DecodeLog(base json.RawMessage, entries []json.RawMessage) (Log, error) {
	var lg Log
	if err := json.Unmarshal(base, &lg.Base); err != nil {
		return Log{}, fmt.Errorf("decoding the log's base: %w", err)
	}
	lg.Events = make([]Entry, len(entries))
	for i, b := range entries {
		if err := json.Unmarshal(b, &lg.Events[i]); err != nil {
			return Log{}, fmt.Errorf("entry %d: %w", i+1, err)
		}
	}
	return lg, nil
}

// setBase puts the machine in the turn a log's base describes.
func (m *Machine) setBase(b Base) {
	if b.TurnID != "" {
		m.turnID = b.TurnID
		m.cur = &turnAcc{id: b.TurnID, kind: b.Kind, usage: b.Usage, ratio: b.Ratio, timeouts: b.Timeouts}
	}
}
