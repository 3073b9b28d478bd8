package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/runs"
	"github.com/apserver/apserver/tools"
)

// memory.md keeps one section per run: a run finishing again replaces its
// section, other runs' stay.
func TestWriteMemory(t *testing.T) {
	wt := t.TempDir()
	snap := func(id, decision string) runs.Snapshot {
		return runs.Snapshot{Run: protocol.Run{ID: id, Status: protocol.RunCompleted, Request: "req " + id},
			Decisions: []runs.Decision{{Text: decision}}}
	}
	for _, s := range []runs.Snapshot{snap("a", "one"), snap("b", "two"), snap("a", "three")} {
		if err := writeMemory(wt, s); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(wt, ".apserver", "memory.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if strings.Count(text, "## Run a ") != 1 || strings.Count(text, "## Run b ") != 1 || strings.Contains(text, "- one") ||
		!strings.Contains(text, "- two") || !strings.Contains(text, "- three") {
		t.Errorf("memory.md:\n%s", text)
	}
}

// A check the command rules forbid makes its task high risk, even when
// nothing in its words does (runs.ClassifyRisk).
func TestMarkForbidden(t *testing.T) {
	x := &run{rn: &Runner{}}
	tasks := []protocol.PlanTask{
		{ID: "a", Risk: protocol.RiskLow, Acceptance: protocol.TaskAcceptance{Checks: []string{"go test ./..."}}},
		{ID: "b", Risk: protocol.RiskLow, Acceptance: protocol.TaskAcceptance{Checks: []string{"dd if=/dev/zero of=/dev/sda"}}},
	}
	if r, _ := runs.ClassifyRisk(tasks[1]); r == protocol.RiskHigh {
		t.Fatal("ClassifyRisk already catches dd; the test needs a check only the rules forbid")
	}
	x.markForbidden(runs.Config{Worktree: t.TempDir()}, tasks)
	if tasks[0].Risk != protocol.RiskLow || tasks[1].Risk != protocol.RiskHigh {
		t.Errorf("risks after markForbidden: %s, %s; want low, high", tasks[0].Risk, tasks[1].Risk)
	}
}

// The evidence names a check as the model wrote it, not the shell line
// that ran it.
func TestScript(t *testing.T) {
	for _, cmd := range []string{"go test ./...", "echo 'a b' && make test", "", "it's"} {
		if got := script(tools.DisplayCommand(cmd)); got != cmd {
			t.Errorf("script(DisplayCommand(%q)) = %q", cmd, got)
		}
	}
	if got := script("make test"); got != "make test" {
		t.Errorf("script of a bare command = %q", got)
	}
}
