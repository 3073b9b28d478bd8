package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/rules"
)

// compactionThreshold: a model response whose input used this share of the
// model's context window is where Codex compacts the context. apserver does
// not compact yet; such a response counts as a compaction for the
// controller's thrash detection (docs/fullauto.md).
const compactionThreshold = 0.9

// responseUsage runs after each model response (turn.go): the run counts
// the tokens and cost, and a goal reports its progress.
func (t *thread) responseUsage(tr *turn, last protocol.TokenUsageBreakdown) {
	a := &t.auto
	if a.cur == nil || a.cur.id != tr.id {
		return
	}
	a.cur.usage.Input += last.InputTokens
	a.cur.usage.Cached += last.CachedInputTokens
	a.cur.usage.Output += last.OutputTokens
	if w := t.contextWindow(tr.modelName); w != nil && *w > 0 && float64(last.InputTokens) >= compactionThreshold*float64(*w) {
		a.cur.pressure++
	}
	r := a.run
	if !r.active() {
		return
	}
	r.Spent.Tokens += max(0, last.InputTokens-last.CachedInputTokens) + last.OutputTokens
	r.Spent.CostUSD += t.cost(tr.modelName, last)
	t.goalChanged(&tr.id)
}

// cost prices one response from the config's price table.
func (t *thread) cost(modelName string, u protocol.TokenUsageBreakdown) float64 {
	p, ok := t.m.opts.Config.Prices[modelName]
	if !ok {
		return 0
	}
	fresh := max(0, u.InputTokens-u.CachedInputTokens)
	return (float64(fresh)*p.InputPerMTok + float64(u.CachedInputTokens)*p.CachedInputPerMTok + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// runTurnEnded runs after turn/completed: the run sums the turn up and
// decides what comes next.
func (t *thread) runTurnEnded(tr *turn, status string, te *protocol.TurnError) {
	a := &t.auto
	cur := a.cur
	if cur == nil || cur.id != tr.id {
		cur = &faTurn{id: tr.id, kind: controller.KindNormal, histStart: len(t.history)}
	}
	a.cur = nil
	for id, p := range a.pending {
		if p.turnID == tr.id {
			t.dropPending(id)
			if p.kind == "question" {
				cur.pendingQuestions++
			} else {
				cur.pendingApprovals++
			}
		}
	}
	r := t.ensureRun()
	if !r.active() {
		return
	}
	t.accrue()
	sum := t.summarize(tr, cur, status, te)
	r.Spent.Turns++
	retries := 0
	if sum.Status == controller.StatusFailed && sum.Error != nil && sum.Error.Recoverable {
		retries = r.Retries + 1
	}
	in := controller.Input{
		Objective:    r.Objective,
		Config:       r.Config,
		Spent:        r.Spent,
		RunElapsedMs: nowMs() - r.StartedAtMs,
		Turn:         sum,
		History:      append([]controller.TurnSummary{}, r.History...),
		Recent:       append([]controller.Decision{}, r.Recent...),
		Retries:      retries,
	}
	if r.State == protocol.FullAutoWaiting && len(a.pending) == 0 {
		t.setRunState(protocol.FullAutoRunning, "", controller.StopNone)
	}
	epoch := a.epoch
	cwd := t.settings.Cwd
	ctx := t.ctx
	cache := a.fpCache
	a.fpCache = nil
	// The tree is usually known already: a turn that ran tools ended with a
	// checkpoint snapshot, whose id names the tree's content, and a turn
	// that ran none left the tree as the previous turn did. Only otherwise
	// (no git, an interrupted turn) is the workspace walked and hashed.
	known := ""
	switch {
	case tr.ckpt.End != "":
		known = "snapshot:" + tr.ckpt.End
	case tr.startSnap == nil && len(r.History) > 0:
		known = r.History[len(r.History)-1].WorkspaceFingerprint
	}
	// The walk (and the decision model) take time: off the thread
	// goroutine, then back.
	go func() {
		fp := known
		if fp == "" {
			fp, cache = workspaceFingerprint(ctx, cwd, cache)
		}
		in.Turn.WorkspaceFingerprint = fp
		t.postEvent(ctx, func() {
			t.auto.fpCache = cache
			t.decide(in, epoch)
		})
	}()
}

// decide asks the controller (and the decision model when it has a say)
// and carries the decision out.
func (t *thread) decide(in controller.Input, epoch int) {
	r := t.auto.run
	if r == nil || t.auto.epoch != epoch {
		return // stopped, paused or replaced meanwhile
	}
	if dm := t.m.decisionModel(); dm != nil && modelHasSay(in) {
		ctx := t.ctx
		go func() {
			ans, err := dm.decide(ctx, in)
			t.postEvent(ctx, func() {
				if t.auto.run != r || t.auto.epoch != epoch {
					return
				}
				if err != nil {
					t.m.log.Warn("decision model failed; the policy decides", "thread", t.id, "err", err)
				} else {
					in.Model = &ans
				}
				t.execute(in, controller.Decide(in))
			})
		}()
		return
	}
	t.execute(in, controller.Decide(in))
}

// modelHasSay: the hard rules leave the decision to the model's answer.
func modelHasSay(in controller.Input) bool {
	in.Model = &controller.ModelAnswer{Action: controller.ActPause}
	return controller.Decide(in).Source == receiptSourceModel
}

// execute records the decision and carries it out.
func (t *thread) execute(in controller.Input, d controller.Decision) {
	r := t.auto.run
	rec := controller.Receipt{
		ID: newID(), ThreadID: t.id, TurnID: in.Turn.TurnID, Input: in, Output: d,
		PolicyHash: controller.PolicyHash(in.Config), CreatedAtMs: nowMs(), Executed: true,
	}
	action, cond, reason := d.Action, d.StopCondition, d.Reason
	switch {
	case d.Action == controller.ActStop && d.StopCondition == controller.StopApprovalTimeout && r.OnTimeout != protocol.OnTimeoutStop:
		action = controller.ActPause
		rec.Executed, rec.Override = false, overrideTimeoutMode
	case r.Goal && d.Rule == ruleInterrupted:
		// Codex: an interrupted goal turn leaves the goal active, with no
		// continuation until another turn completes.
		action = controller.ActContinue
		rec.Executed, rec.Override = false, overrideGoalInterrupted
	case t.turn != nil && (d.Action == controller.ActContinue || d.Action == controller.ActReview):
		// Someone started a turn meanwhile: it is the next turn.
		rec.Executed, rec.Override = false, overrideTurnStarted
	}
	if !in.UserStop || in.Turn.TurnID != lastTurnID(r.History) {
		r.History = appendCapped(r.History, in.Turn, runHistoryTurns)
	}
	r.Recent = appendCapped(r.Recent, d, runRecentDecisions)
	r.Retries = in.Retries
	rec.Seq = t.storeReceipt(store.ReceiptDecision, rec.ID, rec.TurnID, rec.Input, rec.Output, rec.PolicyHash, rec.Executed, rec.Override)
	w := wireReceipt(rec)
	r.Last = &w
	t.notifyRun(protocol.NotifyFullAutoDecision, protocol.FullAutoDecisionNotification{ThreadID: t.id, TurnID: rec.TurnID, Receipt: w})
	switch action {
	case controller.ActContinue, controller.ActReview:
		t.saveRun()
		t.goalChanged(nil)
		if !rec.Executed {
			return
		}
		next := autoTurnInput{kind: controller.KindNormal, hidden: d.NextInput}
		switch {
		case action == controller.ActReview:
			next.kind = controller.KindReview
		case d.WrapUp:
			next.kind = controller.KindWrapUp
		case d.NextInput == "":
			// A retry: the same turn again, with no new input.
			next.kind = r.LastKind
		}
		delay := time.Duration(0)
		if in.Turn.Status == controller.StatusFailed {
			delay = backoff(t.m.opts.Config.FullAuto.ErrorBackoff, in.Retries)
		}
		t.startRunTurnAfter(next, delay)
	case controller.ActPause:
		t.setRunState(protocol.FullAutoPaused, reason, cond)
	default:
		t.setRunState(protocol.FullAutoStopped, reason, cond)
	}
}

// startRunTurnAfter starts the next turn after delay (a cooldown after a
// failure), unless the run changed meanwhile.
func (t *thread) startRunTurnAfter(next autoTurnInput, delay time.Duration) {
	if delay <= 0 {
		t.startRunTurn(next, "")
		return
	}
	epoch, ctx := t.auto.epoch, t.ctx
	time.AfterFunc(delay, func() {
		t.postEvent(ctx, func() {
			if t.auto.epoch == epoch {
				t.startRunTurn(next, "")
			}
		})
	})
}

func lastTurnID(h []controller.TurnSummary) string {
	if len(h) == 0 {
		return ""
	}
	return h[len(h)-1].TurnID
}

func appendCapped[T any](s []T, v T, n int) []T {
	s = append(s, v)
	if len(s) > n {
		s = append(s[:0:0], s[len(s)-n:]...)
	}
	return s
}

// storeReceipt stores a receipt and returns its sequence number.
func (t *thread) storeReceipt(kind, id, turnID string, in, out any, hash string, executed bool, override string) int {
	r := t.auto.run
	if !t.persistent() {
		r.Seq++
		return r.Seq
	}
	ib, err := json.Marshal(in)
	if err != nil {
		t.m.log.Error("bug: receipt input does not encode", "thread", t.id, "err", err)
		return 0
	}
	ob, _ := json.Marshal(out)
	db, err := t.m.store()
	if err == nil {
		var sr store.Receipt
		sr, err = db.AppendReceipt(context.WithoutCancel(t.ctx), store.Receipt{ThreadID: t.id, ID: id, Kind: kind, TurnID: turnID,
			Input: ib, Output: ob, PolicyHash: hash, Executed: executed, Override: override})
		if err == nil {
			return sr.Seq
		}
	}
	t.m.log.Error("storing receipt", "thread", t.id, "err", err)
	return 0
}

func wireReceipt(r controller.Receipt) protocol.FullAutoReceipt {
	d := r.Output
	w := protocol.FullAutoReceipt{
		ID: r.ID, ThreadID: r.ThreadID, TurnID: r.TurnID, Seq: r.Seq, Action: string(d.Action), Reason: d.Reason,
		Confidence: d.Confidence, Rule: d.Rule, Source: d.Source, Executed: r.Executed,
	}
	if d.StopCondition != "" {
		w.StopCondition = ptr(string(d.StopCondition))
	}
	if d.NextInput != "" {
		w.NextInput = ptr(d.NextInput)
	}
	return w
}

// summarize builds the controller's view of a finished turn (all but the
// workspace fingerprint, which is taken off the thread goroutine).
func (t *thread) summarize(tr *turn, cur *faTurn, status string, te *protocol.TurnError) controller.TurnSummary {
	s := controller.TurnSummary{
		TurnID: tr.id, Kind: cur.kind, Status: status,
		Steps: []controller.Step{}, Plan: []controller.PlanStep{},
		Usage:            cur.usage,
		Compactions:      cur.pressure,
		PendingApprovals: cur.pendingApprovals,
		PendingQuestions: cur.pendingQuestions,
		ApprovalTimeouts: cur.timeouts,
		ElapsedMs:        time.Since(tr.started).Milliseconds(),
	}
	if te != nil {
		s.Error = turnError(te)
	}
	items := map[string]protocol.ThreadItem{}
	diff := sha256.New()
	for _, it := range tr.items {
		items[it.ItemID()] = it
		switch v := it.(type) {
		case protocol.ContextCompactionItem:
			s.Compactions++
		case protocol.FileChangeItem:
			for _, c := range v.Changes {
				io.WriteString(diff, c.Path+"\x00"+c.Diff+"\x00")
			}
		case protocol.CommandExecutionItem:
			if isCheck(t.commandRules(), t.rulesContext(), v.Command) && v.ExitCode != nil && v.Status != protocol.ItemDeclined {
				s.ChecksPassed = ptr(*v.ExitCode == 0)
			}
		}
	}
	if hasFileChanges(tr.items) {
		s.DiffFingerprint = hex.EncodeToString(diff.Sum(nil))[:16]
	}
	if tr.lastAgent != nil {
		s.AgentMessage = tr.lastAgent.Text
	}
	if cur.histStart <= len(t.history) {
		s.Steps = steps(t.history[cur.histStart:], items)
	}
	s.EmptyReply = status == controller.StatusCompleted && strings.TrimSpace(s.AgentMessage) == "" && len(s.Steps) == 0
	for _, p := range tr.plan {
		s.Plan = append(s.Plan, controller.PlanStep{Step: p.Step, Status: p.Status})
	}
	if cur.kind == controller.KindReview {
		s.ReviewApproved = controller.ReviewVerdict(s.AgentMessage)
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
	if execAliases[name] {
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
	return truncate(s, resultDigestBytes) + "… #" + hex.EncodeToString(sum[:8])
}

// Workspace fingerprint limits: the walk stops after fingerprintFiles
// files; files up to fingerprintFileBytes are hashed by content, larger
// ones by size and modification time.
const (
	fingerprintFiles     = 20000
	fingerprintFileBytes = 1 << 20
)

var skipDirs = map[string]bool{".git": true, "node_modules": true, ".hg": true, ".svn": true, "__pycache__": true, ".venv": true, "target": true}

// fileSig is what the fingerprint knows of one file.
type fileSig struct {
	size int64
	mod  time.Time
	sum  [sha256.Size]byte
}

// fpCache remembers file hashes between fingerprints, so that a file is
// read again only when its size or modification time changed. It belongs
// to whichever goroutine holds it (the thread hands it to the one
// fingerprint walk it runs at a time).
type fpCache map[string]fileSig

// workspaceFingerprint hashes the workspace tree: every path with its
// content. The same tree gives the same fingerprint. It returns the cache
// updated for the next call.
func workspaceFingerprint(ctx context.Context, root string, cache fpCache) (string, fpCache) {
	var paths []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if len(paths) >= fingerprintFiles {
			return filepath.SkipAll
		}
		paths = append(paths, p)
		return nil
	})
	sort.Strings(paths)
	next := make(fpCache, len(paths))
	h := sha256.New()
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		io.WriteString(h, rel+"\x00")
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		sig := fileSig{size: fi.Size(), mod: fi.ModTime()}
		switch old, ok := cache[p]; {
		case ok && old.size == sig.size && old.mod.Equal(sig.mod):
			sig.sum = old.sum
		case !fi.Mode().IsRegular() || fi.Size() > fingerprintFileBytes:
			sig.sum = sha256.Sum256([]byte(strconv.FormatInt(sig.size, 10) + "\x00" + sig.mod.UTC().String()))
		default:
			fh := sha256.New()
			if f, err := os.Open(p); err == nil {
				io.Copy(fh, f)
				f.Close()
			}
			copy(sig.sum[:], fh.Sum(nil))
		}
		next[p] = sig
		h.Write(sig.sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], next
}
