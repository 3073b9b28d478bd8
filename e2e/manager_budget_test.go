package e2e

import (
	"encoding/json"
	"errors"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestManagerTokenAndCostBudgets: runs record the tokens the scripted
// model reports for each response (planner, implementer, reviewer), the
// manager sums them over the project's runs of the day, and a token or a
// cost budget spent by the first run stops the autopilot with
// budget_exhausted (exit 5) before a second run starts; the status says
// which budget with its figures, and says the cost is unknown when the
// model has no price rather than 0.
func TestManagerTokenAndCostBudgets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, config string
		flags        []string
		reason       *regexp.Regexp
		costUnknown  bool
	}{
		{name: "tokens", flags: []string{"--tokens-per-day", "50"},
			reason: regexp.MustCompile(`budget_exhausted: tokens today: (\d+) of 50`), costUnknown: true},
		{name: "cost", config: "[prices.\"scripted-model\"]\ninput_per_mtok = 1000\noutput_per_mtok = 1000\n", flags: []string{"--cost-per-day", "0.01"},
			reason: regexp.MustCompile(`budget_exhausted: cost today: (\d+\.\d+) of 0\.0100 USD`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, cli, features := managerProjectWith(t, tc.config)
			out, err := cli(append([]string{"project", "autopilot", "--mode", "full_auto", "--max-parallel-runs", "2", "--interval", "100ms"}, tc.flags...)...).CombinedOutput()
			var ee *exec.ExitError
			m := tc.reason.FindStringSubmatch(string(out))
			if !errors.As(err, &ee) || ee.ExitCode() != 5 || m == nil {
				t.Fatalf("autopilot: %v\n%s", err, out)
			}
			if n := strings.Count(string(out), "started_run:"); n != 1 {
				t.Errorf("%d runs started, want 1 (the budget is spent by the first):\n%s", n, out)
			}
			if out, err := cli("blueprint", "tasks", features[0]).CombinedOutput(); err != nil || strings.Count(string(out), "\tdone\t") != 1 {
				t.Errorf("tasks: %v\n%s", err, out)
			}
			b, err := cli("project", "status", "--json").Output()
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			var st struct {
				LastTick struct{ Result string } `json:"lastTick"`
				Spend    struct {
					Tokens         int64
					Cost           float64
					CostUnknown    bool     `json:"costUnknown"`
					UnpricedModels []string `json:"unpricedModels"`
					Exhausted      string
				}
			}
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatalf("status: %v\n%s", err, b)
			}
			// The planner's, the implementer's two and the reviewer's
			// responses: each reports at least 100 input tokens.
			if st.LastTick.Result != "budget_exhausted" || st.Spend.Tokens < 400 || !strings.HasPrefix(st.Spend.Exhausted, tc.name+" today: ") {
				t.Errorf("status: %s", b)
			}
			if tc.name == "tokens" && m[1] != strconv.FormatInt(st.Spend.Tokens, 10) {
				t.Errorf("the tick counted %s tokens, the status %d", m[1], st.Spend.Tokens)
			}
			if st.Spend.CostUnknown != tc.costUnknown || (tc.costUnknown && (st.Spend.Cost != 0 || len(st.Spend.UnpricedModels) != 1 || st.Spend.UnpricedModels[0] != "scripted-model")) ||
				(!tc.costUnknown && st.Spend.Cost < 0.01) {
				t.Errorf("cost in the status: %s", b)
			}
			text, err := cli("project", "status").Output()
			want := "budget exhausted: " + tc.name + " today: "
			if err != nil || !strings.Contains(string(text), want) || (tc.costUnknown && !strings.Contains(string(text), "cost unknown")) {
				t.Errorf("status text (want %q): %v\n%s", want, err, text)
			}
		})
	}
}
