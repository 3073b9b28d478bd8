package manager

import (
	"encoding/json"
	"testing"
)

func TestConfirmed(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"answers":{"confirm":{"answers":["Apply"]}}}`:         true,
		`{"answers":{"confirm":{"answers":["Cancel"]}}}`:        false,
		`{"answers":{"confirm":{"answers":["other","Apply"]}}}`: true,
		`{"answers":{"other":{"answers":["Apply"]}}}`:           false,
		`{"answers":{}}`: false,
		`not json`:       false,
		`{"answers":{"confirm":{"answers":"Apply"}}}`: false,
	} {
		if got := Confirmed(json.RawMessage(raw)); got != want {
			t.Errorf("Confirmed(%s) = %v, want %v", raw, got, want)
		}
	}
	q := ConfirmQuestions("Pause the autopilot?")
	if len(q) != 1 || q[0].ID != "confirm" || q[0].Question != "Pause the autopilot?" || len(q[0].Options) != 2 ||
		q[0].Options[0].Label != ConfirmApply || q[0].Options[1].Label != ConfirmCancel {
		t.Errorf("ConfirmQuestions = %+v", q)
	}
}
