package e2e

import (
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

func TestZZDebug(t *testing.T) {
	model := startModel(t, scripted.Rule{Match: "S-timeout", Steps: []scripted.Step{{Text: "Deploying.", ToolCalls: []scripted.ToolCall{{Command: "echo deploy > deployed.txt"}}}, {Text: "Declined."}}})
	c := newFAClient(t, model, faOptions{})
	threadID, _ := c.startThread("untrusted")
	c.startFullAuto(threadID, map[string]any{"objective": "S-timeout: x", "approvals": "ask", "approvalTimeoutMs": 300, "onApprovalTimeout": "stop"})
	req := c.waitFor("item/commandExecution/requestApproval", nil)
	c.noReply[string(req.ID)] = true
	c.runEnded(threadID)
	for _, m := range c.snapshot() {
		i := strings.Index(m.Raw, "emittedAtMs")
		e := ""
		if i > 0 {
			e = m.Raw[i+13:]
		}
		t.Logf("%s %s", e, m.Raw[:min(len(m.Raw), 250)])
	}
}
