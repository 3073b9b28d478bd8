package e2e

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestModelErrors covers upstream HTTP failures (protocol/codex/CORE.md §9 E, §11 rule 5).
func TestModelErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		step       scripted.Step
		wantStatus string // turn status
		retries    int    // willRetry:true error notifications
		requests   int    // model requests (-1: more than one, any number)
		errorInfo  string // codexErrorInfo of the final error
		message    string // in the final error message
	}{
		{
			name:       "500 twice then success",
			step:       scripted.Step{HTTPError: 500, FailTimes: 2, Text: "Recovered fine."},
			wantStatus: "completed", retries: 2, requests: 3,
		},
		{
			name:       "500 always",
			step:       scripted.Step{HTTPError: 500, ErrorMessage: "upstream exploded"},
			wantStatus: "failed", retries: -1, requests: -1, errorInfo: "internalServerError",
		},
		{
			name:       "400",
			step:       scripted.Step{HTTPError: 400, ErrorMessage: "bad request body xyz"},
			wantStatus: "failed", retries: 0, requests: 1, errorInfo: "other", message: "bad request body xyz",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := startModel(t, scripted.Rule{Match: "", Steps: []scripted.Step{tc.step}})
			c := newClient(t, model, options{inProcess: true})
			threadID, _ := c.startThread("never")
			_, turnID := c.startTurn(threadID, "hello model")
			done := c.turnDone(turnID)

			errs := c.find("error", forTurn(turnID))
			var retrying, final []*message
			for _, e := range errs {
				if e.str("threadId") != threadID {
					t.Errorf("error notification threadId = %q, want %q", e.str("threadId"), threadID)
				}
				if e.get("willRetry") == true {
					retrying = append(retrying, e)
				} else {
					final = append(final, e)
				}
				if e.Seq > done.Seq {
					t.Errorf("error notification #%d after turn/completed #%d", e.Seq, done.Seq)
				}
			}
			reqs := len(modelRequests(model))
			switch {
			case tc.requests >= 0 && reqs != tc.requests:
				t.Errorf("model requests = %d, want %d", reqs, tc.requests)
			case tc.requests < 0 && reqs < 2:
				t.Errorf("model requests = %d, want retries", reqs)
			}
			switch {
			case tc.retries >= 0 && len(retrying) != tc.retries:
				t.Errorf("willRetry:true errors = %d, want %d", len(retrying), tc.retries)
			case tc.retries < 0 && len(retrying) != reqs-1:
				t.Errorf("willRetry:true errors = %d, want one per retried request (%d)", len(retrying), reqs-1)
			}
			if got := done.str("turn.status"); got != tc.wantStatus {
				t.Fatalf("turn status = %q, want %q: %s", got, tc.wantStatus, done.Raw)
			}

			if tc.wantStatus == "completed" {
				if len(final) != 0 {
					t.Errorf("a recovered turn sent willRetry:false errors: %v", final)
				}
				if got := jget(done.get("turn.items"), "0.text"); got != "Recovered fine." {
					t.Errorf("recovered turn items = %v, want the agentMessage", done.get("turn.items"))
				}
				if idle := c.waitFor("thread/status/changed", statusIs(threadID, "idle")); idle.Seq > done.Seq {
					t.Errorf("idle #%d after turn/completed #%d", idle.Seq, done.Seq)
				}
				return
			}

			// Failure: systemError, then error willRetry:false, then
			// turn/completed failed with the same error; no idle.
			if len(final) != 1 {
				t.Fatalf("willRetry:false errors = %d, want 1", len(final))
			}
			sysErr := c.waitFor("thread/status/changed", statusIs(threadID, "systemError"))
			if !(sysErr.Seq < done.Seq && final[0].Seq < done.Seq) {
				t.Errorf("order: systemError #%d, error #%d, turn/completed #%d", sysErr.Seq, final[0].Seq, done.Seq)
			}
			for _, r := range retrying {
				if r.Seq > final[0].Seq {
					t.Errorf("willRetry:true error #%d after the final error #%d", r.Seq, final[0].Seq)
				}
			}
			if items, ok := done.get("turn.items").([]any); !ok || len(items) != 0 {
				t.Errorf("failed turn/completed items = %v, want [] (protocol/codex/CORE.md §9 E)", done.get("turn.items"))
			}
			te := done.get("turn.error")
			if te == nil || jget(te, "message") == "" {
				t.Fatalf("failed turn error = %v, want a TurnError", te)
			}
			if got := final[0].str("error.message"); got != jget(te, "message") {
				t.Errorf("error notification message %q != turn.error.message %v", got, jget(te, "message"))
			}
			if got := jget(te, "codexErrorInfo"); got != tc.errorInfo {
				t.Errorf("turn.error.codexErrorInfo = %v, want %q", got, tc.errorInfo)
			}
			if tc.message != "" && !strings.Contains(jget(te, "message").(string), tc.message) {
				t.Errorf("turn.error.message = %v, want it to contain %q", jget(te, "message"), tc.message)
			}
			c.sync(threadID) // everything the failed turn did is in the log
			if got := c.find("thread/status/changed", func(m *message) bool {
				return statusIs(threadID, "idle")(m) && m.Seq > sysErr.Seq
			}); len(got) > 0 {
				t.Errorf("thread/status idle after systemError: %v", got)
			}
		})
	}
}
