package protocol

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateTasks(t *testing.T) {
	ok := PlanTask{ID: "t1", Title: "one", Risk: RiskLow}
	for _, tc := range []struct {
		name  string
		tasks []PlanTask
		want  string // "" ok
	}{
		{"ok", []PlanTask{ok, {ID: "t2", Title: "two", Risk: RiskHigh, Dependencies: []string{"t1"}}}, ""},
		{"bad id", []PlanTask{{ID: "a b", Title: "x", Risk: RiskLow}}, "tasks[0].id"},
		{"dup", []PlanTask{ok, ok}, "appears twice"},
		{"no title", []PlanTask{{ID: "t1", Risk: RiskLow}}, "title"},
		{"risk", []PlanTask{{ID: "t1", Title: "x", Risk: "huge"}}, "risk"},
		{"unknown dep", []PlanTask{{ID: "t1", Title: "x", Risk: RiskLow, Dependencies: []string{"t9"}}}, "unknown task \"t9\""},
		{"cycle", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Dependencies: []string{"b"}}, {ID: "b", Title: "y", Risk: RiskLow, Dependencies: []string{"a"}}}, "cycle"},
		{"self", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Dependencies: []string{"a"}}}, "cycle"},
		{"files inside", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Acceptance: TaskAcceptance{Files: []string{"src/a.go", "./b/../c.txt", "d..e"}}}}, ""},
		{"file up", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Acceptance: TaskAcceptance{Files: []string{"ok.txt", "src/../../etc/passwd"}}}}, "tasks[0].acceptance.files[1]"},
		{"file absolute", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Acceptance: TaskAcceptance{Files: []string{"/home/u/.ssh/id_rsa"}}}}, "tasks[0].acceptance.files[0]"},
		{"file empty", []PlanTask{{ID: "a", Title: "x", Risk: RiskLow, Acceptance: TaskAcceptance{Files: []string{""}}}}, "acceptance.files[0]"},
	} {
		err := ValidateTasks("tasks", tc.tasks)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: ValidateTasks = %v, want ok", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrInvalidParams) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: ValidateTasks = %v, want an invalid-params error with %q", tc.name, err, tc.want)
		}
	}
}

func TestRunStartParamsValidate(t *testing.T) {
	bad := Trust("sometimes")
	auto := Autonomy("yolo")
	neg := -1
	for _, tc := range []struct {
		p    RunStartParams
		want string
	}{
		{RunStartParams{Request: "x"}, "`cwd`"},
		{RunStartParams{Cwd: "/r", Request: "  "}, "`request`"},
		{RunStartParams{Cwd: "/r", Request: "x", Trust: &RunTrustParams{Fixes: &bad}}, "trust.fixes"},
		{RunStartParams{Cwd: "/r", Request: "x", Autonomy: &auto}, "autonomy"},
		{RunStartParams{Cwd: "/r", Request: "x", MaxClarifications: &neg}, "maxClarifications"},
		{RunStartParams{Cwd: "/r", Request: "x"}, ""},
	} {
		err := tc.p.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Validate(%+v) = %v, want %q", tc.p, err, tc.want)
		}
	}
}
