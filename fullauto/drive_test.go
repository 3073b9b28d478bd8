package fullauto

import (
	"fmt"
	"testing"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/protocol"
)

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		base int64
		n    int
		want int64
	}{
		{1000, 0, 0},
		{1000, 1, 1000},
		{1000, 3, 4000},
		{1000, 20, 60_000},
		{0, 3, 0},
	} {
		if got := Backoff(tc.base, tc.n); got != tc.want {
			t.Errorf("Backoff(%d, %d) = %d, want %d", tc.base, tc.n, got, tc.want)
		}
	}
}

func TestGoalStatus(t *testing.T) {
	for _, tc := range []struct {
		state protocol.FullAutoState
		stop  controller.StopCondition
		want  protocol.ThreadGoalStatus
	}{
		{protocol.FullAutoRunning, "", protocol.GoalActive},
		{protocol.FullAutoWaiting, "", protocol.GoalActive},
		{protocol.FullAutoPaused, controller.StopWaitingOnHuman, protocol.GoalPaused},
		{protocol.FullAutoPaused, controller.StopBudgetTokens, protocol.GoalBudgetLimited},
		{protocol.FullAutoPaused, controller.StopRetriesExhausted, protocol.GoalBlocked},
		{protocol.FullAutoStopped, controller.StopCompleted, protocol.GoalComplete},
		{protocol.FullAutoStopped, controller.StopBudgetTime, protocol.GoalBudgetLimited},
		{protocol.FullAutoStopped, controller.StopUserStop, protocol.GoalPaused},
		{protocol.FullAutoStopped, controller.StopStuckLoop, protocol.GoalBlocked},
		{protocol.FullAutoStopped, controller.StopApprovalTimeout, protocol.GoalBlocked},
	} {
		r := &Drive{State: tc.state, Stop: tc.stop}
		if got := r.GoalStatus(); got != tc.want {
			t.Errorf("GoalStatus(%s, %s) = %s, want %s", tc.state, tc.stop, got, tc.want)
		}
	}
}

// TestCost: a response is priced from the model's price table; a model
// without a price costs nothing.
func TestCost(t *testing.T) {
	for _, tc := range []struct {
		price Price
		want  float64
	}{
		{Price{InputPerMTok: 2, CachedInputPerMTok: 0.5, OutputPerMTok: 8}, 0.6*2 + 0.4*0.5 + 0.1*8},
		{Price{}, 0},
	} {
		m := New(Options{ThreadID: "th"})
		m.Start(0, protocol.FullAutoStartParams{ThreadID: "th", Objective: ptr("o")}, "")
		m.TurnStarted(0, "t1", "")
		m.ResponseDone(10, "t1", Response{Input: 1_000_000, Cached: 400_000, Output: 100_000, Price: tc.price})
		if got := m.Drive().Spent.CostUSD; fmt.Sprintf("%.6f", got) != fmt.Sprintf("%.6f", tc.want) {
			t.Errorf("cost at %+v = %v, want %v", tc.price, got, tc.want)
		}
		if got := m.Drive().Spent.Tokens; got != 700_000 {
			t.Errorf("spent tokens = %d, want 700000 (non-cached input plus output)", got)
		}
	}
}
