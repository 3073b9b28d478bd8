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
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apserver/apserver/controller"
	"github.com/apserver/apserver/fullauto"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/rules"
)

// responseUsage runs after each model response (turn.go): the drive counts
// the tokens and cost, and a goal reports its progress.
func (t *thread) responseUsage(tr *turn, last protocol.TokenUsageBreakdown) {
	u := fullauto.Response{Input: last.InputTokens, Cached: last.CachedInputTokens, Output: last.OutputTokens}
	if w := t.contextWindow(tr); w != nil {
		u.ContextWindow = *w
	}
	if p, ok := t.m.opts.Config.Prices[tr.modelName]; ok {
		u.Price = fullauto.Price{InputPerMTok: p.InputPerMTok, CachedInputPerMTok: p.CachedInputPerMTok, OutputPerMTok: p.OutputPerMTok}
	}
	t.drive(fullauto.ResponseDone{TurnID: tr.id, Usage: u}, nil)
}

// turnEnded runs right after turn/completed has been sent for tr: the drive
// sums the turn up and decides what comes next.
func (t *thread) turnEnded(tr *turn, status string, te *protocol.TurnError) {
	end := fullauto.TurnEnd{Summary: controller.TurnSummary{TurnID: tr.id, Status: status}}
	if t.autoDrive().Active() { // only a run decides on the turn
		end = fullauto.TurnEnd{Summary: t.summarize(tr, status, te), EndSnapshot: tr.ckpt.End, NoTools: tr.startSnap == nil}
	}
	end.Replaced = tr.replaced
	t.drive(fullauto.TurnEnded{End: end}, nil)
}

// fingerprint takes the workspace fingerprint off the thread goroutine
// (unless the machine knows it) and hands it back.
func (t *thread) fingerprint(e fullauto.Fingerprint) {
	cwd, ctx := t.settings.Cwd, t.ctx
	cache := t.auto.fpCache
	t.auto.fpCache = nil
	go func() {
		fp := e.Known
		if fp == "" {
			fp, cache = workspaceFingerprint(ctx, cwd, cache)
		}
		t.postEvent(ctx, func() {
			t.auto.fpCache = cache
			t.drive(fullauto.Fingerprinted{Token: e.Token, Fingerprint: fp}, nil)
		})
	}()
}

// askDecisionModel asks the decision model about a finished turn and
// hands the answer back (nil when it failed: the policy decides).
func (t *thread) askDecisionModel(e fullauto.AskModel) {
	dm := t.m.decisionModel()
	ctx := t.ctx
	go func() {
		var ans *controller.ModelAnswer
		if dm != nil {
			a, err := dm.decide(ctx, e.Input)
			if err != nil {
				t.m.log.Warn("decision model failed; the policy decides", "thread", t.id, "err", err)
			} else {
				ans = &a
			}
		}
		t.postEvent(ctx, func() { t.drive(fullauto.ModelAnswered{Token: e.Token, Answer: ans}, nil) })
	}()
}

// summarize builds the controller's view of a finished turn from its items
// and history; the machine adds what it counted, and the workspace
// fingerprint is taken off the thread goroutine.
func (t *thread) summarize(tr *turn, status string, te *protocol.TurnError) controller.TurnSummary {
	s := controller.TurnSummary{
		TurnID: tr.id, Status: status,
		Steps: []controller.Step{}, Plan: []controller.PlanStep{},
		ElapsedMs: t.m.clock.Now().Sub(tr.started).Milliseconds(),
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
			ran := v.ExitCode != nil && v.Status != protocol.ItemDeclined
			if isCheck(t.commandRules(), t.rulesContext(), v.Command) && ran {
				s.ChecksPassed = ptr(*v.ExitCode == 0)
			}
			// A check that did not run (declined, refused, its approval
			// failed) is missing evidence, until it runs later in the turn.
			script := scriptOf(v.Command)
			switch {
			case ran:
				s.ChecksNotRun = slices.DeleteFunc(s.ChecksNotRun, func(c string) bool { return c == script })
			case v.Status != protocol.ItemInProgress && t.commandRules().Check(v.Command, t.rulesContext()) != rules.NoCheck:
				if !slices.Contains(s.ChecksNotRun, script) {
					s.ChecksNotRun = append(s.ChecksNotRun, script)
				}
			}
		}
	}
	if hasFileChanges(tr.items) {
		s.DiffFingerprint = hex.EncodeToString(diff.Sum(nil))[:16]
	}
	if tr.lastAgent != nil {
		s.AgentMessage = tr.lastAgent.Text
	}
	if tr.histStart <= len(t.history) {
		s.Steps = steps(t.history[tr.histStart:], items)
	}
	s.EmptyReply = status == controller.StatusCompleted && strings.TrimSpace(s.AgentMessage) == "" && len(s.Steps) == 0
	for _, p := range tr.plan {
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
