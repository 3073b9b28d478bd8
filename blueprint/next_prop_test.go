package blueprint

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// randomTree is a tree in preorder with phases, stories, tasks and task
// specs of random depth, statuses (in-progress parents too), priorities,
// estimates, orders (with ties) and dependencies: on earlier and later
// tasks, on nodes of other phases, on unknown ids, and in cycles.
func randomTree(r *rand.Rand) *Tree {
	statuses := []protocol.NodeStatus{protocol.NodePlanned, protocol.NodePlanned, protocol.NodePlanned, protocol.NodeInProgress, protocol.NodeDone, protocol.NodeDone, protocol.NodeDone, protocol.NodeBlocked}
	prios := []protocol.NodePriority{"", protocol.PriorityCritical, protocol.PriorityHigh, protocol.PriorityMedium, protocol.PriorityLow}
	ests := []protocol.Estimate{"", "XS", "S", "M", "L", "XL"}
	var nodes []protocol.BlueprintNode
	var stack []int // the open ancestors
	n := 1 + r.IntN(120)
	noTasks := r.IntN(6) == 0 // a tree of leaves without task nodes
	for i := range n {
		depth := 0
		if len(stack) > 0 && r.IntN(15) != 0 { // a new phase now and then
			depth = 1 + r.IntN(min(len(stack), 3))
		}
		stack = stack[:min(depth, len(stack))]
		nd := protocol.BlueprintNode{ID: fmt.Sprintf("n%d", i), Title: fmt.Sprintf("N %d", i%7), Depth: depth,
			Status: statuses[r.IntN(len(statuses))], Priority: prios[r.IntN(len(prios))], Estimate: ests[r.IntN(len(ests))], Order: r.IntN(n/3 + 1)}
		switch {
		case depth == 0:
			nd.Kind = protocol.KindPhase
		case noTasks || r.IntN(3) == 0:
			nd.Kind = protocol.KindStory
		default:
			nd.Kind = protocol.KindTask
		}
		if depth > 0 {
			nd.ParentID = nodes[stack[depth-1]].ID
			if r.IntN(25) == 0 {
				nd.ParentID = "ghost-parent"
			}
		}
		for range r.IntN(3) {
			switch d := r.IntN(20); {
			case d == 0:
				nd.DependsOn = append(nd.DependsOn, "ghost")
			case d < 8 && i > 0:
				nd.DependsOn = append(nd.DependsOn, fmt.Sprintf("n%d", i-1-r.IntN(min(i, 5))))
			case d < 12:
				nd.DependsOn = append(nd.DependsOn, fmt.Sprintf("n%d", r.IntN(n)))
			}
		}
		nodes = append(nodes, nd)
		stack = append(stack, i)
	}
	if r.IntN(8) == 0 && len(nodes) > 0 {
		nodes[0].Kind = protocol.KindStory // a tree without a phase
	}
	return &Tree{Nodes: nodes}
}

// TestNextMatchesOracle: on random trees and options, Next answers
// exactly what the former Next (nextOracle) answers: the same page of the
// same tasks, in the same order, with the same chains and in-progress
// marks, the same cursor and the same errors.
func TestNextMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 1))
	for i := range 3000 {
		tr := randomTree(r)
		var opts []NextOptions
		opts = append(opts, NextOptions{}, NextOptions{Limit: MaxNextLimit}, NextOptions{Limit: 1 + r.IntN(5), Cursor: fmt.Sprint(r.IntN(8))})
		if len(tr.Nodes) > 0 {
			p := tr.Nodes[r.IntN(len(tr.Nodes))]
			opts = append(opts, NextOptions{Phase: p.ID}, NextOptions{Phase: p.Title, Limit: 3, Cursor: "1"})
		}
		opts = append(opts, NextOptions{Phase: "nope"}, NextOptions{Cursor: "-1"}, NextOptions{Cursor: "999"})
		for _, o := range opts {
			got, gerr := Next(tr, o)
			want, werr := nextOracle(tr, o)
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || !reflect.DeepEqual(got, want) {
				t.Fatalf("tree %d, %+v:\nNext   %v %v\noracle %v %v\ntree %+v", i, o, ids(got), gerr, ids(want), werr, tr.Nodes)
			}
		}
	}
}

// TestNextCycleBelowMatchesOracle: a cycle among the work waiting for a
// ready task (edits refuse them, an old store may hold one) gives chains
// that depend on the order the dependents are walked in: Next walks them
// as the former Next did, in tree order, and gives r the same chain.
func TestNextCycleBelowMatchesOracle(t *testing.T) {
	pl := protocol.NodePlanned
	tr := &Tree{Nodes: []protocol.BlueprintNode{
		{ID: "P", Kind: protocol.KindPhase, Status: pl},
		task("r", 1, pl, "", ""),
		task("a", 2, pl, "", "", "r", "b"),
		task("b", 3, pl, "", "", "r", "a"),
		task("c", 4, pl, "", "", "b"),
		task("d", 5, pl, "", "", "c"),
	}}
	got, err := Next(tr, NextOptions{})
	want, _ := nextOracle(tr, NextOptions{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Next %v %v, oracle %v", ids(got), err, ids(want))
	}
	if len(got.Tasks) != 1 || got.Tasks[0].Chain != 4 {
		t.Fatalf("Next = %v, want r with chain 4 (r → a → b → c → d: entered at a, the cycle is cut at b → a; entered at b it would be cut at a → b, leaving r → b → c → d)", ids(got))
	}
}

func ids(p NextPage) string {
	s := fmt.Sprintf("phase %q next %q [", p.Phase, p.Next)
	for _, x := range p.Tasks {
		s += fmt.Sprintf(" %s(c%d,p%v)", x.Node.ID, x.Chain, x.InProgressNode)
	}
	return s + " ]"
}
