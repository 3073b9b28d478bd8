package manager

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/apserver/apserver/protocol"
)

// Intent from chat (docs/manager.md#intent-from-chat): a user message in
// a project's thread is classified by a model into one Intent; this file
// is the pure part — the classifier's prompt and schema, the validation of
// its answer, what each intent routes to, and the resolver of a
// START_BUILD's target against the blueprint tree.

// Intent is what a user message asks of the manager.
type Intent string

// Intents.
const (
	IntentQuestion           Intent = "QUESTION"
	IntentStartBuild         Intent = "START_BUILD"
	IntentContinueBuild      Intent = "CONTINUE_BUILD"
	IntentPauseAutopilot     Intent = "PAUSE_AUTOPILOT"
	IntentAdjustPlan         Intent = "ADJUST_PLAN"
	IntentUpdateRequirements Intent = "UPDATE_REQUIREMENTS"
	IntentOther              Intent = "OTHER"
)

// Intents are every intent, in the order the prompt lists them.
var Intents = []Intent{IntentQuestion, IntentStartBuild, IntentContinueBuild, IntentPauseAutopilot, IntentAdjustPlan, IntentUpdateRequirements, IntentOther}

// Valid reports whether i is a known intent.
func (i Intent) Valid() bool {
	for _, x := range Intents {
		if i == x {
			return true
		}
	}
	return false
}

// MinConfidence is the confidence below which a message is a question.
const MinConfidence = 0.6

// Classification is the classifier's answer.
type Classification struct {
	Intent     Intent  `json:"intent"`
	Confidence float64 `json:"confidence"`
	// Target is the phase or node a START_BUILD (or a plan change) names,
	// as the user said it ("phase 1", "the login feature"); may be "".
	Target string `json:"target"`
}

// IntentSchema is the classifier's structured output.
var IntentSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["intent","confidence","target"],
"properties":{"intent":{"type":"string","enum":["QUESTION","START_BUILD","CONTINUE_BUILD","PAUSE_AUTOPILOT","ADJUST_PLAN","UPDATE_REQUIREMENTS","OTHER"]},
"confidence":{"type":"number","minimum":0,"maximum":1},"target":{"type":"string"}}}`)

// IntentInstructions are the classifier's instructions.
const IntentInstructions = "You are the intent classifier of apserver's project manager. Classify one user message of a project's chat. Answer with the JSON object asked for, nothing else."

// IntentPrompt is the classifier's input for a user message; phases are
// the blueprint's phase titles (context for the target), at most a few.
func IntentPrompt(text string, phases []string) string {
	var b strings.Builder
	b.WriteString("Intents:\n")
	b.WriteString("- QUESTION: asks something; the assistant answers.\n")
	b.WriteString("- START_BUILD: asks to start building a phase or a part of the plan (target: the phase or node named, as said).\n")
	b.WriteString("- CONTINUE_BUILD: asks to go on building, resume.\n")
	b.WriteString("- PAUSE_AUTOPILOT: asks to pause or stop the autopilot.\n")
	b.WriteString("- ADJUST_PLAN: asks to change the plan (reorder, split, drop, reprioritize nodes; target: the node).\n")
	b.WriteString("- UPDATE_REQUIREMENTS: gives new or changed requirements (target: the node concerned, if any).\n")
	b.WriteString("- OTHER: anything else (a request for the assistant itself, chit-chat).\n")
	b.WriteString("confidence: 0 to 1, how sure you are.\n")
	if len(phases) > 0 {
		b.WriteString("The blueprint's phases, in order:\n")
		for i, p := range phases {
			fmt.Fprintf(&b, "%d. %s\n", i+1, p)
		}
	}
	b.WriteString("Classify the intent of this message:\n")
	b.WriteString(text)
	return b.String()
}

// ParseIntent validates the classifier's answer; its error names what was
// wrong.
func ParseIntent(raw string) (Classification, error) {
	var c Classification
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("the answer is not the JSON object asked for: %v", err)
	}
	if dec.More() {
		return c, fmt.Errorf("the answer has text after its JSON object")
	}
	switch {
	case !c.Intent.Valid():
		return c, fmt.Errorf("intent: %q is not one of %v", c.Intent, Intents)
	case math.IsNaN(c.Confidence) || c.Confidence < 0 || c.Confidence > 1:
		return c, fmt.Errorf("confidence: %v is not between 0 and 1", c.Confidence)
	case len(c.Target) > 500:
		return c, fmt.Errorf("target: %d bytes, more than 500", len(c.Target))
	}
	c.Target = strings.TrimSpace(c.Target)
	return c, nil
}

// Effective is the intent acted on: a confidence below MinConfidence is a
// question.
func (c Classification) Effective() Intent {
	if c.Confidence < MinConfidence {
		return IntentQuestion
	}
	return c.Intent
}

// Answered reports whether the model answers the message as usual (the
// turn proceeds): a question, or anything the manager does not act on.
func (i Intent) Answered() bool { return i == IntentQuestion || i == IntentOther || i == "" }

// Resolution is a START_BUILD's target found in the tree.
type Resolution struct {
	// Phase is the id of the phase to build.
	Phase      string `json:"phase"`
	PhaseTitle string `json:"phaseTitle"`
	// Node is the node named when it is not the phase itself.
	Node      string `json:"node,omitempty"`
	NodeTitle string `json:"nodeTitle,omitempty"`
}

// stopWords are dropped from a target before it is matched against titles.
var stopWords = map[string]bool{"the": true, "a": true, "an": true, "of": true, "for": true, "to": true, "build": true, "building": true,
	"start": true, "starting": true, "begin": true, "work": true, "on": true, "please": true, "let": true, "lets": true, "s": true,
	"feature": true, "features": true, "epic": true, "story": true, "task": true, "part": true, "section": true, "node": true}

var ordinals = map[string]int{"first": 1, "one": 1, "second": 2, "two": 2, "third": 3, "three": 3, "fourth": 4, "four": 4,
	"fifth": 5, "five": 5, "sixth": 6, "six": 6, "seventh": 7, "seven": 7, "eighth": 8, "eight": 8, "ninth": 9, "nine": 9, "tenth": 10, "ten": 10}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// Resolve finds a START_BUILD's target in a blueprint's nodes (in tree
// order, as the blueprint stores them): a phase by id, by number ("phase
// 1", "the second phase", "2"), by title; else the node whose title holds
// every word of the target (the outermost, then the first, when several
// do: the fewest other words, then the outermost), built through its phase. An empty target is the first unfinished
// phase. The error says what did not match, or which nodes are ambiguous.
func Resolve(target string, nodes []protocol.BlueprintNode) (Resolution, error) {
	var phases []int
	for i, n := range nodes {
		if n.Kind == protocol.KindPhase {
			phases = append(phases, i)
		}
	}
	phaseOf := func(i int) int { // index of node i's phase, -1 if none
		for j := len(phases) - 1; j >= 0; j-- {
			if phases[j] <= i {
				p := phases[j]
				in := true
				for k := p + 1; k <= i; k++ {
					if nodes[k].Depth <= nodes[p].Depth {
						in = false
						break
					}
				}
				if in {
					return p
				}
				return -1
			}
		}
		return -1
	}
	res := func(i int) (Resolution, error) {
		p := phaseOf(i)
		if p < 0 {
			return Resolution{}, fmt.Errorf("%q is not inside a phase of the blueprint", nodes[i].Title)
		}
		r := Resolution{Phase: nodes[p].ID, PhaseTitle: nodes[p].Title}
		if p != i {
			r.Node, r.NodeTitle = nodes[i].ID, nodes[i].Title
		}
		return r, nil
	}
	if len(phases) == 0 {
		return Resolution{}, fmt.Errorf("the blueprint has no phases")
	}
	t := strings.TrimSpace(target)
	if t == "" {
		for _, p := range phases {
			if nodes[p].Status != protocol.NodeDone {
				return res(p)
			}
		}
		return Resolution{}, fmt.Errorf("every phase of the blueprint is done")
	}
	for i, n := range nodes {
		if n.ID == t {
			return res(i)
		}
	}
	ws := words(t)
	// A phase by number: "phase 2", "2", "second phase", "phase two".
	var rest []string
	num := 0
	for _, w := range ws {
		if w == "phase" {
			continue
		}
		if n, err := strconv.Atoi(w); err == nil && num == 0 {
			num = n
			continue
		}
		if n, ok := ordinals[w]; ok && num == 0 {
			num = n
			continue
		}
		if !stopWords[w] {
			rest = append(rest, w)
		}
	}
	if num > 0 && len(rest) == 0 {
		if num > len(phases) {
			return Resolution{}, fmt.Errorf("phase %d: the blueprint has %d phases", num, len(phases))
		}
		return res(phases[num-1])
	}
	// A title: the phase titled so, else nodes whose titles hold every word.
	for _, p := range phases {
		if strings.EqualFold(strings.TrimSpace(nodes[p].Title), t) {
			return res(p)
		}
	}
	var want []string
	for _, w := range ws {
		if !stopWords[w] && w != "phase" {
			want = append(want, w)
		}
	}
	if len(want) == 0 {
		return Resolution{}, fmt.Errorf("%q names no phase or node", t)
	}
	// The best titles hold the fewest other words, then sit outermost.
	best, bestExtra, bestDepth := []int(nil), math.MaxInt, math.MaxInt
	for i, n := range nodes {
		tw := map[string]bool{}
		extra := 0
		for _, w := range words(n.Title) {
			tw[w] = true
			tw[strings.TrimSuffix(w, "s")] = true
			if !stopWords[w] && !slices.Contains(want, w) && !slices.Contains(want, w+"s") && !slices.Contains(want, strings.TrimSuffix(w, "s")) {
				extra++
			}
		}
		all := true
		for _, w := range want {
			if !tw[w] && !tw[strings.TrimSuffix(w, "s")] {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		switch {
		case extra < bestExtra || extra == bestExtra && n.Depth < bestDepth:
			best, bestExtra, bestDepth = []int{i}, extra, n.Depth
		case extra == bestExtra && n.Depth == bestDepth:
			best = append(best, i)
		}
	}
	switch len(best) {
	case 0:
		return Resolution{}, fmt.Errorf("no phase or node of the blueprint matches %q", t)
	case 1:
		return res(best[0])
	}
	// Several at the same level: one answer only if they share a phase.
	first, _ := res(best[0])
	var titles []string
	same := true
	for _, i := range best {
		r, _ := res(i)
		same = same && r.Phase == first.Phase
		titles = append(titles, fmt.Sprintf("%q", nodes[i].Title))
	}
	if same && first.Phase != "" {
		return Resolution{Phase: first.Phase, PhaseTitle: first.PhaseTitle}, nil
	}
	return Resolution{}, fmt.Errorf("%q matches several nodes in different phases: %s", t, strings.Join(titles, ", "))
}

// Actions of a routing.
const (
	ActionStartBuild        = "start_build"         // set the phase, resume, tick
	ActionContinueBuild     = "continue_build"      // resume, tick
	ActionPause             = "pause"               // pause the autopilot
	ActionConfirmPlanChange = "confirm_plan_change" // ask the user, then re-ingest the blueprint
)

// Routing is what the manager does for a classified message; the driver
// (package projects) applies it and tells the thread.
type Routing struct {
	Intent Intent `json:"intent"`
	// Answered: the turn proceeds and the model answers the message.
	Answered bool `json:"answered"`
	// Action is the manager's action: "" (none), "start_build",
	// "continue_build", "pause", "confirm_plan_change".
	Action string `json:"action,omitempty"`
	// Resolution is START_BUILD's target found in the tree.
	Resolution *Resolution `json:"resolution,omitempty"`
	// Reason says why (a low confidence, a target not found).
	Reason string `json:"reason,omitempty"`
}

// Route decides what a classification leads to; nodes are the active
// blueprint's (nil when the project has none).
func Route(c Classification, hasBlueprint bool, nodes []protocol.BlueprintNode) Routing {
	in := c.Effective()
	r := Routing{Intent: in}
	if in != c.Intent {
		r.Answered = true
		r.Reason = fmt.Sprintf("classified %s with confidence %.2f, below %.1f: answered as a question", c.Intent, c.Confidence, MinConfidence)
		return r
	}
	if in.Answered() {
		r.Answered = true
		return r
	}
	if !hasBlueprint && in != IntentPauseAutopilot {
		r.Reason = "the project has no active blueprint: set one with project/settings/update"
		return r
	}
	switch in {
	case IntentStartBuild:
		res, err := Resolve(c.Target, nodes)
		if err != nil {
			r.Reason = "nothing started: " + err.Error()
			return r
		}
		r.Action, r.Resolution = ActionStartBuild, &res
	case IntentContinueBuild:
		r.Action = ActionContinueBuild
	case IntentPauseAutopilot:
		r.Action = ActionPause
	case IntentAdjustPlan, IntentUpdateRequirements:
		r.Action = ActionConfirmPlanChange
	}
	return r
}
