package blueprint

import (
	"slices"

	"github.com/apserver/apserver/protocol"
)

// Reconcile gives next (a new version's tree, fresh from Merge) the ids of
// prev where a node is the same node at another place, and carries over
// what humans and runs decided. Node ids come from anchor paths, so an
// unchanged section keeps its id by itself; Reconcile adds, in reading
// order:
//   - a node whose anchor is new but whose own text (Hash) and kind match a
//     node of prev that is gone keeps that node's id (it moved);
//   - a node whose anchor is new, under the same parent as a gone node of
//     the same kind at the same rank among its siblings of that kind,
//     keeps that node's id (its heading was renamed: it is modified).
//
// Statuses carry over for the ids kept; a modified node that was done is
// planned again (its text changed, the work must be checked again).
func Reconcile(prev, next *Tree) {
	if prev == nil {
		return
	}
	pidx := prev.Index()
	inNext := make(map[string]bool, len(next.Nodes))
	for _, n := range next.Nodes {
		inNext[n.ID] = true
	}
	// Gone nodes of prev, by hash and by (parent, kind, rank).
	type slot struct {
		parent string
		kind   protocol.NodeKind
		rank   int
	}
	byHash := map[string][]string{}
	bySlot := map[slot]string{}
	claimed := map[string]bool{}
	rank := func(nodes []protocol.BlueprintNode) []int {
		r := make([]int, len(nodes))
		count := map[slot]int{}
		for i, n := range nodes {
			k := slot{n.ParentID, n.Kind, 0}
			r[i] = count[k]
			count[k]++
		}
		return r
	}
	prank := rank(prev.Nodes)
	for i, n := range prev.Nodes {
		if inNext[n.ID] {
			continue
		}
		byHash[string(n.Kind)+n.Hash] = append(byHash[string(n.Kind)+n.Hash], n.ID)
		bySlot[slot{n.ParentID, n.Kind, prank[i]}] = n.ID
	}
	rename := map[string]string{}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		if p, ok := rename[n.ParentID]; ok {
			n.ParentID = p
		}
		if _, ok := pidx[n.ID]; ok {
			continue
		}
		var old string
		for _, id := range byHash[string(n.Kind)+n.Hash] {
			if !claimed[id] {
				old = id
				break
			}
		}
		if old == "" {
			// Rank among next's siblings of the same kind, parents reconciled.
			r := 0
			for j := i - 1; j >= 0; j-- {
				if next.Nodes[j].ParentID == n.ParentID && next.Nodes[j].Kind == n.Kind {
					r++
				}
			}
			if id, ok := bySlot[slot{n.ParentID, n.Kind, r}]; ok && !claimed[id] {
				old = id
			}
		}
		if old != "" && !inNext[old] {
			claimed[old] = true
			rename[n.ID] = old
			n.ID = old
		}
	}
	for i := range next.Nodes {
		n := &next.Nodes[i]
		for j, d := range n.DependsOn {
			if r, ok := rename[d]; ok {
				n.DependsOn[j] = r
			}
		}
		if pi, ok := pidx[n.ID]; ok {
			p := prev.Nodes[pi]
			n.Status = p.Status
			if p.Hash != n.Hash && n.Status == protocol.NodeDone {
				n.Status = protocol.NodePlanned
			}
		}
	}
}

// Diff compares two versions' trees by id: added, modified (own text or
// kind changed), removed, and moved (same text, other parent or anchor).
func Diff(prev, next *Tree) (added, modified, removed, moved []protocol.NodeChange) {
	pidx := prev.Index()
	nidx := next.Index()
	change := func(n protocol.BlueprintNode, before *protocol.BlueprintNode) protocol.NodeChange {
		return protocol.NodeChange{ID: n.ID, Kind: n.Kind, Title: n.Title, Anchor: n.Anchor, Before: before}
	}
	for _, n := range next.Nodes {
		pi, ok := pidx[n.ID]
		if !ok {
			added = append(added, change(n, nil))
			continue
		}
		p := prev.Nodes[pi]
		switch {
		case p.Hash != n.Hash || p.Kind != n.Kind:
			modified = append(modified, change(n, &p))
		case p.ParentID != n.ParentID || !slices.Equal(p.Anchor, n.Anchor):
			moved = append(moved, change(n, &p))
		}
	}
	for _, p := range prev.Nodes {
		if _, ok := nidx[p.ID]; !ok {
			removed = append(removed, change(p, nil))
		}
	}
	return added, modified, removed, moved
}
