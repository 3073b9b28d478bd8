package blueprint

import (
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// PlanInfo heads a rendered plan.
type PlanInfo struct {
	BlueprintID, Title, VersionID string
	Version                       int
}

// RenderPlan is the readable projection of a version
// (.apserver/blueprints/<id>/plan.md): the tree with statuses, the tasks
// under their nodes, and coverage with every uncovered normative sentence.
// It is a function of the stored state only: regenerated, never edited.
func RenderPlan(info PlanInfo, t *Tree, tasks []protocol.BlueprintTask, c *Coverage) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: plan\n\n", info.Title)
	fmt.Fprintf(&b, "Blueprint `%s`, version %d (`%s`). Written by apserver from its store; edits here are overwritten.\n\n", info.BlueprintID, info.Version, info.VersionID)
	done, total := 0, 0
	for _, n := range WithTasks(t, tasks).Nodes {
		if n.Kind == protocol.KindTask {
			total++
			if n.Status == protocol.NodeDone {
				done++
			}
		}
	}
	fmt.Fprintf(&b, "Tasks done: %d of %d.\n\n", done, total)
	if c != nil {
		unc := 0
		for _, s := range c.Normative {
			if s.NodeID == "" {
				unc++
			}
		}
		fmt.Fprintf(&b, "Coverage: %.1f%% of %d bytes of text; %d of %d normative sentences mapped, %d uncovered.\n\n",
			100*c.Ratio(), c.Total, len(c.Normative)-unc, len(c.Normative), unc)
	}
	b.WriteString("## Tree\n\n")
	by := map[string][]protocol.BlueprintTask{}
	for _, x := range tasks {
		by[x.NodeID] = append(by[x.NodeID], x)
	}
	for _, n := range t.Nodes {
		fmt.Fprintf(&b, "%s- %s %s **%s** `%s`%s\n", strings.Repeat("  ", n.Depth), box(n.Status), n.Kind, n.Title, n.ID, attrs(n.Status, n.Priority, n.Estimate))
		for _, x := range by[n.ID] {
			fmt.Fprintf(&b, "%s- %s task %s `%s`%s\n", strings.Repeat("  ", n.Depth+1), box(x.Status), x.Title, x.ID, attrs(x.Status, "", x.Estimate))
			if len(x.Unresolved) > 0 {
				fmt.Fprintf(&b, "%s  unresolved dependencies: %s\n", strings.Repeat("  ", n.Depth+1), strings.Join(x.Unresolved, "; "))
			}
			if e := x.Evidence; e != nil {
				fmt.Fprintf(&b, "%s  evidence: commit %s on %s (run %s)\n", strings.Repeat("  ", n.Depth+1), e.Commit, e.Branch, e.RunID)
			}
		}
		if len(n.Unresolved) > 0 {
			fmt.Fprintf(&b, "%s  unresolved dependencies: %s\n", strings.Repeat("  ", n.Depth), strings.Join(n.Unresolved, "; "))
		}
	}
	if c != nil {
		var unc []protocol.NormativeSentence
		for _, s := range c.Normative {
			if s.NodeID == "" {
				unc = append(unc, s)
			}
		}
		if len(unc) > 0 || len(c.Gaps) > 0 {
			b.WriteString("\n## Gaps\n\n")
			for _, g := range c.Gaps {
				fmt.Fprintf(&b, "- bytes %d-%d: in no node\n", g.Start, g.End)
			}
			for _, s := range unc {
				fmt.Fprintf(&b, "- normative, bytes %d-%d, in no node: %s\n", s.Start, s.End, s.Text)
			}
		}
	}
	return b.String()
}

func box(s protocol.NodeStatus) string {
	switch s {
	case protocol.NodeDone:
		return "[x]"
	case protocol.NodeInProgress:
		return "[~]"
	case protocol.NodeBlocked:
		return "[!]"
	}
	return "[ ]"
}

func attrs(s protocol.NodeStatus, p protocol.NodePriority, e protocol.Estimate) string {
	parts := []string{string(s)}
	if p != "" {
		parts = append(parts, "priority "+string(p))
	}
	if e != "" {
		parts = append(parts, "size "+string(e))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
