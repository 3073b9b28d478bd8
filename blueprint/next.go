package blueprint

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apserver/apserver/protocol"
)

// Next limits.
const (
	DefaultNextLimit = 20
	MaxNextLimit     = 500
)

// NextOptions selects a page of Next: Phase is a phase's id or title (the
// first unfinished phase when empty), Cursor and Limit page the answer.
type NextOptions struct {
	Phase  string
	Cursor string
	Limit  int
}

// NextPage is a page of ready work.
type NextPage struct {
	Phase string // the phase's id ("" when the tree has no phases)
	Tasks []protocol.NextTask
	Next  string // cursor of the next page; "" on the last
}

// ErrUnknownPhase and ErrBadCursor are bad options of Next.
var (
	ErrUnknownPhase = fmt.Errorf("unknown phase")
	ErrBadCursor    = fmt.Errorf("bad cursor")
)

// Next returns the work that can start now in the active phase: its task
// leaves (its leaves when the tree has no task nodes; a task spec with
// generated tasks under it, see WithTasks, is not a leaf) that are planned or
// in progress and whose dependencies are all done. They come best first:
// tasks of in-progress nodes (the task or an ancestor in progress), then
// the longest chain of unfinished tasks waiting for them, then priority,
// then the smaller estimate, then reading order. Next is deterministic and
// never returns a task with a dependency that is not done.
func Next(t *Tree, opt NextOptions) (NextPage, error) {
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultNextLimit
	}
	limit = min(limit, MaxNextLimit)
	off := 0
	if opt.Cursor != "" {
		n, err := strconv.Atoi(opt.Cursor)
		if err != nil || n < 0 {
			return NextPage{}, fmt.Errorf("%w %q", ErrBadCursor, opt.Cursor)
		}
		off = n
	}
	nodes := t.Nodes
	idx := t.Index()
	hasTasks := false
	for _, n := range nodes {
		if n.Kind == protocol.KindTask {
			hasTasks = true
			break
		}
	}
	isWork := func(i int) bool {
		leaf := i+1 >= len(nodes) || nodes[i+1].Depth <= nodes[i].Depth
		return leaf && (!hasTasks || nodes[i].Kind == protocol.KindTask)
	}
	unfinished := func(i int) bool {
		s := nodes[i].Status
		return s != protocol.NodeDone
	}

	// The phase: its subtree is [lo, hi) in preorder.
	lo, hi := 0, len(nodes)
	page := NextPage{}
	sub := func(p int) (int, int) {
		e := p + 1
		for e < len(nodes) && nodes[e].Depth > nodes[p].Depth {
			e++
		}
		return p, e
	}
	if opt.Phase != "" {
		found := false
		for i, n := range nodes {
			if n.Kind == protocol.KindPhase && (n.ID == opt.Phase || norm(n.Title) == norm(opt.Phase)) {
				lo, hi = sub(i)
				page.Phase, found = n.ID, true
				break
			}
		}
		if !found {
			return NextPage{}, fmt.Errorf("%w %q", ErrUnknownPhase, opt.Phase)
		}
	} else {
		for i, n := range nodes {
			if n.Kind != protocol.KindPhase {
				continue
			}
			a, b := sub(i)
			open := false
			for j := a; j < b && !open; j++ {
				open = isWork(j) && unfinished(j)
			}
			if open {
				lo, hi, page.Phase = a, b, n.ID
				break
			}
		}
	}

	// Dependents, for the chains: the unfinished work waiting on node j
	// is deps[start[j]:start[j+1]], in tree order (a counting sort of the
	// edges, which are found in tree order).
	type edge struct{ from, to int32 }
	var edges []edge
	start := make([]int32, len(nodes)+1)
	for i, n := range nodes {
		if len(n.DependsOn) == 0 || !isWork(i) || !unfinished(i) {
			continue
		}
		for _, d := range n.DependsOn {
			if j, ok := idx[d]; ok {
				edges = append(edges, edge{int32(j), int32(i)})
				start[j+1]++
			}
		}
	}
	for j := range nodes {
		start[j+1] += start[j]
	}
	deps := make([]int32, len(edges))
	fill := slices.Clone(start[:len(nodes)])
	for _, e := range edges {
		deps[fill[e.from]] = e.to
		fill[e.from]++
	}
	chain := make([]int32, len(nodes))
	state := make([]uint8, len(nodes)) // 0 new, 1 visiting, 2 done
	var visit func(i int32) int32
	visit = func(i int32) int32 {
		switch state[i] {
		case 1:
			return 0 // a cycle: edits refuse them, never loop
		case 2:
			return chain[i]
		}
		state[i] = 1
		best := int32(0)
		for _, j := range deps[start[i]:start[i+1]] {
			best = max(best, 1+visit(j))
		}
		state[i] = 2
		chain[i] = best
		return best
	}

	// The ready work, as sort keys; only the page is made NextTasks.
	type cand struct {
		pos, chain int32
		inProg     bool
		prio, est  int
		order      int
	}
	var ready []cand
	for i := lo; i < hi; i++ {
		n := &nodes[i]
		if !isWork(i) || (n.Status != protocol.NodePlanned && n.Status != protocol.NodeInProgress) {
			continue
		}
		ok := true
		for _, d := range n.DependsOn {
			j, known := idx[d]
			if !known || nodes[j].Status != protocol.NodeDone {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		inProg := false
		for j := i; j >= 0 && !inProg; {
			inProg = nodes[j].Status == protocol.NodeInProgress
			p, has := idx[nodes[j].ParentID]
			if nodes[j].ParentID == "" || !has {
				break
			}
			j = p
		}
		ready = append(ready, cand{pos: int32(i), chain: visit(int32(i)), inProg: inProg,
			prio: n.Priority.Rank(), est: n.Estimate.Rank(), order: n.Order})
	}
	// Best first: in-progress nodes, the longest chain, priority, the
	// smaller estimate, reading order (Order, then the position in the
	// tree, which makes the order total).
	slices.SortFunc(ready, func(a, b cand) int {
		switch {
		case a.inProg != b.inProg:
			if a.inProg {
				return -1
			}
			return 1
		case a.chain != b.chain:
			return int(b.chain - a.chain)
		case a.prio != b.prio:
			return a.prio - b.prio
		case a.est != b.est:
			return a.est - b.est
		case a.order != b.order:
			return a.order - b.order
		}
		return int(a.pos - b.pos)
	})
	if off > len(ready) {
		off = len(ready)
	}
	end := min(off+limit, len(ready))
	page.Tasks = make([]protocol.NextTask, 0, end-off)
	for _, c := range ready[off:end] {
		page.Tasks = append(page.Tasks, protocol.NextTask{Node: nodes[c.pos], Chain: int(c.chain), InProgressNode: c.inProg})
	}
	if end < len(ready) {
		page.Next = strconv.Itoa(end)
	}
	return page, nil
}
