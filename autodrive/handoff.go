package autodrive

import "strings"

// HandoffText is the hidden input of the first turn of the fresh thread a
// drive hands off to (fullauto.Handoff) from thread from, whose context had
// grown too large: the objective, the plan section a compaction would pin
// (pinnedPlan, "" for none) and the latest compaction's summary ("" for
// none).
func HandoffText(from, objective, pinnedPlan, summary string) string {
	var b strings.Builder
	b.WriteString("This run continues from thread " + from + ", whose context had grown too large to work in. ")
	b.WriteString("Everything you need from it is below; the workspace is as it left it.\n\n## Objective\n")
	b.WriteString(objective)
	if pinnedPlan != "" {
		b.WriteString(pinnedPlan)
	}
	if summary != "" {
		b.WriteString("\n\n## Summary of the work so far\n")
		b.WriteString(summary)
	}
	return b.String()
}
