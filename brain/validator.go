package brain

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// ValidatorPrompt is what the validator model is asked about an action
// the first pass left undecided: the task, the decisions and the
// snapshot's context block, the action, and the answer's shape.
func ValidatorPrompt(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision, first protocol.AlignmentVerdict, strict bool) string {
	var b strings.Builder
	b.WriteString("You check whether an action of a coding agent follows the project's plan and recorded decisions.\n\n")
	fmt.Fprintf(&b, "## Task %s\n%s\n%s\n", task.ID, task.Title, task.Text)
	if len(task.Files) > 0 {
		fmt.Fprintf(&b, "Files: %s\n", strings.Join(task.Files, ", "))
	}
	b.WriteString("\n## Active decisions\n")
	for _, d := range decisions {
		if d.Status == protocol.DecisionActive {
			fmt.Fprintf(&b, "- %s %q: %s", d.ID, d.Title, oneLine(d.Text))
			if len(d.Alternatives) > 0 {
				fmt.Fprintf(&b, " (rejected: %s)", strings.Join(d.Alternatives, ", "))
			}
			b.WriteByte('\n')
		}
	}
	b.WriteString("\n## Action\n")
	switch a.Kind {
	case protocol.ActionCommand:
		fmt.Fprintf(&b, "Run the command: %s\n", a.Command)
	case protocol.ActionDelete:
		fmt.Fprintf(&b, "Delete the file %s\n", a.Path)
	default:
		fmt.Fprintf(&b, "Write the file %s; added lines:\n%s\n", a.Path, clip(addedLines(a.Before, a.After), 4000))
	}
	fmt.Fprintf(&b, "\nThe rules found: %s.\n", strings.Join(first.Reasons, "; "))
	b.WriteString("\nAnswer with one JSON object only: {\"status\": \"aligned\"|\"risky\"|\"conflicting\", \"score\": 0..1, \"reasons\": [\"...\"], \"decisions\": [\"<decision id>\"]}. ")
	b.WriteString("A risky or conflicting answer names in decisions the decision(s) the action goes against.")
	if strict {
		b.WriteString("\nYour previous answer was not valid. Reply with the JSON object and nothing else.")
	}
	return b.String()
}

// ParseVerdict validates the validator model's answer: one JSON object
// (optionally fenced), a known status, a score in [0, 1], at least one
// reason, and decision ids that exist among the active decisions; a stop
// (risky, conflicting) must name one. The verdict's decisions carry their
// titles.
func ParseVerdict(answer string, decisions []protocol.ProjectDecision) (protocol.AlignmentVerdict, error) {
	s := strings.TrimSpace(answer)
	if i := strings.Index(s, "{"); i >= 0 {
		if j := strings.LastIndex(s, "}"); j > i {
			s = s[i : j+1]
		}
	}
	var raw struct {
		Status    protocol.AlignmentStatus `json:"status"`
		Score     *float64                 `json:"score"`
		Reasons   []string                 `json:"reasons"`
		Decisions []string                 `json:"decisions"`
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return protocol.AlignmentVerdict{}, fmt.Errorf("the answer is not the JSON object asked for: %w", err)
	}
	v := protocol.AlignmentVerdict{Status: raw.Status, Reasons: raw.Reasons, Decisions: []protocol.DecisionRef{}, Pass: "validator"}
	switch raw.Status {
	case protocol.AlignmentAligned, protocol.AlignmentRisky, protocol.AlignmentConflicting:
	default:
		return v, fmt.Errorf("status %q is not aligned, risky or conflicting", raw.Status)
	}
	if raw.Score == nil || *raw.Score < 0 || *raw.Score > 1 {
		return v, fmt.Errorf("score is missing or outside [0, 1]")
	}
	v.Score = *raw.Score
	if len(raw.Reasons) == 0 {
		return v, fmt.Errorf("reasons is empty")
	}
	byID := map[string]protocol.ProjectDecision{}
	for _, d := range decisions {
		if d.Status == protocol.DecisionActive {
			byID[d.ID] = d
		}
	}
	for _, id := range raw.Decisions {
		d, ok := byID[id]
		if !ok {
			return v, fmt.Errorf("decision %q is not an active decision", id)
		}
		v.Decisions = append(v.Decisions, protocol.DecisionRef{ID: d.ID, Title: d.Title})
	}
	if v.Status.Stops() && len(v.Decisions) == 0 {
		return v, fmt.Errorf("a %s answer names no decision", v.Status)
	}
	return v, nil
}

// Judge is the whole check: the first pass, then, for an undecided
// action, the validator through ask (given the prompt, it returns the
// model's answer). An invalid answer is asked again once with a stricter
// prompt; a second invalid answer, or an error from ask, makes the action
// risky (a human decides), with what was wrong in the reasons.
func Judge(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision, ask func(prompt string) (string, error)) protocol.AlignmentVerdict {
	first := Check(a, task, decisions)
	if first.Status != protocol.AlignmentUndecided || ask == nil {
		return first
	}
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		answer, err := ask(ValidatorPrompt(a, task, decisions, first, attempt > 0))
		if err != nil {
			lastErr = err
			break
		}
		v, err := ParseVerdict(answer, decisions)
		if err == nil {
			v.Nodes = first.Nodes
			return v
		}
		lastErr = err
	}
	out := first
	out.Status, out.Score, out.Pass = protocol.AlignmentRisky, 0.4, "validator"
	out.Reasons = append(append([]string(nil), first.Reasons...), fmt.Sprintf("the validator gave no valid verdict: %v", lastErr))
	return out
}

// Key is the cache key of an action's verdict: the same action against
// the same task and decisions gets the same verdict without asking again.
func Key(a protocol.AlignmentAction, task Task, decisions []protocol.ProjectDecision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00%s\x00%s", a.Kind, a.Path, a.Command, addedLines(a.Before, a.After), task.ID, strings.Join(task.Files, ","))
	for _, d := range decisions {
		if d.Status == protocol.DecisionActive {
			fmt.Fprintf(&b, "\x00%s@%d", d.ID, d.UpdatedAtMs)
		}
	}
	return b.String()
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n… (clipped)"
}
