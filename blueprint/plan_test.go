package blueprint

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
)

// TestRenderPlanEvidence: plan.md names the commit that made a task done.
func TestRenderPlanEvidence(t *testing.T) {
	tr := &Tree{Nodes: []protocol.BlueprintNode{{ID: "n_1", Kind: protocol.KindFeature, Title: "Shout", Status: protocol.NodeInProgress}}}
	tasks := []protocol.BlueprintTask{
		{ID: "t_1", NodeID: "n_1", Title: "Parse --shout", Status: protocol.NodeDone,
			Evidence: &protocol.TaskEvidence{RunID: "r1", Branch: "apserver/r1-build", Commit: "9f3e2d"}},
		{ID: "t_2", NodeID: "n_1", Title: "Test it", Status: protocol.NodePlanned},
	}
	got := RenderPlan(PlanInfo{BlueprintID: "bp_1", Title: "G", VersionID: "bpv_1", Version: 1}, tr, tasks, nil)
	want := "  - [x] task Parse --shout `t_1` (done)\n    evidence: commit 9f3e2d on apserver/r1-build (run r1)\n  - [ ] task Test it `t_2` (planned)\n"
	if !strings.Contains(got, want) {
		t.Fatalf("RenderPlan = \n%s\nwant it to hold\n%s", got, want)
	}
}
