package compaction

import (
	"fmt"
	"strings"

	"github.com/apserver/apserver/protocol"
)

const (
	// KeptUserTokens bounds the newest user messages kept verbatim (Codex
	// keeps 20,000 tokens of them).
	KeptUserTokens = 20000
	// MaxAutoStreak: this many automatic compactions in a row that leave
	// the prompt above the trigger end the turn with contextWindowExceeded.
	MaxAutoStreak = 3
	// MaxOverflowRetries bounds the retries of a compaction request the
	// model refused as too long (each drops the oldest history entry).
	MaxOverflowRetries = 16
	// EntryOverhead approximates the bytes of JSON around one history
	// entry in a request.
	EntryOverhead = 48
)

// Warning is the warning Codex sends after every compaction.
const Warning = "Heads up: Long threads and multiple compactions can cause the model to be less accurate. Start a new thread when possible to keep threads small and targeted."

// Markers of the history entries a compaction writes, so a later
// compaction recognises them (they are replaced, not kept as user input).
const (
	SummaryHeader = "[Context compacted] Earlier parts of this conversation were replaced by the handoff summary below. Work marked [completed] is done: do not do it again."
	PinnedHeader  = "[Kept verbatim across compactions]"
	EarlierPrefix = "[Earlier user message, already handled; do not act on it again unless the latest message asks for it]\n"
)

// PlanHeading starts the plan section of the pinned entry.
const PlanHeading = "\n\n## Current plan"

// Instructions are the summary request's instructions.
const Instructions = "You write handoff summaries of a coding agent's session. Another agent continues the work from your summary alone. Be exact and brief; never invent progress."

// Prompt is the request to summarize, after the transcript. Our own
// wording; the structure follows what a successor needs to go on without
// re-doing or forgetting anything.
const Prompt = `Compaction request: the transcript above will be replaced by your handoff summary. The system instructions, AGENTS.md, the objective, the current plan and the latest user message are kept verbatim for your successor, so do not restate them in full.

Write the summary in Markdown with exactly these sections:

## Task
What the user asked for, with every identifier copied exactly (issue and PR numbers, ids, branch names, file paths, URLs).

## Done
Every instruction and step that is finished, one per line, each starting with "[completed]". Finished work must never be carried out again.

## Pending
What is still to do, in order. Quote the next steps verbatim from the user or the plan where they exist.

## Files
Each file read, created or changed, with one line on what changed.

## Tests
Each test or check run: the command and its latest result (passed, or how it failed).

## Decisions
Choices made and why; approaches tried and abandoned.

Reply with the summary only. Do not call tools.`

// Kind is what a history entry is.
type Kind int

const (
	Other Kind = iota
	User
	Assistant
	ToolCall
	ToolOutput
)

func (k Kind) String() string {
	switch k {
	case User:
		return "user"
	case Assistant:
		return "assistant"
	case ToolCall:
		return "toolCall"
	case ToolOutput:
		return "toolOutput"
	}
	return "other"
}

// Entry is what compaction reads of a history entry.
type Entry struct {
	Kind      Kind
	Text      string // User, Assistant
	CallID    string // ToolCall, ToolOutput
	Name      string // ToolCall
	Arguments string // ToolCall
	Output    string // ToolOutput
}

// Bytes approximates the entry's bytes in a request.
func (e Entry) Bytes() int {
	return len(e.Text) + len(e.CallID) + len(e.Name) + len(e.Arguments) + len(e.Output) + EntryOverhead
}

// Written reports whether e is a summary or pinned entry a compaction wrote.
func (e Entry) Written() bool {
	return e.Kind == User && (strings.HasPrefix(e.Text, SummaryHeader) || strings.HasPrefix(e.Text, PinnedHeader))
}

// Pinned reports whether e is the pinned entry a compaction wrote.
func (e Entry) Pinned() bool { return e.Kind == User && strings.HasPrefix(e.Text, PinnedHeader) }

// Summary is the summary of e when e is a compaction's summary entry.
func (e Entry) Summary() (string, bool) {
	if e.Kind != User || !strings.HasPrefix(e.Text, SummaryHeader) {
		return "", false
	}
	return strings.TrimSpace(strings.TrimPrefix(e.Text, SummaryHeader)), true
}

// EntriesBytes is the sum of the entries' Bytes.
func EntriesBytes(es []Entry) int {
	n := 0
	for _, e := range es {
		n += e.Bytes()
	}
	return n
}

// ApproxTokens estimates the tokens of n bytes of request (4 bytes a token).
func ApproxTokens(n int) int64 { return int64(n+3) / 4 }

// Trigger is the prompt size at which a request is compacted first: 90%
// of the window, or autoLimit (model_auto_compact_token_limit) when that
// is lower or the window unknown; 0 never.
func Trigger(window, autoLimit int64) int64 {
	limit := window * 9 / 10
	if autoLimit > 0 && (limit == 0 || autoLimit < limit) {
		limit = autoLimit
	}
	return limit
}

// Due reports whether a request of tokens compacts first.
func Due(trigger, tokens int64) bool { return trigger > 0 && tokens >= trigger }

// Usage is the last response's reported tokens (input and output) and the
// length of the history then.
type Usage struct {
	Valid   bool
	Tokens  int64
	HistLen int
}

// Estimate is what the next request's size is estimated from.
type Estimate struct {
	// FixedBytes are the instructions' and the tools' bytes.
	FixedBytes int
	// HistoryBytes and HistoryLen are the history's bytes and entries.
	HistoryBytes int
	HistoryLen   int
	// Usage is the last response's, and SinceBytes the bytes of the
	// history entries after Usage.HistLen.
	Usage      Usage
	SinceBytes int
}

// Tokens estimates the tokens of the next request: the last response's
// reported tokens plus what the history gained since, or, when no response
// was seen since the history was last rebuilt, an estimate of the whole
// request. The larger of the two counts.
func (e Estimate) Tokens() int64 {
	est := ApproxTokens(e.FixedBytes + e.HistoryBytes)
	if u := e.Usage; u.Valid && u.HistLen <= e.HistoryLen {
		if n := u.Tokens + ApproxTokens(e.SinceBytes); n > est {
			return n
		}
	}
	return est
}

// MessageTooBig says why a user message of msgBytes cannot fit the window
// of model (window tokens; learned: from a provider's refusal, not the
// configuration) with fixedBytes of instructions and tools: with them it
// reaches 95% of the window, where a compaction, which keeps the latest
// message verbatim, would end the turn anyway. fate says what became of
// the message. "" when it fits or the window is unknown.
func MessageTooBig(model string, window int64, learned bool, msgBytes, fixedBytes int, fate string) string {
	if window <= 0 {
		return ""
	}
	msg := ApproxTokens(msgBytes)
	fixed := ApproxTokens(fixedBytes)
	if msg+fixed < window*95/100 {
		return ""
	}
	size := fmt.Sprintf("%d tokens", window)
	if learned {
		size = fmt.Sprintf("at most %d tokens (learned from a refusal)", window)
	}
	if msg >= window {
		return fmt.Sprintf("the message alone is larger than the model's context window: about %d tokens (%d bytes), and %s's window is %s; %s", msg, msgBytes, model, size, fate)
	}
	return fmt.Sprintf("the message does not fit the model's context window: about %d tokens (%d bytes), with %d tokens of instructions and tools, and %s's window is %s; %s", msg, msgBytes, fixed, model, size, fate)
}

// Summarizable is the history the compaction model reads: everything but
// the pinned entries (they are re-injected as they are).
func Summarizable(h []Entry) []Entry {
	out := make([]Entry, 0, len(h))
	for _, e := range h {
		if e.Pinned() {
			continue
		}
		out = append(out, e)
	}
	return out
}

// FitSummaryInput drops the oldest entries (keeping at least one) until
// the summary request fits 95% of window (0: unknown, nothing dropped).
func FitSummaryInput(entries []Entry, window int64) []Entry {
	if window <= 0 {
		return entries
	}
	budget := window*95/100 - ApproxTokens(len(Instructions)+len(Prompt))
	for len(entries) > 1 && ApproxTokens(transcriptBytes(entries)) > budget {
		entries = entries[1:]
	}
	return entries
}

// SummaryRequest is the text of the summary request's one user message:
// the transcript of entries, then Prompt.
func SummaryRequest(entries []Entry) string { return Transcript(entries) + "\n\n" + Prompt }

// Transcript renders entries as plain text for the compaction model: no
// tool-call pairing to keep valid, and any provider accepts it.
func Transcript(es []Entry) string {
	var b strings.Builder
	b.Grow(transcriptBytes(es))
	b.WriteString("<transcript>\n")
	for _, e := range es {
		switch e.Kind {
		case User:
			b.WriteString("\n[user]\n")
			b.WriteString(e.Text)
		case Assistant:
			b.WriteString("\n[assistant]\n")
			b.WriteString(e.Text)
		case ToolCall:
			fmt.Fprintf(&b, "\n[tool call %s %s]\n", e.Name, e.CallID)
			b.WriteString(e.Arguments)
		case ToolOutput:
			fmt.Fprintf(&b, "\n[tool output %s]\n", e.CallID)
			b.WriteString(e.Output)
		}
		b.WriteByte('\n')
	}
	b.WriteString("</transcript>")
	return b.String()
}

func transcriptBytes(es []Entry) int { return EntriesBytes(es) + 32 }

// Pinned is the entry text no summary may lose: the full-auto objective
// and the plan, verbatim; with no plan, the plan section of lastPinned
// (the text of the pinned entry the last compaction wrote). "" when there
// is nothing to pin.
func Pinned(objective string, plan []protocol.TurnPlanStep, lastPinned string) string {
	var b strings.Builder
	if objective != "" {
		fmt.Fprintf(&b, "\n\n## Objective (full auto)\n%s", objective)
	}
	if len(plan) > 0 {
		b.WriteString(PlanHeading)
		for _, s := range plan {
			fmt.Fprintf(&b, "\n- [%s] %s", s.Status, s.Step)
		}
	} else if i := strings.Index(lastPinned, PlanHeading); i >= 0 {
		b.WriteString(lastPinned[i:])
	}
	if b.Len() == 0 {
		return ""
	}
	return PinnedHeader + b.String()
}

// PlanSection is the plan section of a pinned text, "" when none.
func PlanSection(pinned string) string {
	if i := strings.Index(pinned, PlanHeading); i >= 0 {
		return pinned[i:]
	}
	return ""
}

// KeptBudget is the tokens the newest user messages may keep:
// KeptUserTokens, or, with a small window, half what one tool output may
// take (outputBudget bytes; 0 unknown), or a long run's messages alone
// would fill the window after a while.
func KeptBudget(outputBudget int) int64 {
	budget := int64(KeptUserTokens)
	if b := ApproxTokens(outputBudget) / 2; b > 0 && b < budget {
		budget = b
	}
	return budget
}

// Step is where the model's step in flight starts in the history, mid-turn.
type Step struct {
	InStep bool // the turn is between a response's tool calls and the next request
	Start  int  // the index of the step's first entry
}

// Kept is a user message kept verbatim: the history index of its entry,
// and its text in the new history.
type Kept struct {
	Index int
	Text  string
}

// Plan is the history that replaces a compacted one, in order: a user
// entry with Summary, a user entry with Pinned unless "", the entries of
// Users (each a copy of its history entry with Text replaced), then the
// history from Tail on (the step in flight) as it is.
type Plan struct {
	Summary string
	Pinned  string
	Users   []Kept
	Tail    int
}

// Inflight is how many entries of the new history are the step in flight.
func (p Plan) Inflight(histLen int) int { return histLen - p.Tail }

// Replace plans what replaces history h: the summary, the pinned text,
// the newest user messages up to budget tokens (the last verbatim, the
// earlier marked as handled; at least one), and the step in flight (the
// last response's tool calls and outputs) unless steered input followed
// them, so that the model goes on from where it was.
func Replace(h []Entry, step Step, summary, pinned string, budget int64) Plan {
	p := Plan{Summary: SummaryHeader + "\n\n" + summary, Pinned: pinned, Tail: len(h)}
	if step.InStep && step.Start <= len(h) {
		p.Tail = step.Start
		for _, e := range h[step.Start:] {
			if e.Kind != ToolCall && e.Kind != ToolOutput {
				p.Tail = len(h)
				break
			}
		}
	}
	var users []Kept // newest first
	for i := p.Tail - 1; i >= 0; i-- {
		e := h[i]
		if e.Kind != User || e.Written() {
			continue
		}
		n := ApproxTokens(len(e.Text))
		if len(users) > 0 && n > budget {
			break
		}
		budget -= n
		users = append(users, Kept{Index: i, Text: e.Text})
	}
	for i := len(users) - 1; i >= 0; i-- {
		k := users[i]
		if i > 0 && !strings.HasPrefix(k.Text, EarlierPrefix) {
			k.Text = EarlierPrefix + k.Text
		}
		p.Users = append(p.Users, k)
	}
	return p
}

// Verdict is what becomes of a compaction once its summary is in.
type Verdict int

const (
	// Keep: the new history replaces the old; the turn goes on.
	Keep Verdict = iota
	// NoGain: a client's compaction that would not shrink the prompt:
	// nothing is replaced, the turn ends normally with Message as a
	// warning.
	NoGain
	// Fail: the turn fails with Message (contextWindowExceeded). Replaced
	// says whether the new history is installed first (it is when it
	// shrank the prompt, but not enough).
	Fail
)

func (v Verdict) String() string {
	switch v {
	case Keep:
		return "keep"
	case NoGain:
		return "noGain"
	case Fail:
		return "fail"
	}
	return fmt.Sprintf("Verdict(%d)", int(v))
}

// Outcome is Judge's answer.
type Outcome struct {
	Verdict  Verdict
	Replaced bool   // the new history is installed
	Streak   int    // the automatic-compaction streak after this one
	Message  string // the warning (NoGain) or error (Fail)
}

// Judged is what Judge weighs: the prompt estimated (alike) before and
// after, the window and trigger (0 unknown, never), whether the
// compaction was automatic, and the streak of automatic compactions that
// left the prompt above the trigger before it.
type Judged struct {
	Auto            bool
	Before, After   int64
	Window, Trigger int64
	Streak          int
}

// Judge decides what becomes of a compaction. One that does not shrink
// the prompt is refused (Roo's rule): an automatic one fails the turn, a
// client's keeps the history as it is. An automatic one that leaves the
// prompt above the trigger adds to the streak; MaxAutoStreak of them in a
// row, or a prompt still at 95% of the window, fail the turn after the
// new history is installed.
func Judge(j Judged) Outcome {
	o := Outcome{Streak: j.Streak}
	if j.After >= j.Before {
		msg := fmt.Sprintf("compaction refused: it would not shrink the context (%d tokens before, %d after)", j.Before, j.After)
		if j.Auto {
			o.Verdict, o.Message = Fail, msg
			return o
		}
		o.Verdict, o.Message = NoGain, msg+"; the history is kept as it is"
		return o
	}
	o.Replaced = true
	if !j.Auto {
		return o
	}
	if j.Trigger > 0 && j.After >= j.Trigger {
		o.Streak++
	}
	switch {
	case o.Streak >= MaxAutoStreak:
		o.Verdict = Fail
		o.Message = fmt.Sprintf("%d automatic compactions in a row left the context above the limit (%d of %d tokens); stopping", o.Streak, j.After, j.Trigger)
	case j.Window > 0 && j.After >= j.Window*95/100:
		o.Verdict = Fail
		o.Message = fmt.Sprintf("the context does not fit the model's window even after compaction (%d of %d tokens)", j.After, j.Window)
	}
	return o
}

// Overflow is what was under way when the provider refused a request as
// too long for the model's window.
type Overflow struct {
	// Compacted: this turn already compacted on an overflow.
	Compacted bool
	// CompactionTurn: the request was a compaction turn's own.
	CompactionTurn bool
	// Output: some of the response (text, reasoning, a tool call) arrived.
	Output bool
}

// CompactOnOverflow reports whether a refused request is answered by
// compacting and sending it again (once per turn, and only when nothing
// of the response arrived); otherwise the turn fails with
// contextWindowExceeded.
func CompactOnOverflow(o Overflow) bool { return !o.Compacted && !o.CompactionTurn && !o.Output }

// LatestUser is the index of the newest user message in h at or after
// from that no compaction wrote, or -1.
func LatestUser(h []Entry, from int) int {
	for i := len(h) - 1; i >= from && i >= 0; i-- {
		if h[i].Kind == User && !h[i].Written() {
			return i
		}
	}
	return -1
}

// RetryShorter is the input of the next summary request after the
// attempt-th (from 0) was refused as too long: without its oldest entry,
// while more than one is left and fewer than MaxOverflowRetries were
// made; false: give up.
func RetryShorter(entries []Entry, attempt int) ([]Entry, bool) {
	if len(entries) <= 1 || attempt >= MaxOverflowRetries {
		return entries, false
	}
	return entries[1:], true
}
