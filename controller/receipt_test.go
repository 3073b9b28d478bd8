package controller

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
)

// fullInput sets every field of Input, so a field that does not survive
// JSON shows up.
func fullInput() Input {
	turn := TurnSummary{
		TurnID: "t2", Kind: KindWrapUp, Status: StatusFailed,
		Error:        &TurnError{Message: "stream closed", Kind: "network", Recoverable: true},
		Steps:        []Step{errStep("go test ./...", "exit 1"), {Tool: "apply_patch", Action: "apply_patch: main.go", Result: "ok"}},
		AgentMessage: "Retrying.", EmptyReply: true,
		Plan:            []PlanStep{{"a", PlanCompleted}, {"b", PlanPending}},
		DiffFingerprint: "d1", WorkspaceFingerprint: "w1",
		Usage:       Usage{Input: 1200, Cached: 300, Output: 99},
		Compactions: 1, ContextRatio: 0.8, PendingApprovals: 2, PendingQuestions: 3, ApprovalTimeouts: 4, WaitingOnProcess: true,
		ChecksPassed: ptr(false), ChecksNotRun: []string{"make test"}, ReviewApproved: ptr(true), ElapsedMs: 12_345,
	}
	return Input{
		Objective: "obj",
		Config: Config{Budgets: Budgets{Tokens: 1e6, Turns: 30, TimeMs: 3_600_000, CostUSD: 2.5},
			NoProgressTurns: 4, SameErrorTimes: 2, CompactionTimes: 5, MaxRetries: -1, ReviewOnDone: true, MinConfidence: 0.65, WrapUp: true},
		Spent:        Spent{Tokens: 12_345, Turns: 2, TimeMs: 99_000, CostUSD: 0.1 + 0.2},
		RunElapsedMs: 120_000,
		Turn:         turn,
		History:      []TurnSummary{{TurnID: "t1", Status: StatusCompleted, Steps: []Step{}, Plan: nil}},
		Recent:       []Decision{{Action: ActContinue, NextInput: "x", Reason: "r", Confidence: 0.7, Rule: ruleContinue, Source: SourcePolicy, WrapUp: true}},
		UserStop:     true,
		Retries:      2,
		Model:        &ModelAnswer{Action: ActReview, NextInput: "n", Reason: "r", Confidence: 0.61},
	}
}

func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	var got T
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", b, err)
	}
	return got
}

func TestInputJSONRoundTrip(t *testing.T) {
	for name, in := range map[string]Input{"full": fullInput(), "zero": {}, "base": base()} {
		if got := roundTrip(t, in); !reflect.DeepEqual(got, in) {
			t.Errorf("%s: JSON round trip = %+v, want %+v", name, got, in)
		}
	}
	// Every field of fullInput is set: a zero field means a new field the
	// fixture (and so the round trip) does not cover yet.
	var check func(path string, v reflect.Value)
	check = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Struct:
			for i := range v.NumField() {
				check(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Pointer:
			if v.IsNil() {
				t.Errorf("fullInput()%s is nil", path)
				return
			}
			if v.Elem().Kind() == reflect.Struct {
				check(path, v.Elem())
			}
		default:
			if v.IsZero() && !strings.HasSuffix(path, ".Plan") && !strings.HasPrefix(path, ".History") {
				t.Errorf("fullInput()%s is zero", path)
			}
		}
	}
	check("", reflect.ValueOf(fullInput()))
}

func TestReceiptReplay(t *testing.T) {
	in := base()
	in.Turn.AgentMessage = "The task is complete."
	in.Config.ReviewOnDone = true
	out := Decide(in)
	r := Receipt{ID: "rcpt_1", ThreadID: "thr_1", TurnID: in.Turn.TurnID, Seq: 3, Input: in, Output: out,
		PolicyHash: PolicyHash(in.Config), Executed: true, Override: "userStop", CreatedAtMs: 1_700_000_000_000}

	stored := roundTrip(t, r)
	if !reflect.DeepEqual(stored, r) {
		t.Fatalf("Receipt JSON round trip = %+v, want %+v", stored, r)
	}
	if got, same := Replay(stored); !same || got != out {
		t.Errorf("Replay(stored) = %+v, %v, want %+v, true", got, same, out)
	}
	full := Receipt{Input: fullInput(), PolicyHash: PolicyHash(fullInput().Config)}
	full.Output = Decide(full.Input)
	if got, same := Replay(roundTrip(t, full)); !same || got != full.Output {
		t.Errorf("Replay(full) = %+v, %v, want %+v, true", got, same, full.Output)
	}

	tampered := stored
	tampered.Output.Rule = ruleDone
	if _, same := Replay(tampered); same {
		t.Error("Replay(receipt with another rule) same = true, want false")
	}
	otherPolicy := stored
	otherPolicy.PolicyHash = PolicyHash(Config{NoProgressTurns: 9})
	got, same := Replay(otherPolicy)
	if same || !strings.Contains(got.Reason, "policy changed") || !strings.Contains(got.Reason, otherPolicy.PolicyHash) {
		t.Errorf("Replay(receipt under another policy) = %q, %v, want same=false and the hashes in the reason", got.Reason, same)
	}
}

func TestPolicyHash(t *testing.T) {
	// Golden: a change here is a policy change. Bump PolicyVersion when
	// Decide's behaviour changes, and update these.
	const (
		wantDefault = "f026012500ca0eba1bd384f3ea3f0c5b8da8b18dc3aa56d87e1f1d0ac5e45db4"
		wantZero    = "fc656c0517dad3a25aa5f604c5f78a731f8a797b25af5f684f1d57f4e4052278"
	)
	if got := PolicyHash(DefaultConfig()); got != wantDefault {
		t.Errorf("PolicyHash(DefaultConfig()) = %s, want %s", got, wantDefault)
	}
	if got := PolicyHash(Config{}); got != wantZero {
		t.Errorf("PolicyHash(Config{}) = %s, want %s", got, wantZero)
	}
	if PolicyHash(Config{}) != PolicyHash(Config{NoProgressTurns: 3, MinConfidence: 0.6}) {
		t.Error("PolicyHash differs between a zero threshold and its explicit default")
	}
	seen := map[string]string{}
	for name, c := range map[string]Config{
		"default":      DefaultConfig(),
		"tokens":       {Budgets: Budgets{Tokens: 1}, WrapUp: true},
		"turns":        {Budgets: Budgets{Turns: 1}, WrapUp: true},
		"time":         {Budgets: Budgets{TimeMs: 1}, WrapUp: true},
		"cost":         {Budgets: Budgets{CostUSD: 0.01}, WrapUp: true},
		"noProgress":   {NoProgressTurns: 4, WrapUp: true},
		"sameError":    {SameErrorTimes: 4, WrapUp: true},
		"compaction":   {CompactionTimes: 4, WrapUp: true},
		"retries":      {MaxRetries: 4, WrapUp: true},
		"review":       {ReviewOnDone: true, WrapUp: true},
		"confidence":   {MinConfidence: 0.7, WrapUp: true},
		"wrapUpOff":    {},
		"noRetries":    {MaxRetries: -1, WrapUp: true},
		"nanIsHashed":  {MinConfidence: math.NaN(), WrapUp: true},
		"fractionCost": {Budgets: Budgets{CostUSD: 0.015}, WrapUp: true},
	} {
		h := PolicyHash(c)
		if len(h) != 64 {
			t.Errorf("PolicyHash(%s) = %q, want 64 hex digits", name, h)
		}
		if other, dup := seen[h]; dup {
			t.Errorf("PolicyHash(%s) == PolicyHash(%s)", name, other)
		}
		seen[h] = name
	}
}
