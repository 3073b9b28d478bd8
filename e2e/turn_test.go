package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestPlainTurn checks the canonical ordering of a plain turn (protocol/codex/CORE.md §9 A)
// on both wires.
func TestPlainTurn(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct {
		wire     string
		coalesce bool
	}{{"responses", false}, {"chat", false}, {"responses", true}, {"chat", true}} {
		wire := mode.wire
		name, args := wire, []string{"--no-coalesce"}
		if mode.coalesce {
			name, args = wire+"/coalesce", nil
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const answer = "Hello there, how are you today?"
			reasoning := []string{"Plan the greeting.", "Then say it politely."}
			model := startModel(t, scripted.Rule{Match: "say hello", Steps: []scripted.Step{
				{Reasoning: reasoning, Text: answer},
			}})
			c := newClient(t, model, options{wire: wire, args: args, inProcess: true})

			// thread/start: response, then thread/started with status idle.
			cwd := t.TempDir()
			ts := c.call("thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "never"})
			threadID := ts.str("thread.id")
			started := c.waitFor("thread/started", func(m *message) bool { return m.str("thread.id") == threadID })
			if started.Seq < ts.Seq {
				t.Errorf("thread/started (#%d) before the thread/start response (#%d)", started.Seq, ts.Seq)
			}
			if got := started.str("thread.status.type"); got != "idle" {
				t.Errorf("thread/started status = %q, want idle", got)
			}
			if ts.str("model") != "scripted-model" || ts.get("approvalPolicy") != "never" || ts.str("cwd") != cwd {
				t.Errorf("thread/start result model %v approvalPolicy %v cwd %v, want scripted-model never %s",
					ts.get("model"), ts.get("approvalPolicy"), ts.get("cwd"), cwd)
			}
			if got := ts.str("thread.cwd"); got != cwd {
				t.Errorf("thread/start thread.cwd = %q, want %q", got, cwd)
			}

			resp, turnID := c.startTurn(threadID, "please say hello")
			if got := resp.str("turn.status"); got != "inProgress" {
				t.Errorf("turn/start turn.status = %q, want inProgress", got)
			}
			if v, ok := resp.params.(map[string]any)["turn"].(map[string]any)["startedAt"]; !ok || v != nil {
				t.Errorf("turn/start turn.startedAt = %v (present %v), want null", v, ok)
			}
			done := c.turnDone(turnID)

			active := c.waitAfter(resp, "thread/status/changed", statusIs(threadID, "active"))
			turnStarted := c.waitFor("turn/started", forTurn(turnID))
			if !(resp.Seq < active.Seq && active.Seq < turnStarted.Seq) {
				t.Errorf("order: turn/start response #%d, status active #%d, turn/started #%d; want increasing", resp.Seq, active.Seq, turnStarted.Seq)
			}
			if turnStarted.get("turn.startedAt") == nil {
				t.Errorf("turn/started turn.startedAt is null: %s", turnStarted.Raw)
			}

			// userMessage.
			uStart := c.waitFor("item/started", itemOfType(turnID, "userMessage"))
			uDone := c.waitFor("item/completed", itemOfType(turnID, "userMessage"))
			if got := uDone.str("item.content.0.text"); got != "please say hello" {
				t.Errorf("userMessage content text = %q, want %q", got, "please say hello")
			}
			if uStart.str("item.id") != uDone.str("item.id") || uStart.Seq < turnStarted.Seq {
				t.Errorf("userMessage item/started #%d (id %s) / completed #%d (id %s) after turn/started #%d",
					uStart.Seq, uStart.str("item.id"), uDone.Seq, uDone.str("item.id"), turnStarted.Seq)
			}

			// reasoning.
			rStart := c.waitFor("item/started", itemOfType(turnID, "reasoning"))
			rDone := c.waitFor("item/completed", itemOfType(turnID, "reasoning"))
			rID := rStart.str("item.id")
			if wire == "responses" {
				// Responses: one summary part per scripted entry, streamed
				// as summaryTextDelta with its summaryIndex.
				parts := map[float64]string{}
				for _, d := range c.find("item/reasoning/summaryTextDelta", func(m *message) bool { return m.str("itemId") == rID }) {
					if d.Seq < rStart.Seq || d.Seq > rDone.Seq {
						t.Errorf("reasoning delta #%d outside item/started #%d .. item/completed #%d", d.Seq, rStart.Seq, rDone.Seq)
					}
					idx, _ := d.get("summaryIndex").(float64)
					parts[idx] += d.str("delta")
				}
				summary, _ := rDone.get("item.summary").([]any)
				if len(summary) != len(reasoning) {
					t.Errorf("reasoning item/completed summary = %v, want %q", summary, reasoning)
				}
				for i, want := range reasoning {
					if i < len(summary) && summary[i] != want {
						t.Errorf("reasoning summary[%d] = %v, want %q", i, summary[i], want)
					}
					if parts[float64(i)] != want {
						t.Errorf("reasoning summaryTextDelta concat for index %d = %q, want %q", i, parts[float64(i)], want)
					}
				}
			} else {
				// Chat: reasoning_content is raw reasoning text, streamed as
				// textDelta into the item's content.
				var streamed strings.Builder
				for _, d := range c.find("item/reasoning/textDelta", func(m *message) bool { return m.str("itemId") == rID }) {
					if d.Seq < rStart.Seq || d.Seq > rDone.Seq {
						t.Errorf("reasoning delta #%d outside item/started #%d .. item/completed #%d", d.Seq, rStart.Seq, rDone.Seq)
					}
					streamed.WriteString(d.str("delta"))
				}
				var content strings.Builder
				parts, _ := rDone.get("item.content").([]any)
				for _, p := range parts {
					content.WriteString(p.(string))
				}
				want := strings.Join(reasoning, "\n\n")
				if content.String() != want || streamed.String() != want {
					t.Errorf("chat reasoning: content %q, textDelta concat %q; want %q", content.String(), streamed.String(), want)
				}
			}

			// agentMessage.
			aStart := c.waitFor("item/started", itemOfType(turnID, "agentMessage"))
			aDone := c.waitFor("item/completed", itemOfType(turnID, "agentMessage"))
			aID := aStart.str("item.id")
			if aID == "" || aDone.str("item.id") != aID {
				t.Errorf("agentMessage ids: started %q completed %q", aID, aDone.str("item.id"))
			}
			if got := aStart.str("item.text"); got != "" {
				t.Errorf("agentMessage item/started text = %q, want empty", got)
			}
			var concat strings.Builder
			deltas := c.find("item/agentMessage/delta", func(m *message) bool { return m.str("itemId") == aID })
			for _, d := range deltas {
				if d.Seq < aStart.Seq || d.Seq > aDone.Seq {
					t.Errorf("agent delta #%d outside item/started #%d .. item/completed #%d", d.Seq, aStart.Seq, aDone.Seq)
				}
				concat.WriteString(d.str("delta"))
			}
			// Without coalescing every model delta is its own notification;
			// with it, deltas already waiting are merged (at least one, at
			// most one per model delta).
			if words := len(strings.Fields(answer)); !mode.coalesce && len(deltas) != words {
				t.Errorf("got %d agentMessage deltas, want one per model delta (%d)", len(deltas), words)
			} else if mode.coalesce && (len(deltas) < 1 || len(deltas) > words) {
				t.Errorf("got %d coalesced agentMessage deltas, want 1..%d", len(deltas), words)
			}
			if concat.String() != answer || aDone.str("item.text") != answer {
				t.Errorf("agentMessage deltas concat %q, completed text %q; want %q", concat.String(), aDone.str("item.text"), answer)
			}
			if rDone.Seq > aStart.Seq {
				t.Errorf("reasoning completed #%d after agentMessage started #%d", rDone.Seq, aStart.Seq)
			}

			// token usage, idle, turn/completed last.
			usage := c.waitFor("thread/tokenUsage/updated", forTurn(turnID))
			idle := c.waitAfter(turnStarted, "thread/status/changed", statusIs(threadID, "idle"))
			if !(turnStarted.Seq < usage.Seq && usage.Seq < idle.Seq && aDone.Seq < idle.Seq && idle.Seq < done.Seq) {
				t.Errorf("order: turn/started #%d, tokenUsage #%d, agentMessage completed #%d, idle #%d, turn/completed #%d",
					turnStarted.Seq, usage.Seq, aDone.Seq, idle.Seq, done.Seq)
			}
			if got := usage.get("tokenUsage.total.totalTokens"); got == nil || got.(float64) <= 0 {
				t.Errorf("tokenUsage.total.totalTokens = %v, want > 0", got)
			}
			if got := done.str("turn.status"); got != "completed" {
				t.Errorf("turn/completed status = %q, want completed", got)
			}
			if done.get("turn.error") != nil {
				t.Errorf("turn/completed error = %v, want null", done.get("turn.error"))
			}
			items, _ := done.get("turn.items").([]any)
			if len(items) == 0 || jget(items[len(items)-1], "type") != "agentMessage" || jget(items[len(items)-1], "text") != answer {
				t.Errorf("turn/completed items = %v, want to end with the agentMessage %q", items, answer)
			}
			if late := c.find("", func(m *message) bool { return m.Seq > done.Seq && forTurn(turnID)(m) }); len(late) > 0 {
				t.Errorf("turn-scoped messages after turn/completed: %v", late)
			}
			if got := c.labelsBetween(nil, resp); indexOf(got, "turn/started") >= 0 {
				t.Errorf("turn/started before the turn/start response: %v", got)
			}
		})
	}
}

// TestCommandNever runs a command without approval and checks that its
// output reaches the next model request.
func TestCommandNever(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{"responses", "chat"} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			testCommandNever(t, wire)
		})
	}
}

func testCommandNever(t *testing.T, wire string) {
	model := startModel(t, scripted.Rule{Match: "run echo", Steps: []scripted.Step{
		{Text: "Running it.", ToolCalls: []scripted.ToolCall{{Command: "echo hello-from-tool"}}},
		{Text: "The command printed hello-from-tool."},
	}})
	c := newClient(t, model, options{wire: wire, inProcess: true})
	threadID, cwd := c.startThread("never")
	_, turnID := c.startTurn(threadID, "please run echo")
	done := c.turnDone(turnID)

	cStart := c.waitFor("item/started", itemOfType(turnID, "commandExecution"))
	cDone := c.waitFor("item/completed", itemOfType(turnID, "commandExecution"))
	id := cStart.str("item.id")
	if cStart.str("item.status") != "inProgress" {
		t.Errorf("commandExecution item/started status = %q, want inProgress", cStart.str("item.status"))
	}
	if !strings.Contains(cStart.str("item.command"), "echo hello-from-tool") {
		t.Errorf("commandExecution command = %q, want it to contain the command", cStart.str("item.command"))
	}
	if got := cStart.str("item.cwd"); got != cwd {
		t.Errorf("commandExecution cwd = %q, want the thread cwd %q", got, cwd)
	}
	var out strings.Builder
	deltas := c.find("item/commandExecution/outputDelta", func(m *message) bool { return m.str("itemId") == id })
	for _, d := range deltas {
		if d.Seq < cStart.Seq || d.Seq > cDone.Seq {
			t.Errorf("outputDelta #%d outside item/started #%d .. item/completed #%d", d.Seq, cStart.Seq, cDone.Seq)
		}
		out.WriteString(d.str("delta"))
	}
	if len(deltas) == 0 || !strings.Contains(out.String(), "hello-from-tool") {
		t.Errorf("outputDelta: %d deltas concatenating to %q, want output containing hello-from-tool", len(deltas), out.String())
	}
	if cDone.str("item.id") != id || cDone.str("item.status") != "completed" {
		t.Errorf("commandExecution item/completed id %q status %q, want %q completed", cDone.str("item.id"), cDone.str("item.status"), id)
	}
	if got := cDone.get("item.exitCode"); got != float64(0) {
		t.Errorf("commandExecution exitCode = %v, want 0", got)
	}
	if got := cDone.str("item.aggregatedOutput"); !strings.Contains(got, "hello-from-tool") {
		t.Errorf("commandExecution aggregatedOutput = %q, want it to contain hello-from-tool", got)
	}

	reqs := waitModelRequests(t, model, 2)
	if len(reqs) != 2 {
		t.Errorf("model got %d requests, want 2", len(reqs))
	}
	body := string(reqs[1].Body)
	marker := `"function_call_output"`
	if wire == "chat" {
		marker = `"role":"tool"`
	}
	if !strings.Contains(body, marker) || !strings.Contains(body, "hello-from-tool") {
		t.Errorf("second model request lacks the tool output (%s) with the output text:\n%s", marker, body)
	}
	if reqs[0].Model != "scripted-model" {
		t.Errorf("model request names model %q, want scripted-model", reqs[0].Model)
	}
	if reqs[1].ToolOutputs != 1 {
		t.Errorf("second model request has %d tool outputs, want 1", reqs[1].ToolOutputs)
	}

	final := c.waitFor("item/completed", func(m *message) bool {
		return itemOfType(turnID, "agentMessage")(m) && m.str("item.text") == "The command printed hello-from-tool."
	})
	if final.Seq < cDone.Seq || done.str("turn.status") != "completed" {
		t.Errorf("final message #%d vs command completed #%d; turn status %q", final.Seq, cDone.Seq, done.str("turn.status"))
	}
}

// TestTurnReasoningSummary: turn/start's summary is the reasoning summary
// asked of the model (Responses `reasoning.summary`), sticking for later
// turns like the effort; "none" asks for none; an unknown value is -32602.
func TestTurnReasoningSummary(t *testing.T) {
	t.Parallel()
	model := startModel(t)
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	reasoning := func() string {
		reqs := modelRequests(model)
		var body struct{ Reasoning json.RawMessage }
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
			t.Fatal(err)
		}
		return string(body.Reasoning)
	}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"effort": "high"}, `{"effort":"high","summary":"auto"}`},
		{map[string]any{"summary": "detailed"}, `{"effort":"high","summary":"detailed"}`},
		{map[string]any{}, `{"effort":"high","summary":"detailed"}`},
		{map[string]any{"summary": "none"}, `{"effort":"high"}`},
	} {
		p := map[string]any{"threadId": threadID, "input": textInput("hi")}
		for k, v := range tc.params {
			p[k] = v
		}
		r := c.call("turn/start", p)
		c.turnDone(r.str("turn.id"))
		if got := reasoning(); got != tc.want {
			t.Errorf("after turn/start %v the request's reasoning = %s, want %s", tc.params, got, tc.want)
		}
	}
	c.callErr("turn/start", map[string]any{"threadId": threadID, "input": textInput("hi"), "summary": "verbose"}, -32602, "summary")
}

// TestClientUserMessageID: the id a client gives its message
// (clientUserMessageId on turn/start and turn/steer) comes back as the
// userMessage item's clientId, live and when the thread is read, so the
// client can match the item to the message it already shows.
func TestClientUserMessageID(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "long task", Steps: []scripted.Step{{Deltas: 10, DeltaText: "working ", StallAfter: 2}}},
		scripted.Rule{Match: "and also", Steps: []scripted.Step{{Text: "Both done."}}})
	c := newClient(t, model, options{inProcess: true})
	threadID, _ := c.startThread("never")
	r := c.call("turn/start", map[string]any{"threadId": threadID, "input": textInput("long task"), "clientUserMessageId": "cm-1"})
	turnID := r.str("turn.id")
	c.waitFor("item/agentMessage/delta", forTurn(turnID))
	c.call("turn/steer", map[string]any{"threadId": threadID, "expectedTurnId": turnID, "input": textInput("and also this"), "clientUserMessageId": "cm-2"})
	c.turnDone(turnID)
	var got []string
	for _, m := range c.find("item/completed", itemOfType(turnID, "userMessage")) {
		got = append(got, m.str("item.clientId"))
	}
	if strings.Join(got, " ") != "cm-1 cm-2" {
		t.Errorf("userMessage clientIds = %q, want cm-1 cm-2", got)
	}
	read := c.call("thread/read", map[string]any{"threadId": threadID, "includeTurns": true})
	if !strings.Contains(read.Raw, `"clientId":"cm-1"`) || !strings.Contains(read.Raw, `"clientId":"cm-2"`) {
		t.Errorf("thread/read lost the clientIds: %s", read.Raw)
	}
	c.runTurn(threadID, "no id")
	items := c.find("item/completed", func(m *message) bool { return m.str("item.type") == "userMessage" })
	if last := items[len(items)-1]; last.get("item.clientId") != nil {
		t.Errorf("a message sent without an id has clientId %v", last.get("item.clientId"))
	}
}

// TestServiceTier: thread/start's and turn/start's serviceTier is the
// service_tier of the model requests (both wires), reported by the
// thread's result and sticking for later turns; unset, none is sent.
func TestServiceTier(t *testing.T) {
	t.Parallel()
	for _, wire := range []string{"responses", "chat"} {
		t.Run(wire, func(t *testing.T) {
			t.Parallel()
			model := startModel(t)
			c := newClient(t, model, options{wire: wire, inProcess: true})
			tier := func() any {
				reqs := modelRequests(model)
				var body map[string]any
				if err := json.Unmarshal(reqs[len(reqs)-1].Body, &body); err != nil {
					t.Fatal(err)
				}
				return body["service_tier"]
			}
			plain := c.call("thread/start", map[string]any{"cwd": t.TempDir()})
			if plain.get("serviceTier") != nil {
				t.Errorf("thread/start without a tier reports %v", plain.get("serviceTier"))
			}
			c.runTurn(plain.str("thread.id"), "hi")
			if got := tier(); got != nil {
				t.Errorf("a thread without a tier sent service_tier %v", got)
			}
			start := c.call("thread/start", map[string]any{"cwd": t.TempDir(), "serviceTier": "flex"})
			if start.str("serviceTier") != "flex" {
				t.Errorf("thread/start serviceTier = %v, want flex", start.get("serviceTier"))
			}
			threadID := start.str("thread.id")
			c.runTurn(threadID, "hi")
			if got := tier(); got != "flex" {
				t.Errorf("service_tier = %v, want flex", got)
			}
			c.turnDone(c.startTurnWith(threadID, map[string]any{"serviceTier": "priority"}))
			if got := tier(); got != "priority" {
				t.Errorf("after turn/start serviceTier priority: service_tier = %v", got)
			}
			c.runTurn(threadID, "again")
			if got := tier(); got != "priority" {
				t.Errorf("the turn's tier did not stick: service_tier = %v", got)
			}
			// Codex's TUI sends "default" on every turn: the provider's
			// default, so none is sent; its "fast" is the API's "priority".
			for give, want := range map[string]any{"default": nil, "fast": "priority"} {
				c.turnDone(c.startTurnWith(threadID, map[string]any{"serviceTier": give}))
				if got := tier(); got != want {
					t.Errorf("serviceTier %q: service_tier = %v, want %v", give, got, want)
				}
			}
		})
	}
}
