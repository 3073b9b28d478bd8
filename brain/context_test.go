package brain

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

func contextInput() Input {
	return Input{
		Role: "implementer",
		Task: Task{ID: "t-12", Title: "Store orders in the database",
			Text:  "Add an orders table and a repository with create and list.\nAcceptance: pytest tests/test_orders.py passes.",
			Files: []string{"app/db/orders.py", "migrations/0003_orders.sql", "tests/test_orders.py"}, Nodes: []string{"n-orders"}},
		Node:      &protocol.BlueprintNode{ID: "n-orders", ParentID: "n-shop", Kind: protocol.KindStory, Title: "Orders are stored", Status: protocol.NodeInProgress, Risk: protocol.NodeRiskMedium},
		Excerpt:   "Orders are stored durably with their lines, totals and status.",
		Decisions: projectDecisions(),
		Snapshot:  Snapshot(snapshotState()),
		Memory:    "Prefer small modules.",
		Summaries: []Summary{{ThreadID: "th-2", Text: "Discussed the order status values: new, paid, shipped.", AtMs: 20}, {ThreadID: "th-1", Text: "Agreed on money as integer cents.", AtMs: 10}},
	}
}

func TestBuildGolden(t *testing.T) {
	got := Build(contextInput())
	golden(t, "context_implementer.md", got)
	if Build(contextInput()) != got {
		t.Fatal("Build is not deterministic")
	}
}

func TestBuildRanksMatchingDecisionsFirst(t *testing.T) {
	got := Build(contextInput())
	// d-1 (files app/db/**, migrations/**, tag database) and d-3 (tests/**)
	// match the task; d-6 (auth) does not and comes after them.
	i1, i3, i6 := strings.Index(got, "- d-1 "), strings.Index(got, "- d-3 "), strings.Index(got, "- d-6 ")
	if i1 < 0 || i3 < 0 || i6 < 0 || !(i1 < i3 && i3 < i6) {
		t.Errorf("decision order d-1 %d, d-3 %d, d-6 %d; want d-1 < d-3 < d-6", i1, i3, i6)
	}
	for _, gone := range []string{"- d-7 ", "- d-8 "} {
		if strings.Contains(got, gone) {
			t.Errorf("block lists %q, which is not active", gone)
		}
	}
	order := []string{"## Task", "## Plan node", "## Source excerpt", "## Decisions", "## Snapshot", "## Memory", "## Conversation summaries"}
	last := -1
	for _, h := range order {
		i := strings.Index(got, h)
		if i <= last {
			t.Fatalf("section %q at %d, after %d: order broken", h, i, last)
		}
		last = i
	}
}

func TestBuildStaysWithinBudget(t *testing.T) {
	in := contextInput()
	in.Excerpt = strings.Repeat("The order service keeps every order and its lines. ", 2000)
	for i := 0; i < 500; i++ {
		in.Decisions = append(in.Decisions, protocol.ProjectDecision{ID: "x-" + string(rune('a'+i%26)) + strings.Repeat("z", i%7),
			Title: "Decision about something else", Text: strings.Repeat("words ", 40), Status: protocol.DecisionActive, CreatedAtMs: int64(i), UpdatedAtMs: int64(i)})
	}
	for _, budget := range []int{300, 1000, 8000} {
		in.Budget = budget
		got := Build(in)
		if Tokens(got) > budget {
			t.Errorf("Build with budget %d: %d tokens", budget, Tokens(got))
		}
		if budget >= 1000 && (!strings.Contains(got, "- d-1 ") || !strings.Contains(got, "The order service keeps")) {
			t.Errorf("Build with budget %d lost the matching decision or the excerpt:\n%s", budget, got)
		}
	}
}
