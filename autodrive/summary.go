package autodrive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/apserver/apserver/agenttools"
	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tooloutput"
	"github.com/apserver/apserver/tools/rules"
)

// FinishedTurn is what Summarize reads of a finished turn.
type FinishedTurn struct {
	ID, Status string
	// Error is the turn's error, if it failed.
	Error *protocol.TurnError
	// ElapsedMs is how long the turn ran.
	ElapsedMs int64
	// Items are the turn's items, in order.
	Items []protocol.ThreadItem
	// LastAgent is the text of the turn's last agent message ("" for none).
	LastAgent string
	// History is the model history the turn added (nil when unknown).
	History []model.Entry
	// Plan is the turn's latest plan.
	Plan []protocol.TurnPlanStep
	// Rules and RulesContext say which commands are checks.
	Rules        *rules.Set
	RulesContext rules.Context
}

// Summarize builds the controller's view of a finished turn from its items
// and history; the machine adds what it counted, and the workspace
// fingerprint is taken off the thread goroutine.
func Summarize(tr FinishedTurn) controller.TurnSummary {
	status := tr.Status
	s := controller.TurnSummary{
		TurnID: tr.ID, Status: status,
		Steps: []controller.Step{}, Plan: []controller.PlanStep{},
		ElapsedMs: tr.ElapsedMs,
	}
	if tr.Error != nil {
		s.Error = turnError(tr.Error)
	}
	items := map[string]protocol.ThreadItem{}
	diff := sha256.New()
	for _, it := range tr.Items {
		items[it.ItemID()] = it
		switch v := it.(type) {
		case protocol.ContextCompactionItem:
			s.Compactions++
		case protocol.FileChangeItem:
			for _, c := range v.Changes {
				io.WriteString(diff, c.Path+"\x00"+c.Diff+"\x00")
			}
		case protocol.CommandExecutionItem:
			ran := v.ExitCode != nil && v.Status != protocol.ItemDeclined
			if isCheck(tr.Rules, tr.RulesContext, v.Command) && ran {
				passed := *v.ExitCode == 0
				s.ChecksPassed = &passed
			}
			// A check that did not run (declined, refused, its approval
			// failed) is missing evidence, until it runs later in the turn.
			script := scriptOf(v.Command)
			switch {
			case ran:
				s.ChecksNotRun = slices.DeleteFunc(s.ChecksNotRun, func(c string) bool { return c == script })
			case v.Status != protocol.ItemInProgress && tr.Rules.Check(v.Command, tr.RulesContext) != rules.NoCheck:
				if !slices.Contains(s.ChecksNotRun, script) {
					s.ChecksNotRun = append(s.ChecksNotRun, script)
				}
			}
		}
	}
	if hasFileChanges(tr.Items) {
		s.DiffFingerprint = hex.EncodeToString(diff.Sum(nil))[:16]
	}
	s.AgentMessage = tr.LastAgent
	s.Steps = steps(tr.History, items)
	s.EmptyReply = status == controller.StatusCompleted && strings.TrimSpace(s.AgentMessage) == "" && len(s.Steps) == 0
	for _, p := range tr.Plan {
		s.Plan = append(s.Plan, controller.PlanStep{Step: p.Step, Status: p.Status})
	}
	return s
}

func hasFileChanges(items []protocol.ThreadItem) bool {
	for _, it := range items {
		if _, ok := it.(protocol.FileChangeItem); ok {
			return true
		}
	}
	return false
}

// turnError maps the wire error to the controller's, deciding whether
// another attempt may succeed: server trouble and broken connections are
// recoverable; a bad request, a context overflow or a refused key are not.
func turnError(te *protocol.TurnError) *controller.TurnError {
	kind := ""
	var s string
	var obj map[string]json.RawMessage
	switch {
	case json.Unmarshal(te.CodexErrorInfo, &s) == nil:
		kind = s
	case json.Unmarshal(te.CodexErrorInfo, &obj) == nil:
		for k := range obj {
			kind = k
		}
	}
	rec := false
	switch kind {
	case "internalServerError", "responseTooManyFailedAttempts", "httpConnectionFailed", "responseStreamDisconnected", "serverOverloaded":
		rec = true
	}
	return &controller.TurnError{Message: te.Message, Kind: kind, Recoverable: rec}
}

// scriptOf is the script of a command item's command line (`/bin/bash -c
// 'make test'` gives make test), or the line itself.
func scriptOf(line string) string {
	i := strings.Index(line, " -c '")
	if i < 0 || strings.Contains(line[:i], " ") || !strings.HasSuffix(line, "'") || len(line) < i+6 {
		return line
	}
	return strings.ReplaceAll(line[i+5:len(line)-1], `'\''`, "'")
}

// isCheck reports whether cmd, a command item's command line
// (`/bin/bash -c '...'`), runs a check of rs (a test, build or linter)
// whose outcome its exit status is. A check whose status the command hides,
// such as `make test | tail` without pipefail, is no evidence either way.
func isCheck(rs *rules.Set, ctx rules.Context, cmd string) bool {
	return rs.Check(cmd, ctx) == rules.CheckConclusive
}

// steps pairs the tool calls and outputs of a turn's history into the
// controller's normalized steps. items (by id) say whether a command or a
// file change failed.
func steps(hist []model.Entry, items map[string]protocol.ThreadItem) []controller.Step {
	out := []controller.Step{}
	calls := map[string]int{} // call id → index in out
	for _, e := range hist {
		switch e.Kind {
		case model.EntryToolCall:
			calls[e.CallID] = len(out)
			out = append(out, controller.Step{Tool: e.Name, Action: normalizeAction(e.Name, e.Arguments)})
		case model.EntryToolOutput:
			i, ok := calls[e.CallID]
			if !ok {
				continue
			}
			st := &out[i]
			st.Result = normalizeResult(e.Output)
			switch it := items[e.CallID].(type) {
			case protocol.CommandExecutionItem:
				st.Error = it.Status != protocol.ItemCompleted
			case protocol.FileChangeItem:
				st.Error = it.Status != protocol.ItemCompleted
			default:
				st.Error = strings.HasPrefix(e.Output, st.Tool+": ")
			}
		}
	}
	return out
}

// normalizeAction renders a tool call: the command of a shell call, the
// canonical JSON of other arguments.
func normalizeAction(name, args string) string {
	var v map[string]any
	if json.Unmarshal([]byte(args), &v) != nil {
		return name + ": " + strings.Join(strings.Fields(args), " ")
	}
	if agenttools.ExecAliases[name] {
		for _, k := range []string{"cmd", "command"} {
			if s, ok := v[k].(string); ok {
				return name + ": " + s
			}
		}
	}
	b, _ := json.Marshal(v) // map keys come out sorted
	return name + ": " + string(b)
}

var (
	maskTime     = regexp.MustCompile(`\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?|\b\d\d:\d\d:\d\d(\.\d+)?\b`)
	maskDuration = regexp.MustCompile(`\b\d+(\.\d+)?\s?(ns|µs|us|ms|s|sec|secs|seconds?|m|min|minutes?|h)\b`)
	maskTemp     = regexp.MustCompile(`(/tmp|/var/folders|/private/var)/[^\s'":]+`)
	maskHex      = regexp.MustCompile(`\b(0x)?[0-9a-fA-F]{8,}\b|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	maskPid      = regexp.MustCompile(`\b(pid|PID) ?\d+\b`)
)

// resultDigestBytes caps the part of a result the digest keeps verbatim.
const resultDigestBytes = 512

// normalizeResult masks what changes between identical runs (times,
// durations, temp paths, hex ids, pids) and digests the rest: the head of
// the text, plus a hash of all of it.
func normalizeResult(out string) string {
	s := maskTime.ReplaceAllString(out, "<time>")
	s = maskTemp.ReplaceAllString(s, "<tmp>")
	s = maskHex.ReplaceAllString(s, "<id>")
	s = maskDuration.ReplaceAllString(s, "<dur>")
	s = maskPid.ReplaceAllString(s, "pid <n>")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= resultDigestBytes {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return tooloutput.CutBytes(s, resultDigestBytes) + "… #" + hex.EncodeToString(sum[:8])
}
