package controller

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

func TestModelSchema(t *testing.T) {
	var s struct {
		Type                 string                     `json:"type"`
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(ModelSchema(), &s); err != nil {
		t.Fatalf("ModelSchema() is not JSON: %v", err)
	}
	// Strict structured output: every property required, nothing else allowed.
	var props []string
	for k := range s.Properties {
		props = append(props, k)
	}
	slices.Sort(props)
	req := slices.Sorted(slices.Values(s.Required))
	if s.Type != "object" || !slices.Equal(props, req) || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("ModelSchema() = %s, want a strict object schema", ModelSchema())
	}
	if want := []string{"action", "confidence", "nextInput", "reason"}; !slices.Equal(req, want) {
		t.Errorf("ModelSchema() requires %v, want %v", req, want)
	}
	for _, a := range []Action{ActContinue, ActPause, ActStop, ActReview} {
		if !strings.Contains(string(s.Properties["action"]), `"`+string(a)+`"`) {
			t.Errorf("ModelSchema() action enum lacks %q", a)
		}
		if !strings.Contains(ModelInstructions(), `"`+string(a)+`"`) {
			t.Errorf("ModelInstructions() does not explain %q", a)
		}
	}
}

func TestParseModelAnswer(t *testing.T) {
	good := `{"action":"continue","nextInput":"add a test","reason":"tests missing","confidence":0.8}`
	got, err := ParseModelAnswer([]byte(" \n" + good + "\n"))
	want := ModelAnswer{Action: ActContinue, NextInput: "add a test", Reason: "tests missing", Confidence: 0.8}
	if err != nil || got != want {
		t.Errorf("ParseModelAnswer(%s) = %+v, %v, want %+v", good, got, err, want)
	}
	for _, bad := range []string{
		``,
		`not json`,
		`{"action":"continue","nextInput":"","reason":"r"}`,
		`{"action":"finish","nextInput":"","reason":"r","confidence":0.9}`,
		`{"action":"stop","nextInput":"","reason":"r","confidence":1.5}`,
		`{"action":"stop","nextInput":"","reason":"r","confidence":-0.1}`,
		`{"action":"stop","nextInput":"","reason":"r","confidence":0.9,"extra":1}`,
		`{"action":"stop","nextInput":"","reason":"r","confidence":0.9} {}`,
		"```json\n" + good + "\n```",
	} {
		if got, err := ParseModelAnswer([]byte(bad)); err == nil {
			t.Errorf("ParseModelAnswer(%s) = %+v, nil, want an error", bad, got)
		}
	}
}

func TestModelPrompt(t *testing.T) {
	in := base()
	in.Config.Budgets.Tokens = 50_000
	in.Turn.Plan = []PlanStep{{"parse flag", PlanCompleted}, {"docs", PlanPending}}
	in.Turn.Steps = []Step{errStep("go test ./...", "exit 1:\nFAIL TestFlag")}
	in.Turn.ChecksPassed = ptr(false)
	withHistory(&in, talk("t0", "Starting."))
	in.Recent = []Decision{{Action: ActContinue, Rule: ruleContinue}}
	in.Model = &ModelAnswer{Action: ActStop, Confidence: 1} // ignored: the prompt shows the policy's proposal

	p := ModelPrompt(in)
	for _, want := range []string{
		"objective: " + in.Objective,
		"tokens 1000 of 50000",
		"turns 2 (no budget)",
		"[x] parse flag", "[ ] docs",
		"! exec_command: go test ./... => exit 1: FAIL TestFlag",
		"checks failed",
		"t0 (completed)", `"Starting."`,
		"recent decisions (oldest first): continue (continue)",
		"policy proposal: continue (rule continue",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("ModelPrompt() lacks %q:\n%s", want, p)
		}
	}
	if again := ModelPrompt(in); again != p {
		t.Error("ModelPrompt is not deterministic")
	}
	if in.Model == nil {
		t.Error("ModelPrompt changed its caller's Input")
	}
}
