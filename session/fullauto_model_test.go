package session

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/apserver/apserver/autodrive"
	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// decisionManager is a Manager whose decision role is answered by sc
// (retries off, so that a failing model fails at once).
func decisionManager(t *testing.T, sc scripted.Script, role config.RoleConfig) (*Manager, *scripted.Server) {
	t.Helper()
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	cfg := testConfig(t, srv.URL())
	cfg.Roles = map[string]config.RoleConfig{autodrive.DecisionRole: role}
	m := NewManager(Options{Config: cfg, Client: newFakeClient(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	t.Cleanup(func() { _ = m.Close() })
	return m, srv
}

// TestDecisionModelAnswers: what the decision model is told about each
// kind of request, what its answers become, and how each way of failing
// is reported (the caller then asks a human).
func TestDecisionModelAnswers(t *testing.T) {
	t.Parallel()
	sc := scripted.Script{Rules: []scripted.Rule{
		{Match: "objective: cmd-accept", Steps: []scripted.Step{{Text: `{"decision":"accept","reason":"needed","confidence":0.9}`}}},
		{Match: "objective: file-decline", Steps: []scripted.Step{{Text: `{"decision":"decline","reason":"outside","confidence":0.8}`}}},
		{Match: "objective: question-ok", Steps: []scripted.Step{{Text: `{"answers":[{"id":"lang","answer":"French"}],"reason":"asked for","confidence":0.7}`}}},
		{Match: "objective: question-bad", Steps: []scripted.Step{{Text: `{"answers":"French"}`}}},
		{Match: "objective: approval-bad", Steps: []scripted.Step{{Text: `[1, 2]`}}},
		{Match: "objective: blank", Steps: []scripted.Step{{Text: "   "}}},
		{Match: "objective: http-error", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "bad request"}}},
	}}
	m, srv := decisionManager(t, sc, config.RoleConfig{Model: "scripted-decision"})
	dm := m.decisionModel()
	if dm == nil {
		t.Fatal("decisionModel() = nil with a [roles.decision]")
	}
	command := serverRequest{Method: protocol.RequestCommandApproval, Command: "make deploy", Rule: "prompt", RuleName: "prompt make (user:3)",
		Params: protocol.CommandApprovalParams{Cwd: ptr("/srv/app"), Reason: ptr("to ship it")}}
	file := serverRequest{Method: protocol.RequestFileChangeApproval, Paths: []string{"a.go", "../b.go"},
		Params: protocol.FileChangeApprovalParams{}}
	question := serverRequest{Method: protocol.RequestUserInput, Params: protocol.ToolRequestUserInputParams{Questions: []protocol.UserInputQuestion{
		{ID: "lang", Header: "Language", Question: "Which one?", Options: []protocol.UserInputOption{{Label: "French", Description: "en français"}}}}}}
	for _, tc := range []struct {
		objective string
		req       serverRequest
		outcome   string
		answer    string // JSON, "" for none
		prompt    []string
		err       string
	}{
		{"cmd-accept", command, controller.OutcomeAccept, `{"decision":"accept"}`,
			[]string{"make deploy", "in: /srv/app", "its reason: to ship it", "command rules say: prompt (prompt make (user:3))"}, ""},
		{"file-decline", file, controller.OutcomeDecline, `{"decision":"decline"}`,
			[]string{"change these files: a.go, ../b.go", "outside the workspace"}, ""},
		{"question-ok", question, controller.OutcomeAccept, `{"answers":{"lang":{"answers":["French"]}}}`,
			[]string{"id lang: Language Which one?", `option "French": en français`}, ""},
		{"question-bad", question, "", "", nil, "decoding the decision model's answer"},
		{"approval-bad", command, "", "", nil, "decoding the decision model's answer"},
		{"blank", command, "", "", nil, "gave no answer"},
		{"http-error", command, "", "", nil, "asking the decision model"},
		{"unknown", serverRequest{Method: "item/unknown", Params: struct{}{}}, "", "", nil, "cannot answer item/unknown"},
	} {
		before := len(srv.Requests())
		ra, err := dm.Answer(context.Background(), tc.objective, tc.req)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: answer() error = %v, want %q", tc.objective, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: answer() = %v", tc.objective, err)
			continue
		}
		if ra.Outcome != tc.outcome || string(ra.Answer) != tc.answer || ra.Reason == "" || ra.Confidence == 0 {
			t.Errorf("%s: answer() = %s %s (%q, %v), want %s %s", tc.objective, ra.Outcome, ra.Answer, ra.Reason, ra.Confidence, tc.outcome, tc.answer)
		}
		reqs := srv.Requests()[before:]
		if len(reqs) != 1 {
			t.Errorf("%s: %d model requests, want 1", tc.objective, len(reqs))
			continue
		}
		if reqs[0].Model != "scripted-decision" {
			t.Errorf("%s: asked model %q, want the decision role's", tc.objective, reqs[0].Model)
		}
		for _, want := range tc.prompt {
			if !strings.Contains(reqs[0].LastUserText, want) {
				t.Errorf("%s: the prompt lacks %q:\n%s", tc.objective, want, reqs[0].LastUserText)
			}
		}
	}
}

// TestDecisionModelDecideFails: a decision model that cannot be reached
// or answers off the schema gives an error, not a decision.
func TestDecisionModelDecideFails(t *testing.T) {
	t.Parallel()
	for _, step := range []scripted.Step{{HTTPError: 400, ErrorMessage: "bad request"}, {Text: "continue, I think"}} {
		m, _ := decisionManager(t, scripted.Script{Default: []scripted.Step{step}}, config.RoleConfig{Model: "scripted-decision"})
		in := controller.Input{Objective: "o", Turn: controller.TurnSummary{TurnID: "t1", Status: controller.StatusCompleted, AgentMessage: "done"}}
		if a, err := m.decisionModel().Decide(context.Background(), in); err == nil {
			t.Errorf("decide() with a model answering %+v = %+v, want an error", step, a)
		}
	}
}

// TestDecisionModelUnavailable: a decision role naming a provider that
// does not exist leaves full auto on the policy alone.
func TestDecisionModelUnavailable(t *testing.T) {
	t.Parallel()
	m, _ := decisionManager(t, scripted.Script{}, config.RoleConfig{Model: "x", Provider: "no-such-provider"})
	if dm := m.decisionModel(); dm != nil {
		t.Errorf("decisionModel() = %+v, want nil", dm)
	}
}

// TestDecisionModelAskedAgainOnce: an answer off its contract (a decision
// that is neither accept nor decline, a confidence above 1, an answer to a
// question nobody asked) is asked for once more, saying what was wrong;
// the second answer is taken when it is valid, and is an error naming the
// problem when it is not.
func TestDecisionModelAskedAgainOnce(t *testing.T) {
	t.Parallel()
	sc := scripted.Script{Rules: []scripted.Rule{
		// Only the second request about "fixed" says its decision was "nope".
		{Match: `not valid: decision: "nope"`, Steps: []scripted.Step{{Text: `{"decision":"accept","reason":"ok now","confidence":0.9}`}}},
		{Match: "Your previous answer was not valid", Steps: []scripted.Step{{Text: `{"decision":"maybe","reason":"unsure","confidence":0.5}`}}},
		{Match: "objective: fixed", Steps: []scripted.Step{{Text: `{"decision":"nope","reason":"?","confidence":0.5}`}}},
		{Match: "objective: maybe", Steps: []scripted.Step{{Text: `{"decision":"maybe","reason":"unsure","confidence":0.5}`}}},
		{Match: "objective: sure", Steps: []scripted.Step{{Text: `{"decision":"accept","reason":"very","confidence":7}`}}},
		{Match: "objective: stranger", Steps: []scripted.Step{{Text: `{"answers":[{"id":"other","answer":"x"}],"reason":"r","confidence":0.5}`}}},
	}}
	m, srv := decisionManager(t, sc, config.RoleConfig{Model: "scripted-decision"})
	dm := m.decisionModel()
	command := serverRequest{Method: protocol.RequestCommandApproval, Command: "make test", Params: protocol.CommandApprovalParams{}}
	question := serverRequest{Method: protocol.RequestUserInput, Params: protocol.ToolRequestUserInputParams{Questions: []protocol.UserInputQuestion{
		{ID: "lang", Header: "Language", Question: "Which one?"}}}}
	for _, tc := range []struct {
		objective string
		req       serverRequest
		told, err string // what the second request says was wrong; the error, "" when the second answer is taken
	}{
		{"fixed", command, `decision: "nope" is neither accept nor decline`, ""},
		{"maybe", command, `decision: "maybe" is neither accept nor decline`, `not valid, twice: decision: "maybe"`},
		{"sure", command, "confidence: 7 is not between 0 and 1", `not valid, twice: decision: "maybe"`},
		{"stranger", question, `answers[0].id: "other" is not a question asked`, `not valid, twice: answers: question "lang" has no answer`},
	} {
		before := len(srv.Requests())
		ra, err := dm.Answer(context.Background(), tc.objective, tc.req)
		reqs := srv.Requests()[before:]
		if len(reqs) != 2 {
			t.Errorf("%s: %d model requests, want 2 (asked again once)", tc.objective, len(reqs))
			continue
		}
		if !strings.Contains(reqs[1].LastUserText, "Your previous answer was not valid: "+tc.told) {
			t.Errorf("%s: the second request does not say %q:\n%s", tc.objective, tc.told, reqs[1].LastUserText)
		}
		if tc.err == "" {
			if err != nil || ra.Outcome != controller.OutcomeAccept || ra.Reason != "ok now" {
				t.Errorf("%s: answer() = %+v, %v; want the second answer taken", tc.objective, ra, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: answer() error = %v, want %q", tc.objective, err, tc.err)
		}
	}
}
