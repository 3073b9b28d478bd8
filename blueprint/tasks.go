package blueprint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// TasksInstructions is the planner's system prompt for a node's tasks.
const TasksInstructions = `You turn one part of a specification into the tasks that fully implement it.
Return the tasks as JSON matching the schema:
{"tasks":[{"title":"unique short title","kind":"file_create|file_edit|shell_command|test|docs|research","criteria":["what must be true"],"checks":["a shell command that exits 0 when it is"],"files":["paths"],"dependsOn":["title of another task"],"estimate":"XS|S|M|L|XL","risk":"low|medium|high","excerpt":"the exact sentence or passage of the text this task implements"}],"next":"cursor or empty"}
Every task has at least one criterion, and its excerpt copied exactly from the text.
Give at most the number of tasks the request allows; when more remain, set "next" to a cursor and you will be asked again with it. When none remain, "next" is "".
Answer with the JSON object only.`

// TasksSchema is the JSON Schema of a page of tasks.
var TasksSchema = json.RawMessage(`{"type":"object","additionalProperties":false,"required":["tasks","next"],"properties":{
"tasks":{"type":"array","items":{"type":"object","additionalProperties":false,
"required":["title","kind","criteria","checks","files","dependsOn","estimate","risk","excerpt"],
"properties":{"title":{"type":"string"},"kind":{"type":"string"},
"criteria":{"type":"array","items":{"type":"string"}},"checks":{"type":"array","items":{"type":"string"}},
"files":{"type":"array","items":{"type":"string"}},"dependsOn":{"type":"array","items":{"type":"string"}},
"estimate":{"type":"string","enum":["XS","S","M","L","XL",""]},"risk":{"type":"string","enum":["low","medium","high",""]},
"excerpt":{"type":"string"}}}},
"next":{"type":"string"}}}`)

// TasksMarker is the first line of a request for a node's tasks.
func TasksMarker(n protocol.BlueprintNode, cursor string) string {
	if cursor == "" {
		cursor = "start"
	}
	return fmt.Sprintf("[blueprint tasks %s cursor=%s]", n.ID, cursor)
}

// TasksPrompt asks for a page of the tasks of node n, whose text (with its
// descendants) is d.Text[n.Start:n.End].
func TasksPrompt(d *Doc, n protocol.BlueprintNode, cursor string, k int, strictErr string) string {
	if k <= 0 {
		k = DefaultPageNodes
	}
	var b strings.Builder
	b.WriteString(TasksMarker(n, cursor))
	fmt.Fprintf(&b, "\nThe %s %q (%s), bytes %d-%d of the specification.\n", n.Kind, n.Title, strings.Join(n.Anchor, " > "), n.Start, n.End)
	fmt.Fprintf(&b, "At most %d tasks in this answer.", k)
	if cursor != "" {
		fmt.Fprintf(&b, " Continue after cursor %q.", cursor)
	}
	b.WriteString("\n")
	if strictErr != "" {
		fmt.Fprintf(&b, StrictInstruction+"\n", strictErr)
	}
	b.WriteString("----- text -----\n")
	b.WriteString(d.Text[n.Start:n.End])
	b.WriteString("\n----- end of text -----\n")
	return b.String()
}

// TaskFound is a validated task of a page, before ids.
type TaskFound struct {
	Title      string
	Kind       string
	Acceptance protocol.TaskAcceptance
	DependsOn  []string
	Estimate   protocol.Estimate
	Risk       protocol.NodeRisk
	Excerpt    protocol.ByteRange
}

type taskAnswer struct {
	Tasks []struct {
		Title     string            `json:"title"`
		Kind      string            `json:"kind"`
		Criteria  []string          `json:"criteria"`
		Checks    []string          `json:"checks"`
		Files     []string          `json:"files"`
		DependsOn []string          `json:"dependsOn"`
		Estimate  protocol.Estimate `json:"estimate"`
		Risk      protocol.NodeRisk `json:"risk"`
		Excerpt   string            `json:"excerpt"`
	} `json:"tasks"`
	Next *string `json:"next"`
}

// TaskAnswerError is an invalid page of tasks for a node.
type TaskAnswerError struct {
	NodeID string
	Msg    string
}

func (e *TaskAnswerError) Error() string { return fmt.Sprintf("tasks of node %s: %s", e.NodeID, e.Msg) }

// ParseTasksPage validates a page of node n's tasks: at most k, each with
// a title (unique among seen, the titles of earlier pages), a kind, at
// least one criterion, a valid estimate and risk, and an excerpt found in
// the node's text (whitespace may differ).
func ParseTasksPage(d *Doc, n protocol.BlueprintNode, k int, seen map[string]bool, raw []byte) ([]TaskFound, string, error) {
	if k <= 0 {
		k = DefaultPageNodes
	}
	bad := func(format string, args ...any) ([]TaskFound, string, error) {
		return nil, "", &TaskAnswerError{NodeID: n.ID, Msg: fmt.Sprintf(format, args...)}
	}
	var a taskAnswer
	dec := json.NewDecoder(bytes.NewReader(bytes.TrimSpace(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return bad("the answer is not the JSON object asked for: %v", err)
	}
	if dec.More() {
		return bad("the answer has text after its JSON object")
	}
	if a.Tasks == nil || a.Next == nil {
		return bad(`the answer needs "tasks" and "next"`)
	}
	if len(a.Tasks) > k {
		return bad("%d tasks in one answer, at most %d allowed", len(a.Tasks), k)
	}
	if len(a.Tasks) == 0 && *a.Next != "" {
		return bad("no tasks but a cursor %q", *a.Next)
	}
	var out []TaskFound
	for i, t := range a.Tasks {
		title := strings.TrimSpace(t.Title)
		what := fmt.Sprintf("task %d (%q)", i+1, title)
		switch {
		case title == "":
			return bad("task %d: empty title", i+1)
		case seen[norm(title)]:
			return bad("%s: a second task with this title", what)
		case strings.TrimSpace(t.Kind) == "":
			return bad("%s: empty kind", what)
		case len(t.Criteria) == 0:
			return bad("%s: no acceptance criteria", what)
		case t.Estimate.Rank() < 0:
			return bad("%s: unknown estimate %q", what, t.Estimate)
		case !t.Risk.Valid():
			return bad("%s: unknown risk %q", what, t.Risk)
		}
		for _, f := range t.Files {
			if !protocol.LocalFile(f) {
				return bad("%s: file %q is not a path relative to the repository that stays inside it", what, f)
			}
		}
		ex, ok := findExcerpt(d.Text, n.Start, n.End, t.Excerpt)
		if !ok {
			return bad("%s: its excerpt is not in the node's text", what)
		}
		seen[norm(title)] = true
		out = append(out, TaskFound{Title: title, Kind: strings.TrimSpace(t.Kind),
			Acceptance: protocol.TaskAcceptance{Criteria: t.Criteria, Checks: nonNil(t.Checks), Files: nonNil(t.Files)},
			DependsOn:  t.DependsOn, Estimate: t.Estimate, Risk: t.Risk, Excerpt: ex})
	}
	return out, *a.Next, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// findExcerpt finds ex in text[start:end], comparing words (runs of
// whitespace match any whitespace).
func findExcerpt(text string, start, end int, ex string) (protocol.ByteRange, bool) {
	words := strings.Fields(ex)
	if len(words) == 0 {
		return protocol.ByteRange{}, false
	}
	hay := text[start:end]
	for off := 0; off < len(hay); {
		i := strings.Index(hay[off:], words[0])
		if i < 0 {
			return protocol.ByteRange{}, false
		}
		p := off + i
		q := p + len(words[0])
		ok := true
		for _, w := range words[1:] {
			r := q
			for r < len(hay) && (hay[r] == ' ' || hay[r] == '\n' || hay[r] == '\t' || hay[r] == '\r') {
				r++
			}
			if r == q || !strings.HasPrefix(hay[r:], w) {
				ok = false
				break
			}
			q = r + len(w)
		}
		if ok {
			return protocol.ByteRange{Start: start + p, End: start + q}, true
		}
		off = p + 1
	}
	return protocol.ByteRange{}, false
}

// TaskID is the stable id of a node's task with this title.
func TaskID(nodeID, title string) string {
	sum := sha256.Sum256([]byte(nodeID + "\x1f" + norm(title)))
	return "t_" + hex.EncodeToString(sum[:8])
}

// BuildTasks gives a node's tasks their ids and resolves their
// dependencies by title: among the node's tasks, else among others (the
// version's other tasks), else the tree's nodes. A name that matches
// nothing, or that would close a cycle, is kept in Unresolved.
func BuildTasks(d *Doc, t *Tree, n protocol.BlueprintNode, found []TaskFound, others []protocol.BlueprintTask) []protocol.BlueprintTask {
	out := make([]protocol.BlueprintTask, len(found))
	byName := map[string]string{}
	for i, f := range found {
		out[i] = protocol.BlueprintTask{ID: TaskID(n.ID, f.Title), NodeID: n.ID, Title: f.Title, Kind: f.Kind, Acceptance: f.Acceptance,
			Estimate: f.Estimate, Risk: f.Risk, Excerpt: f.Excerpt, ExcerptText: d.Text[f.Excerpt.Start:f.Excerpt.End],
			Status: protocol.NodePlanned, Order: i}
		byName[norm(f.Title)] = out[i].ID
	}
	for _, o := range others {
		if _, ok := byName[norm(o.Title)]; !ok && o.NodeID != n.ID {
			byName[norm(o.Title)] = o.ID
		}
	}
	for _, x := range t.Nodes {
		if _, ok := byName[norm(x.Title)]; !ok {
			byName[norm(x.Title)] = x.ID
		}
	}
	// Edges among the node's own tasks may close cycles; the others' and
	// the nodes' cannot reach back into tasks that are new.
	deps := map[string][]string{}
	reach := func(from, to string) bool {
		seen := map[string]bool{from: true}
		todo := []string{from}
		for len(todo) > 0 {
			x := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if x == to {
				return true
			}
			for _, y := range deps[x] {
				if !seen[y] {
					seen[y] = true
					todo = append(todo, y)
				}
			}
		}
		return false
	}
	for i, f := range found {
		task := &out[i]
		for _, name := range f.DependsOn {
			id, ok := byName[norm(name)]
			switch {
			case !ok:
				task.Unresolved = append(task.Unresolved, name)
			case id == task.ID || slices.Contains(task.DependsOn, id):
			case reach(id, task.ID):
				task.Unresolved = append(task.Unresolved, name+" (would close a cycle)")
			default:
				task.DependsOn = append(task.DependsOn, id)
				deps[task.ID] = append(deps[task.ID], id)
			}
		}
	}
	return out
}

// WithTasks is the tree with tasks as task nodes under their nodes (right
// after each node, before its children), for Next: a node with tasks is
// then no longer a leaf, so its tasks are the work, not the node.
func WithTasks(t *Tree, tasks []protocol.BlueprintTask) *Tree {
	if len(tasks) == 0 {
		return t
	}
	by := map[string][]protocol.BlueprintTask{}
	for _, x := range tasks {
		by[x.NodeID] = append(by[x.NodeID], x)
	}
	out := &Tree{Nodes: make([]protocol.BlueprintNode, 0, len(t.Nodes)+len(tasks))}
	for _, n := range t.Nodes {
		out.Nodes = append(out.Nodes, n)
		for _, x := range by[n.ID] {
			out.Nodes = append(out.Nodes, protocol.BlueprintNode{ID: x.ID, ParentID: n.ID, Kind: protocol.KindTask, Title: x.Title,
				Anchor: append(slices.Clip(n.Anchor), x.Title), Start: x.Excerpt.Start, End: x.Excerpt.End, SectionEnd: x.Excerpt.End,
				Order: n.Order, Depth: n.Depth + 1, Status: x.Status, Priority: n.Priority, Risk: x.Risk, Estimate: x.Estimate,
				DependsOn: x.DependsOn, Unresolved: x.Unresolved})
		}
	}
	return out
}

// Rollup makes the status of every node with something under it follow
// the leaves under it (tasks, task specs, and nodes with nothing under them
// yet, which count as their own status): all done → done; some done or in
// progress → in_progress; else any blocked → blocked; else planned. t is
// changed in place (give it a copy of a shared tree); the indexes of the
// nodes whose status changed are returned.
func Rollup(t *Tree, tasks []protocol.BlueprintTask) []int {
	wt := WithTasks(t, tasks)
	nodes := wt.Nodes
	type agg struct{ total, done, prog, blocked int }
	sum := make([]agg, len(nodes))
	idx := wt.Index()
	for i := len(nodes) - 1; i >= 0; i-- {
		n := nodes[i]
		leaf := i+1 >= len(nodes) || nodes[i+1].Depth <= n.Depth
		if leaf {
			a := agg{total: 1}
			switch n.Status {
			case protocol.NodeDone:
				a.done = 1
			case protocol.NodeInProgress:
				a.prog = 1
			case protocol.NodeBlocked:
				a.blocked = 1
			}
			sum[i] = a
		}
		if p, ok := idx[n.ParentID]; ok && n.ParentID != "" {
			sum[p].total += sum[i].total
			sum[p].done += sum[i].done
			sum[p].prog += sum[i].prog
			sum[p].blocked += sum[i].blocked
		}
	}
	var changed []int
	for i := range t.Nodes {
		n := &t.Nodes[i]
		j := idx[n.ID]
		leaf := j+1 >= len(nodes) || nodes[j+1].Depth <= nodes[j].Depth
		a := sum[j]
		if leaf || a.total == 0 {
			continue
		}
		st := protocol.NodePlanned
		switch {
		case a.done == a.total:
			st = protocol.NodeDone
		case a.done > 0 || a.prog > 0:
			st = protocol.NodeInProgress
		case a.blocked > 0:
			st = protocol.NodeBlocked
		}
		if n.Status != st {
			n.Status = st
			changed = append(changed, i)
		}
	}
	return changed
}

// CarryTasks takes the tasks of the previous version into the next one
// (after Reconcile): the tasks of nodes that are gone are dropped (Diff
// lists them for review); the others keep their id and status, their
// excerpt is found again in the node's new text, and they are flagged for
// review when the node's own text changed or the excerpt is gone.
func CarryTasks(d *Doc, prev, next *Tree, tasks []protocol.BlueprintTask) []protocol.BlueprintTask {
	pidx, nidx := prev.Index(), next.Index()
	var out []protocol.BlueprintTask
	for _, x := range tasks {
		j, ok := nidx[x.NodeID]
		if !ok {
			continue
		}
		n := next.Nodes[j]
		if i, ok := pidx[x.NodeID]; ok && prev.Nodes[i].Hash != n.Hash {
			x.Review = true
		}
		if ex, ok := findExcerpt(d.Text, n.Start, n.End, x.ExcerptText); ok {
			x.Excerpt = ex
		} else {
			x.Excerpt = protocol.ByteRange{Start: n.Start, End: n.Start}
			x.Review = true
		}
		out = append(out, x)
	}
	return out
}
