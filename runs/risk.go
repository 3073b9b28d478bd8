package runs

import (
	"regexp"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// riskSigns are what makes a task high risk whatever the planner said:
// deleting directories, the network, migrations, dependency upgrades.
var riskSigns = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\brm\s+(-[a-zA-Z]*[rR][a-zA-Z]*|--recursive)\b|\brmdir\b|\bdelete (the |a )?(directory|directories|folder)`), "it deletes directories"},
	{regexp.MustCompile(`\b(curl|wget|ssh|scp|rsync|nc|git\s+push|git\s+fetch|git\s+pull|npm\s+publish)\b|\bnetwork\b`), "it uses the network"},
	{regexp.MustCompile(`\bmigrat(e|ion|ions)\b|\balter\s+table\b|\bdrop\s+table\b`), "it is a migration"},
	{regexp.MustCompile(`\b(upgrade|bump)\b.*\b(dependenc|package|module|version)|\b(go\s+get\s+-u|npm\s+(update|upgrade)|pip\s+install\s+-U|cargo\s+update)\b|\bdependency upgrade`), "it upgrades dependencies"},
}

// ClassifyRisk says whether a task is high risk by what it says and runs,
// and why ("" when nothing marks it; the planner's risk stands then).
func ClassifyRisk(t protocol.PlanTask) (protocol.TaskRisk, string) {
	text := strings.ToLower(strings.Join(append([]string{t.Title, t.Description, t.Kind}, t.Acceptance.Checks...), "\n"))
	for _, s := range riskSigns {
		if s.re.MatchString(text) {
			return protocol.RiskHigh, s.why
		}
	}
	return t.Risk, ""
}
