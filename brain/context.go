package brain

import (
	"fmt"
	"sort"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// DefaultBudget is the context block's budget, in tokens, for a role
// without one configured.
const DefaultBudget = 8000

// Summary is a thread's rolling summary.
type Summary struct {
	ThreadID string
	Text     string
	AtMs     int64
}

// Input is everything the context builder reads. Nothing else goes in:
// the same Input gives the same bytes.
type Input struct {
	// Role is the stage or role the block is for: planner, implementer,
	// reviewer, fixer, thread.
	Role string
	// Budget is the block's budget in tokens; 0 is DefaultBudget.
	Budget    int
	Task      Task
	ThreadID  string
	Node      *protocol.BlueprintNode
	Excerpt   string
	Decisions []protocol.ProjectDecision
	Snapshot  string
	Memory    string
	Summaries []Summary
}

// Tokens estimates a text's tokens: four bytes a token, rounded up.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// section shares of the budget, in the order sections are filled (the
// order they are rendered in is sectionOrder).
var shares = []struct {
	name  string
	share int // percent of the budget, at most
}{
	{"Task", 15}, {"Plan node", 5}, {"Source excerpt", 30}, {"Decisions", 35}, {"Snapshot", 15}, {"Memory", 10}, {"Conversation summaries", 100},
}

// Build returns the context block: a heading, then the sections Task,
// Plan node, Source excerpt, Decisions, Snapshot, Memory, Conversation
// summaries, in that order, the empty ones left out. Each section is
// filled in that order within its share of the budget and what is left;
// the decisions are the active ones, those whose scope matches the task's
// files and nodes first, then by tags the task mentions, then the most
// recently changed. The block never exceeds the budget.
func Build(in Input) string {
	budget := in.Budget
	if budget <= 0 {
		budget = DefaultBudget
	}
	role := in.Role
	if role == "" {
		role = "thread"
	}
	head := fmt.Sprintf("# Project context for the %s\n\n", role)
	left := budget*4 - len(head) // bytes
	bodies := map[string]string{}
	for _, s := range shares {
		limit := budget * 4 * s.share / 100
		if limit > left {
			limit = left
		}
		title := "## " + s.name + "\n\n"
		if limit <= len(title)+16 {
			continue
		}
		var body string
		room := limit - len(title) - 1
		switch s.name {
		case "Task":
			body = clipBytes(taskText(in), room)
		case "Plan node":
			body = clipBytes(nodeText(in.Node), room)
		case "Source excerpt":
			body = clipBytes(strings.TrimSpace(in.Excerpt), room)
		case "Decisions":
			body = decisionsText(in, room)
		case "Snapshot":
			body = clipBytes(strings.TrimSpace(in.Snapshot), room)
		case "Memory":
			body = clipBytes(strings.TrimSpace(in.Memory), room)
		case "Conversation summaries":
			body = summariesText(in.Summaries, room)
		}
		if body == "" {
			continue
		}
		bodies[s.name] = title + body + "\n"
		left -= len(bodies[s.name]) + 1 // and the blank line before it
	}
	var b strings.Builder
	b.WriteString(head)
	first := true
	for _, s := range shares { // render order is the fill order
		if body, ok := bodies[s.name]; ok {
			if !first {
				b.WriteByte('\n')
			}
			first = false
			b.WriteString(body)
		}
	}
	return b.String()
}

func taskText(in Input) string {
	t := in.Task
	var b strings.Builder
	if t.ID != "" || t.Title != "" {
		fmt.Fprintf(&b, "%s %s\n", t.ID, oneLine(t.Title))
	}
	if in.ThreadID != "" {
		fmt.Fprintf(&b, "Thread %s\n", in.ThreadID)
	}
	if s := strings.TrimSpace(t.Text); s != "" {
		b.WriteString(s)
		b.WriteByte('\n')
	}
	if len(t.Files) > 0 {
		fmt.Fprintf(&b, "Files: %s\n", strings.Join(t.Files, ", "))
	}
	return strings.TrimSpace(b.String())
}

func nodeText(n *protocol.BlueprintNode) string {
	if n == nil {
		return ""
	}
	s := fmt.Sprintf("%s %s %q (%s", n.ID, n.Kind, oneLine(n.Title), n.Status)
	if n.Risk != "" {
		s += ", risk " + string(n.Risk)
	}
	s += ")"
	if n.Summary != "" {
		s += "\n" + oneLine(n.Summary)
	}
	return s
}

// taskView is what relevance reads of the input, computed once.
type taskView struct {
	files []string
	nodes map[string]bool
	words map[string]bool
}

func viewOf(in Input) taskView {
	v := taskView{files: in.Task.Files, nodes: map[string]bool{}, words: map[string]bool{}}
	for _, n := range in.Task.Nodes {
		v.nodes[n] = true
	}
	if in.Node != nil {
		v.nodes[in.Node.ID] = true
		if in.Node.ParentID != "" {
			v.nodes[in.Node.ParentID] = true
		}
	}
	text := strings.ToLower(in.Task.Title + "\n" + in.Task.Text + "\n" + strings.Join(in.Task.Files, " ") + "\n" + in.Excerpt)
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r > 127) }) {
		v.words[w] = true
	}
	return v
}

// Relevance scores a decision for a task: 4 for each file glob matching
// one of the task's files, 4 for each of its nodes among the task's (the
// task's node and its parent included), 2 for each tag the task's text,
// files or excerpt mention as a word.
func Relevance(d protocol.ProjectDecision, in Input) int {
	return relevance(d, viewOf(in))
}

func relevance(d protocol.ProjectDecision, v taskView) int {
	score := 0
	for _, g := range d.Scope.Files {
		for _, f := range v.files {
			if g == f || Match(g, f) || Match(f, g) {
				score += 4
				break
			}
		}
	}
	for _, n := range d.Scope.Nodes {
		if v.nodes[n] {
			score += 4
		}
	}
	for _, tag := range d.Scope.Tags {
		if v.words[strings.ToLower(tag)] {
			score += 2
		}
	}
	return score
}

// Rank returns the active decisions, most relevant first, then the most
// recently changed, then by id.
func Rank(in Input) []protocol.ProjectDecision {
	type scored struct {
		d protocol.ProjectDecision
		s int
	}
	v := viewOf(in)
	var ss []scored
	for _, d := range in.Decisions {
		if d.Status == protocol.DecisionActive {
			ss = append(ss, scored{d, relevance(d, v)})
		}
	}
	sort.Slice(ss, func(i, j int) bool {
		if ss[i].s != ss[j].s {
			return ss[i].s > ss[j].s
		}
		if ss[i].d.UpdatedAtMs != ss[j].d.UpdatedAtMs {
			return ss[i].d.UpdatedAtMs > ss[j].d.UpdatedAtMs
		}
		return ss[i].d.ID < ss[j].d.ID
	})
	out := make([]protocol.ProjectDecision, len(ss))
	for i, s := range ss {
		out[i] = s.d
	}
	return out
}

func decisionsText(in Input, room int) string {
	ranked := Rank(in)
	var b strings.Builder
	for i, d := range ranked {
		e := fmt.Sprintf("- %s %s: %s", d.ID, oneLine(d.Title), oneLine(d.Text))
		if d.Why != "" {
			e += " Why: " + oneLine(d.Why)
		}
		if len(d.Alternatives) > 0 {
			e += " Rejected: " + strings.Join(d.Alternatives, "; ") + "."
		}
		if sc := scopeText(d.Scope); sc != "" {
			e += " Scope: " + sc + "."
		}
		e = clipLine(e, 600) + "\n"
		more := fmt.Sprintf("- … %d more decisions (project/decision/list)\n", len(ranked)-i)
		if b.Len()+len(e)+len(more) > room {
			if b.Len()+len(more) <= room {
				b.WriteString(more)
			}
			break
		}
		b.WriteString(e)
	}
	return strings.TrimRight(b.String(), "\n")
}

func summariesText(ss []Summary, room int) string {
	sorted := append([]Summary(nil), ss...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].AtMs != sorted[j].AtMs {
			return sorted[i].AtMs > sorted[j].AtMs
		}
		return sorted[i].ThreadID < sorted[j].ThreadID
	})
	var b strings.Builder
	for _, s := range sorted {
		e := fmt.Sprintf("- %s: %s\n", s.ThreadID, oneLine(s.Text))
		if b.Len()+len(e) > room {
			break
		}
		b.WriteString(e)
	}
	return strings.TrimRight(b.String(), "\n")
}

// clipBytes cuts s to at most n bytes at a line (or, failing that, a
// rune) boundary, marking the cut.
func clipBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "\n… (truncated)"
	if n <= len(mark) {
		return ""
	}
	cut := s[:n-len(mark)]
	if i := strings.LastIndexByte(cut, '\n'); i > len(cut)/2 {
		cut = cut[:i]
	} else {
		for len(cut) > 0 && cut[len(cut)-1]&0xC0 == 0x80 {
			cut = cut[:len(cut)-1]
		}
		if len(cut) > 0 && cut[len(cut)-1] >= 0xC0 {
			cut = cut[:len(cut)-1]
		}
	}
	return cut + mark
}
