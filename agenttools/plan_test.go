package agenttools

import (
	"strings"
	"testing"
)

// TestParsePlan: statuses are normalized (in_progress → inProgress), the
// plan item is a checklist, and each bad plan is refused with what the
// model must fix.
func TestParsePlan(t *testing.T) {
	exp, steps, err := ParsePlan(`{"explanation":"why","plan":[{"step":"a","status":"completed"},{"step":"b","status":"in_progress"},{"step":"c","status":"pending"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := PlanMarkdown(exp, steps), "why\n\n- [x] a\n- [~] b\n- [ ] c\n"; got != want {
		t.Errorf("PlanMarkdown = %q, want %q", got, want)
	}
	if steps[1].Status != "inProgress" {
		t.Errorf("status %q, want inProgress", steps[1].Status)
	}
	for args, want := range map[string]string{
		`not json`: "update_plan: invalid arguments",
		`{"plan":[{"step":"a","status":"done"}]}`:                                           `plan[0].status "done" is not one of`,
		`{"plan":[{"step":"a","status":"pending"},{"step":" ","status":"pending"}]}`:        "plan[1].step is empty",
		`{"plan":[{"step":"a","status":"in_progress"},{"step":"b","status":"inProgress"}]}`: "at most one step may be in_progress",
	} {
		if _, _, err := ParsePlan(args); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParsePlan(%s) = %v, want an error containing %q", args, err, want)
		}
	}
}

// TestParseQuestions: a question without an id gets its position's, every
// question allows another answer, and no questions is refused.
func TestParseQuestions(t *testing.T) {
	qs, err := ParseQuestions(`{"questions":[{"question":"which?","options":[{"label":"x"}]},{"id":"k","question":"sure?"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 2 || qs[0].ID != "q1" || qs[1].ID != "k" || !qs[0].IsOther || len(qs[0].Options) != 1 || qs[1].Options == nil {
		t.Errorf("questions %+v", qs)
	}
	if _, err := ParseQuestions(`{"questions":[]}`); err == nil || !strings.Contains(err.Error(), "questions must not be empty") {
		t.Errorf("no questions: %v", err)
	}
}
