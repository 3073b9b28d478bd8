package projects

import (
	"testing"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/protocol"
)

func TestManagerWait(t *testing.T) {
	on := manager.Settings{Mode: manager.ModeSuggest, BlueprintID: "bp"}
	paused := on
	paused.Paused = true
	off := on
	off.Mode = manager.ModeOff
	suggest := &manager.Decision{Result: manager.ResultWaitingForApproval, Reason: "suggest: start a run for task t1 once approved", TaskIDs: []string{"t1"}}
	tests := []struct {
		name string
		st   manager.Settings
		last *manager.Decision
		kind protocol.AttentionKind // "" for none
		task string
	}{
		{"off waits for nobody", off, suggest, "", ""},
		{"no tick yet", on, nil, "", ""},
		{"a suggestion waits for approval", on, suggest, protocol.AttentionApproval, "t1"},
		{"a spent budget", on, &manager.Decision{Result: manager.ResultBudgetExhausted, Reason: "runs today: 2 of 2"}, protocol.AttentionPaused, ""},
		{"a pause", paused, nil, protocol.AttentionPaused, ""},
		{"a run's own wait is the runner's", on, &manager.Decision{Result: manager.ResultWaitingForApproval, Reason: "runs wait for a human: [r1]"}, "", ""},
		{"started a run", on, &manager.Decision{Result: manager.ResultStartedRun, TaskIDs: []string{"t2"}}, "", ""},
	}
	for _, tt := range tests {
		it := managerWait("/p", tt.st, tt.last, 5)
		switch {
		case tt.kind == "" && it != nil:
			t.Errorf("%s: managerWait = %+v, want none", tt.name, it)
		case tt.kind != "" && (it == nil || it.Kind != tt.kind || it.TaskID != tt.task || it.SinceMs != 5):
			t.Errorf("%s: managerWait = %+v, want kind %s task %q", tt.name, it, tt.kind, tt.task)
		}
	}
}

func TestRunWaits(t *testing.T) {
	w := func(x protocol.RunWaitingFor) *protocol.RunWaitingFor { return &x }
	got := runWaits([]manager.Run{
		{ID: "r1", TaskIDs: []string{"a"}, Status: protocol.RunRunning},
		{ID: "r2", TaskIDs: []string{"b"}, Status: protocol.RunWaiting, WaitingFor: w(protocol.WaitTaskApproval)},
		{ID: "r3", TaskIDs: []string{"c"}, Status: protocol.RunWaiting, WaitingFor: w(protocol.WaitClarification)},
		{ID: "", TaskIDs: []string{"d"}, Status: protocol.RunFailed},
	})
	if len(got) != 2 || got[0].RunID != "r2" || got[0].Kind != protocol.AttentionApproval || got[0].TaskID != "b" ||
		got[1].RunID != "r3" || got[1].Kind != protocol.AttentionQuestion {
		t.Errorf("runWaits = %+v", got)
	}
}
