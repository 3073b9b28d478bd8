package brain

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// EventType is what a decision event does.
type EventType string

// Decision events, as the store logs them.
const (
	EventRecorded   EventType = "recorded"   // a new decision (active or proposed)
	EventUpdated    EventType = "updated"    // fields changed
	EventConfirmed  EventType = "confirmed"  // proposed → active
	EventRevoked    EventType = "revoked"    // active or proposed → revoked
	EventSuperseded EventType = "superseded" // active → superseded by another
)

// Event is one change of one decision. Decision carries the whole record
// for EventRecorded and the changed fields (those non-nil in Patch) for
// EventUpdated; By names the superseding decision, or who confirmed a
// proposed one ("user", "run/plan/approve", "run trust implementation=auto").
type Event struct {
	Type     EventType                 `json:"type"`
	ID       string                    `json:"id"`
	AtMs     int64                     `json:"atMs"`
	Decision *protocol.ProjectDecision `json:"decision,omitempty"`
	Patch    *Patch                    `json:"patch,omitempty"`
	By       string                    `json:"by,omitempty"`
	Reason   string                    `json:"reason,omitempty"`
}

// Patch is an update's changed fields.
type Patch struct {
	Title        *string                 `json:"title,omitempty"`
	Text         *string                 `json:"text,omitempty"`
	Why          *string                 `json:"why,omitempty"`
	Alternatives *[]string               `json:"alternatives,omitempty"`
	Scope        *protocol.DecisionScope `json:"scope,omitempty"`
}

// ErrTransition is returned for an event the decision's status does not
// allow (revoking a revoked decision, superseding a proposed one).
var ErrTransition = errors.New("decision transition not allowed")

// Apply returns the decision after ev. cur is nil for EventRecorded.
func Apply(cur *protocol.ProjectDecision, ev Event) (protocol.ProjectDecision, error) {
	if ev.Type == EventRecorded {
		if cur != nil {
			return *cur, fmt.Errorf("decision %s already exists: %w", ev.ID, ErrTransition)
		}
		if ev.Decision == nil {
			return protocol.ProjectDecision{}, fmt.Errorf("recording %s without a decision", ev.ID)
		}
		d := *ev.Decision
		d.ID = ev.ID
		if d.Status == "" {
			d.Status = protocol.DecisionActive
		}
		if d.Status != protocol.DecisionActive && d.Status != protocol.DecisionProposed {
			return d, fmt.Errorf("recording %s as %s: %w", ev.ID, d.Status, ErrTransition)
		}
		if strings.TrimSpace(d.Title) == "" {
			return d, fmt.Errorf("recording %s without a title", ev.ID)
		}
		d.CreatedAtMs, d.UpdatedAtMs = ev.AtMs, ev.AtMs
		return d, nil
	}
	if cur == nil {
		return protocol.ProjectDecision{}, fmt.Errorf("no decision %s", ev.ID)
	}
	d := *cur
	live := d.Status == protocol.DecisionActive || d.Status == protocol.DecisionProposed
	switch ev.Type {
	case EventUpdated:
		if !live || ev.Patch == nil {
			return d, fmt.Errorf("updating %s (%s): %w", d.ID, d.Status, ErrTransition)
		}
		p := ev.Patch
		if p.Title != nil {
			d.Title = *p.Title
		}
		if p.Text != nil {
			d.Text = *p.Text
		}
		if p.Why != nil {
			d.Why = *p.Why
		}
		if p.Alternatives != nil {
			d.Alternatives = append([]string(nil), (*p.Alternatives)...)
		}
		if p.Scope != nil {
			d.Scope = *p.Scope
		}
	case EventConfirmed:
		if d.Status != protocol.DecisionProposed {
			return d, fmt.Errorf("confirming %s (%s): %w", d.ID, d.Status, ErrTransition)
		}
		d.Status = protocol.DecisionActive
		d.ConfirmedBy = ev.By
	case EventRevoked:
		if !live {
			return d, fmt.Errorf("revoking %s (%s): %w", d.ID, d.Status, ErrTransition)
		}
		d.Status = protocol.DecisionRevoked
	case EventSuperseded:
		if d.Status != protocol.DecisionActive || ev.By == "" || ev.By == d.ID {
			return d, fmt.Errorf("superseding %s (%s) by %q: %w", d.ID, d.Status, ev.By, ErrTransition)
		}
		d.Status = protocol.DecisionSuperseded
		d.SupersededBy = ev.By
	default:
		return d, fmt.Errorf("unknown decision event %q", ev.Type)
	}
	d.UpdatedAtMs = ev.AtMs
	return d, nil
}

// Replay folds a log of events into the decisions, sorted by creation
// time then id.
func Replay(events []Event) ([]protocol.ProjectDecision, error) {
	byID := map[string]*protocol.ProjectDecision{}
	for i, ev := range events {
		d, err := Apply(byID[ev.ID], ev)
		if err != nil {
			return nil, fmt.Errorf("event %d: %w", i, err)
		}
		byID[ev.ID] = &d
	}
	out := make([]protocol.ProjectDecision, 0, len(byID))
	for _, d := range byID {
		out = append(out, *d)
	}
	SortDecisions(out)
	return out, nil
}

// SortDecisions orders decisions oldest first, then by id.
func SortDecisions(ds []protocol.ProjectDecision) {
	sort.Slice(ds, func(i, j int) bool {
		if ds[i].CreatedAtMs != ds[j].CreatedAtMs {
			return ds[i].CreatedAtMs < ds[j].CreatedAtMs
		}
		return ds[i].ID < ds[j].ID
	})
}

// Active keeps the active decisions.
func Active(ds []protocol.ProjectDecision) []protocol.ProjectDecision {
	var out []protocol.ProjectDecision
	for _, d := range ds {
		if d.Status == protocol.DecisionActive {
			out = append(out, d)
		}
	}
	return out
}
