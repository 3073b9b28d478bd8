package blueprint

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/apserver/apserver/protocol"
)

// nextOracle is Next as it was before its ordering was made cheaper
// (kept as the oracle of TestNextMatchesOracle): it builds every ready
// task's NextTask, sorts them all, then pages.
func nextOracle(t *Tree, opt NextOptions) (NextPage, error) {
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

	// Dependents, for the chains.
	dependents := make([][]int, len(nodes))
	for i, n := range nodes {
		if !isWork(i) || !unfinished(i) {
			continue
		}
		for _, d := range n.DependsOn {
			if j, ok := idx[d]; ok {
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	chain := make([]int, len(nodes))
	state := make([]uint8, len(nodes)) // 0 new, 1 visiting, 2 done
	var visit func(i int) int
	visit = func(i int) int {
		switch state[i] {
		case 1:
			return 0 // a cycle: edits refuse them, never loop
		case 2:
			return chain[i]
		}
		state[i] = 1
		best := 0
		for _, j := range dependents[i] {
			best = max(best, 1+visit(j))
		}
		state[i] = 2
		chain[i] = best
		return best
	}

	var ready []protocol.NextTask
	var pos []int // position in the tree, the last tie-break
	for i := lo; i < hi; i++ {
		n := nodes[i]
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
		ready = append(ready, protocol.NextTask{Node: n, Chain: visit(i), InProgressNode: inProg})
		pos = append(pos, i)
	}
	order := make([]int, len(ready))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		a, b := ready[x], ready[y]
		switch {
		case a.InProgressNode != b.InProgressNode:
			if a.InProgressNode {
				return -1
			}
			return 1
		case a.Chain != b.Chain:
			return b.Chain - a.Chain
		case a.Node.Priority.Rank() != b.Node.Priority.Rank():
			return a.Node.Priority.Rank() - b.Node.Priority.Rank()
		case a.Node.Estimate.Rank() != b.Node.Estimate.Rank():
			return a.Node.Estimate.Rank() - b.Node.Estimate.Rank()
		case a.Node.Order != b.Node.Order:
			return a.Node.Order - b.Node.Order
		}
		return pos[x] - pos[y]
	})
	sorted := make([]protocol.NextTask, len(ready))
	for i, j := range order {
		sorted[i] = ready[j]
	}
	ready = sorted
	if off > len(ready) {
		off = len(ready)
	}
	end := min(off+limit, len(ready))
	page.Tasks = ready[off:end]
	if end < len(ready) {
		page.Next = strconv.Itoa(end)
	}
	return page, nil
}
