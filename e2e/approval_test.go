package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

const approvalCmd = "echo approved > approval.txt && cat approval.txt"

// TestCommandApproval checks each approval decision (protocol/codex/CORE.md §8, §11 rule 7).
func TestCommandApproval(t *testing.T) {
	t.Parallel()
	call := scripted.Step{Text: "Writing the file.", ToolCalls: []scripted.ToolCall{{Command: approvalCmd}}}
	final := scripted.Step{Text: "All finished."}
	tests := []struct {
		name        string
		steps       []scripted.Step
		answer      func(c *client, req *message)
		itemStatus  string // of the first commandExecution
		fileWritten bool
		turnStatus  string
		modelReqs   int // model requests in the whole turn
		commands    int // commandExecution items completed
	}{
		{
			name:       "accept",
			steps:      []scripted.Step{call, final},
			answer:     func(c *client, req *message) { c.answer(req, map[string]any{"decision": "accept"}) },
			itemStatus: "completed", fileWritten: true, turnStatus: "completed", modelReqs: 2, commands: 1,
		},
		{
			name:       "acceptForSession",
			steps:      []scripted.Step{call, call, final},
			answer:     func(c *client, req *message) { c.answer(req, map[string]any{"decision": "acceptForSession"}) },
			itemStatus: "completed", fileWritten: true, turnStatus: "completed", modelReqs: 3, commands: 2,
		},
		{
			name:       "decline",
			steps:      []scripted.Step{call, final},
			answer:     func(c *client, req *message) { c.answer(req, map[string]any{"decision": "decline"}) },
			itemStatus: "declined", fileWritten: false, turnStatus: "completed", modelReqs: 2, commands: 1,
		},
		{
			name:       "cancel",
			steps:      []scripted.Step{call, final},
			answer:     func(c *client, req *message) { c.answer(req, map[string]any{"decision": "cancel"}) },
			itemStatus: "declined", fileWritten: false, turnStatus: "interrupted", modelReqs: 1, commands: 1,
		},
		{
			name:       "error answer",
			steps:      []scripted.Step{call, final},
			answer:     func(c *client, req *message) { c.answerError(req, -32000, "client refused") },
			itemStatus: "failed", fileWritten: false, turnStatus: "completed", modelReqs: 2, commands: 1,
		},
		{
			name:       "bogus decision",
			steps:      []scripted.Step{call, final},
			answer:     func(c *client, req *message) { c.answer(req, map[string]any{"decision": "bogus"}) },
			itemStatus: "failed", fileWritten: false, turnStatus: "completed", modelReqs: 2, commands: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			model := startModel(t, scripted.Rule{Match: "write the file", Steps: tc.steps})
			c := newClient(t, model, options{inProcess: true})
			threadID, cwd := c.startThread("untrusted")
			_, turnID := c.startTurn(threadID, "please write the file")

			req := c.waitFor("item/commandExecution/requestApproval", nil)
			if string(req.ID) != "0" {
				t.Errorf("first server request id = %s, want 0 (an integer)", req.ID)
			}
			waiting := c.waitFor("thread/status/changed", statusIs(threadID, "active", "waitingOnApproval"))
			itemStart := c.waitFor("item/started", itemOfType(turnID, "commandExecution"))
			itemID := itemStart.str("item.id")
			if !(waiting.Seq < itemStart.Seq && itemStart.Seq < req.Seq) {
				t.Errorf("order: waitingOnApproval #%d, item/started #%d, request #%d; want increasing", waiting.Seq, itemStart.Seq, req.Seq)
			}
			if req.str("threadId") != threadID || req.str("turnId") != turnID || req.str("itemId") != itemID {
				t.Errorf("request ids thread %q turn %q item %q, want %q %q %q", req.str("threadId"), req.str("turnId"), req.str("itemId"), threadID, turnID, itemID)
			}
			if v, ok := req.get("startedAtMs").(float64); !ok || v <= 0 {
				t.Errorf("request startedAtMs = %v, want Unix ms", req.get("startedAtMs"))
			}
			if !strings.Contains(req.str("command"), "approval.txt") {
				t.Errorf("request command = %q, want it to contain the command", req.str("command"))
			}
			if _, err := os.Stat(filepath.Join(cwd, "approval.txt")); err == nil {
				t.Errorf("approval.txt exists before the answer")
			}

			tc.answer(c, req)

			done := c.turnDone(turnID)
			resolved := c.waitFor("serverRequest/resolved", func(m *message) bool { return m.get("requestId") == float64(0) })
			itemDone := c.waitFor("item/completed", func(m *message) bool { return m.str("item.id") == itemID })
			if resolved.str("threadId") != threadID {
				t.Errorf("serverRequest/resolved threadId = %q, want %q", resolved.str("threadId"), threadID)
			}
			if !(req.Seq < resolved.Seq && resolved.Seq < itemDone.Seq && itemDone.Seq < done.Seq) {
				t.Errorf("order: request #%d, resolved #%d, item/completed #%d, turn/completed #%d; want increasing\n%s",
					req.Seq, resolved.Seq, itemDone.Seq, done.Seq, c.dump(req.Seq))
			}
			if tc.turnStatus != "interrupted" {
				back := c.waitAfter(resolved, "thread/status/changed", statusIs(threadID, "active"))
				if back.Seq > itemDone.Seq {
					t.Errorf("status active [] (#%d) after item/completed (#%d), want between resolved and item/completed", back.Seq, itemDone.Seq)
				}
			}
			if got := itemDone.str("item.status"); got != tc.itemStatus {
				t.Errorf("commandExecution status = %q, want %q: %s", got, tc.itemStatus, itemDone.Raw)
			}
			if got := done.str("turn.status"); got != tc.turnStatus {
				t.Errorf("turn status = %q, want %q", got, tc.turnStatus)
			}
			b, err := os.ReadFile(filepath.Join(cwd, "approval.txt"))
			if tc.fileWritten {
				if string(b) != "approved\n" {
					t.Errorf("approval.txt = %q (%v), want \"approved\\n\"", b, err)
				}
				if got := itemDone.str("item.aggregatedOutput"); !strings.Contains(got, "approved") {
					t.Errorf("aggregatedOutput = %q, want it to contain approved", got)
				}
			} else if err == nil {
				t.Errorf("approval.txt was written (%q) although the command was not approved", b)
			}
			if tc.turnStatus == "completed" {
				last := c.waitFor("item/completed", func(m *message) bool {
					return itemOfType(turnID, "agentMessage")(m) && m.str("item.text") == "All finished."
				})
				if last.Seq > done.Seq {
					t.Errorf("final agentMessage after turn/completed")
				}
			}

			// Everything the turn did is in the log; count.
			c.sync(threadID)
			if n := len(modelRequests(model)); n != tc.modelReqs {
				t.Errorf("model requests = %d, want %d", n, tc.modelReqs)
			}
			if n := len(c.find("item/commandExecution/requestApproval", nil)); n != 1 {
				t.Errorf("approval requests = %d, want 1", n)
			}
			if n := len(c.find("serverRequest/resolved", nil)); n != 1 {
				t.Errorf("serverRequest/resolved = %d, want exactly 1", n)
			}
			cmds := c.find("item/completed", itemOfType(turnID, "commandExecution"))
			if len(cmds) != tc.commands {
				t.Errorf("completed commandExecution items = %d, want %d", len(cmds), tc.commands)
			}
			for _, m := range cmds[1:] {
				if m.str("item.status") != "completed" {
					t.Errorf("repeated command (accepted for session) status = %q, want completed", m.str("item.status"))
				}
			}
		})
	}
}
