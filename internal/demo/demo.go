package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// Options configure Run.
type Options struct {
	// Exe is the apserver binary to spawn as the app-server; empty means
	// this process's own executable.
	Exe string
	// Out gets the live view; nil discards it.
	Out io.Writer
	// JSON also prints every raw protocol line, "→" for sent, "←" for
	// received.
	JSON bool
	// Keep keeps the temp workspace and data dir, and prints where they are.
	Keep bool
	// Color allows ANSI colours in the view (see ShouldColor).
	Color bool
}

// Limits on how long the demo waits for the server.
const (
	callTimeout   = 15 * time.Second // one request's response
	turnTimeout   = 30 * time.Second // turn/start until turn/completed
	exitGrace     = 10 * time.Second // exit after stdin closes
	approvalPause = 600 * time.Millisecond
)

// Run runs the demo: scripted model, temp workspace, apserver child, two
// turns, a summary. It returns an error if anything in the exchange goes
// wrong, after printing what it knows (including the tail of the server's
// log) to Out.
func Run(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Exe == "" {
		if o.Exe, err = os.Executable(); err != nil {
			return fmt.Errorf("finding the apserver binary: %w", err)
		}
	}
	d := &demo{o: o, v: &view{w: o.Out, color: o.Color}, began: time.Now(), cmdOut: map[string]bool{}, flowing: map[string]bool{}}

	root, err := os.MkdirTemp("", "apserver-demo-")
	if err != nil {
		return err
	}
	d.root = root
	d.workspace = filepath.Join(root, "workspace")
	d.dataDir = filepath.Join(root, "data")
	defer func() {
		if o.Keep {
			d.v.line(sg(dim, "  kept       "), sg(plain, root), sg(dim, " (workspace/, data/, apserver.log)"))
			return
		}
		if rerr := os.RemoveAll(root); rerr != nil && err == nil {
			err = fmt.Errorf("removing the demo's temp dir: %w", rerr)
		}
	}()
	files, err := writeWorkspace(d.workspace)
	if err != nil {
		return fmt.Errorf("writing the demo workspace: %w", err)
	}
	if err := os.MkdirAll(d.dataDir, 0o755); err != nil {
		return err
	}
	// An empty user config, so that the server does not read the caller's.
	configFile := filepath.Join(root, "config.toml")
	if err := os.WriteFile(configFile, []byte("# apserver demo: an empty config, so that yours is not read.\n"), 0o644); err != nil {
		return err
	}

	model, err := scripted.Start(demoScript())
	if err != nil {
		return fmt.Errorf("starting the scripted model: %w", err)
	}
	defer model.Close()

	ch, err := startChild(o.Exe, d.workspace, configFile, d.dataDir, filepath.Join(root, "apserver.log"), model.URL())
	if err != nil {
		return err
	}
	d.child = ch
	d.c = newClient(ch.stdin, ch.stdout)
	d.c.handle = d.handle
	if o.JSON {
		d.c.trace = d.traceLine
	}

	d.header(model.URL(), files)
	if err := d.run(ctx); err != nil {
		d.fail(err)
		return err
	}
	return nil
}

// demo is the state of one run. Only Run's goroutine touches it.
type demo struct {
	o     Options
	ctx   context.Context // Run's, for the waits inside handlers
	v     *view
	c     *client
	child *child
	began time.Time

	root, workspace, dataDir string

	threadID  string
	lastTurn  string          // id of the last turn started
	items     int             // item/completed seen
	usage     tokenBreakdown  // latest thread total
	cmdOut    map[string]bool // command items that streamed output
	flowing   map[string]bool // reasoning/message items that streamed text
	flags     []string        // latest thread activeFlags
	approvals int             // approval requests answered
}

func (d *demo) header(modelURL string, files []string) {
	v := d.v
	v.line(sg(boldCyn, "apserver demo"), sg(dim, " · the Codex app-server protocol (v2), live and offline"))
	v.linef(plain, "  This program plays the editor. It spawns `apserver serve` and speaks JSON-RPC")
	v.linef(plain, "  to it over stdin/stdout, one JSON object per line. The model is a scripted")
	v.linef(plain, "  stand-in on 127.0.0.1, so nothing leaves this machine.")
	v.newline()
	v.line(sg(dim, "  model      "), sg(plain, "demo-model"), sg(dim, " (scripted) at "+modelURL+", responses wire"))
	v.line(sg(dim, "  server     "), sg(plain, fmt.Sprintf("apserver serve, pid %d", d.child.cmd.Process.Pid)), sg(dim, " · data in "+d.dataDir))
	v.line(sg(dim, "  workspace  "), sg(plain, d.workspace), sg(dim, ": "+strings.Join(files, " ")))
}

func (d *demo) run(ctx context.Context) error {
	d.ctx = ctx
	v := d.v
	v.rule("handshake")
	var init struct {
		UserAgent string `json:"userAgent"`
	}
	err := d.c.call(ctx, callTimeout, "initialize", map[string]any{
		"clientInfo": map[string]any{"name": "apserver-demo", "title": "apserver demo", "version": "1"},
	}, &init)
	if err != nil {
		return err
	}
	d.step("initialize", "userAgent "+strconv.Quote(init.UserAgent))
	if err := d.c.notify("initialized", nil); err != nil {
		return err
	}
	d.step("initialized", "(a notification: no reply)")

	var ts struct {
		Thread         threadInfo      `json:"thread"`
		Model          string          `json:"model"`
		ApprovalPolicy json.RawMessage `json:"approvalPolicy"`
		Sandbox        json.RawMessage `json:"sandbox"`
	}
	err = d.c.call(ctx, callTimeout, "thread/start", map[string]any{
		"cwd": d.workspace, "approvalPolicy": "untrusted", "sandbox": "workspace-write",
	}, &ts)
	if err != nil {
		return err
	}
	d.threadID = ts.Thread.ID
	d.step("thread/start", "thread "+ts.Thread.ID, fmt.Sprintf("model %s · approval %s · sandbox %s",
		ts.Model, tagOf(ts.ApprovalPolicy), tagOf(ts.Sandbox)))

	for i, p := range []string{promptHello, promptTests, promptShout} {
		if err := d.turn(ctx, i+1, p); err != nil {
			return err
		}
	}
	if err := d.undo(ctx); err != nil {
		return err
	}
	return d.summary(ctx)
}

// undo reverts the last turn with thread/revert: its edits are undone from
// the checkpoint taken before its first tool ran, and the turn is dropped.
func (d *demo) undo(ctx context.Context) error {
	d.v.rule("undo the last turn")
	var res struct {
		RestoredPaths []string `json:"restoredPaths"`
	}
	if err := d.c.call(ctx, callTimeout, "thread/revert", map[string]any{"threadId": d.threadID, "beforeTurnId": d.lastTurn}, &res); err != nil {
		return err
	}
	d.step("thread/revert", "restored "+strings.Join(res.RestoredPaths, ", ")+" and dropped turn 3",
		"(from apserver's own checkpoint store; the workspace's .git, if any, is never touched)")
	b, err := os.ReadFile(filepath.Join(d.workspace, "greet.sh"))
	if err != nil {
		return err
	}
	if strings.Contains(string(b), "shout") {
		return errors.New("thread/revert left shout in greet.sh")
	}
	d.v.line(sg(green, "  ✓ greet.sh is back to its state before turn 3"))
	return nil
}

// step prints one handshake or bookkeeping exchange: the method sent, and
// what came back, one line each.
func (d *demo) step(method string, result ...string) {
	for i, r := range result {
		if i == 0 {
			d.v.line(sg(dim, "  → "), sg(bold, fmt.Sprintf("%-14s", method)), sg(dim, " ← "), sg(plain, r))
		} else {
			d.v.line(sg(plain, "                      "+r))
		}
	}
}

// turn runs one turn and renders it until turn/completed.
func (d *demo) turn(ctx context.Context, n int, prompt string) error {
	d.v.rule(fmt.Sprintf("turn %d", n))
	before := d.usage
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	err := d.c.call(ctx, callTimeout, "turn/start", map[string]any{
		"threadId": d.threadID,
		"input":    []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}},
	}, &res)
	if err != nil {
		return err
	}
	d.lastTurn = res.Turn.ID
	what := fmt.Sprintf("turn/completed of turn %d (%q)", n, prompt)
	dl := within(turnTimeout)
	for {
		m, err := d.c.next(ctx, dl, what)
		if err != nil {
			return err
		}
		if m.isResponse() {
			return fmt.Errorf("waiting for %s: unexpected response with id %s", what, m.ID)
		}
		if m.Method != "turn/completed" {
			if err := d.handle(m); err != nil {
				return err
			}
			continue
		}
		var tc struct {
			Turn struct {
				ID         string `json:"id"`
				Status     string `json:"status"`
				DurationMs *int64 `json:"durationMs"`
				Error      *struct {
					Message string `json:"message"`
				} `json:"error"`
			} `json:"turn"`
		}
		if err := json.Unmarshal(m.Params, &tc); err != nil {
			return fmt.Errorf("turn/completed: %w", err)
		}
		if tc.Turn.ID != res.Turn.ID {
			continue // another turn's; not ours to render
		}
		d.v.breakLine()
		took := ""
		if tc.Turn.DurationMs != nil {
			took = " in " + seconds(time.Duration(*tc.Turn.DurationMs)*time.Millisecond)
		}
		tokens := ""
		if used := d.usage.TotalTokens - before.TotalTokens; used > 0 {
			tokens = fmt.Sprintf(" · %s tokens (%s in, %s out)", thousands(used),
				thousands(d.usage.InputTokens-before.InputTokens), thousands(d.usage.OutputTokens-before.OutputTokens))
		}
		if tc.Turn.Status != "completed" {
			msg := ""
			if tc.Turn.Error != nil {
				msg = ": " + tc.Turn.Error.Message
			}
			d.v.line(sg(boldRed, fmt.Sprintf("  ✗ turn %d %s%s", n, tc.Turn.Status, took)), sg(red, msg))
			return fmt.Errorf("turn %d (%q) ended %s%s", n, prompt, tc.Turn.Status, msg)
		}
		d.v.line(sg(boldGrn, fmt.Sprintf("  ✓ turn %d completed%s", n, took)), sg(dim, tokens))
		return nil
	}
}

// handle renders a notification or answers a server request.
func (d *demo) handle(m *message) error {
	if m.isRequest() {
		return d.serverRequest(m)
	}
	v := d.v
	var p notification
	if len(m.Params) > 0 {
		if err := json.Unmarshal(m.Params, &p); err != nil {
			return fmt.Errorf("%s: decoding params: %w", m.Method, err)
		}
	}
	switch m.Method {
	case "thread/status/changed":
		d.flags = p.Status.ActiveFlags
	case "thread/tokenUsage/updated":
		d.usage = p.TokenUsage.Total
	case "item/started":
		d.itemStarted(p.Item)
	// With --json every delta is already on screen as a raw line, so the
	// text is rendered whole at item/completed instead.
	case "item/reasoning/summaryPartAdded":
		if p.SummaryIndex > 0 && d.flowing[p.ItemID] {
			v.newline()
		}
	case "item/reasoning/summaryTextDelta":
		if !d.o.JSON {
			d.reasoning(p.ItemID, p.Delta)
		}
	case "item/agentMessage/delta":
		if !d.o.JSON {
			d.flowing[p.ItemID] = true
			v.flow(plain, "  ", p.Delta)
		}
	case "item/commandExecution/outputDelta":
		if !d.o.JSON {
			d.cmdOut[p.ItemID] = true
			v.verbatim(dim, "      ", p.Delta)
		}
	case "item/completed":
		d.items++
		d.itemCompleted(p.Item)
	case "error":
		retry := ""
		if p.WillRetry {
			retry = " (the server will retry)"
		}
		v.line(sg(boldRed, "  ✗ error: "), sg(red, p.Error.Message+retry))
	case "warning":
		v.line(sg(boldYlw, "  ! warning: "), sg(yellow, p.Message))
	case "turn/plan/updated":
		v.breakLine()
		v.line(sg(bold, "  plan"))
		for _, st := range p.Plan {
			mark, s := "[ ]", style(plain)
			switch st.Status {
			case "completed":
				mark, s = "[x]", green
			case "inProgress":
				mark, s = "[~]", yellow
			}
			v.line(sg(s, "    "+mark+" "), sg(plain, st.Step))
		}
	case "turn/diff/updated":
		files, plus, minus := diffStat(p.Diff)
		v.line(sg(dim, fmt.Sprintf("  turn diff: %d file%s, +%d −%d (turn/diff/updated, the whole turn so far)", files, plural(files), plus, minus)))
	case "(unparseable line)":
		v.line(sg(boldYlw, "  ! the server sent a line that is not JSON: "), sg(yellow, string(m.raw)))
	}
	// Everything else (thread/started, turn/started, serverRequest/resolved,
	// methods this demo does not know) needs no rendering; a client must
	// tolerate unknown methods.
	return nil
}

func (d *demo) reasoning(itemID, delta string) {
	if !d.flowing[itemID] {
		d.flowing[itemID] = true
		d.v.breakLine()
		d.v.write(dim, "  thinking  ")
	}
	d.v.flow(thought, "            ", delta)
}

func (d *demo) itemStarted(it item) {
	v := d.v
	switch it.Type {
	case "userMessage":
		var text []string
		for _, c := range it.Content {
			if c.Type == "text" {
				text = append(text, c.Text)
			}
		}
		v.line(sg(boldCyn, "› "), sg(boldCyn, strings.Join(text, " ")))
	case "commandExecution":
		v.line(sg(bold, "  $ "+shellBody(it.Command)))
	case "fileChange":
		v.breakLine()
		for _, c := range it.Changes {
			v.line(sg(bold, "  ✎ "+c.Kind.Type+" "+c.Path))
			for _, l := range strings.Split(strings.TrimSuffix(c.Diff, "\n"), "\n") {
				s := style(dim)
				switch {
				case strings.HasPrefix(l, "+"):
					s = green
				case strings.HasPrefix(l, "-"):
					s = red
				}
				v.line(sg(s, "      "+l))
			}
		}
	case "plan":
		// shown from turn/plan/updated
	case "reasoning", "agentMessage":
		// rendered as their deltas arrive
	default:
		v.line(sg(dim, "  ["+it.Type+"]"))
	}
}

func (d *demo) itemCompleted(it item) {
	v := d.v
	switch it.Type {
	case "reasoning":
		if !d.flowing[it.ID] {
			for _, s := range it.Summary {
				d.reasoning(it.ID, s)
			}
		}
		v.breakLine()
	case "agentMessage":
		if !d.flowing[it.ID] {
			v.flow(plain, "  ", it.Text)
		}
		v.breakLine()
	case "fileChange":
		if it.Status == "completed" {
			v.line(sg(green, "    ✓ written"), sg(dim, fmt.Sprintf(" · %d file%s", len(it.Changes), plural(len(it.Changes)))))
		} else {
			v.line(sg(red, "    ✗ "+it.Status))
		}
	case "commandExecution":
		if !d.cmdOut[it.ID] && it.AggregatedOutput != nil {
			v.verbatim(dim, "      ", *it.AggregatedOutput)
		}
		v.breakLine()
		took := ""
		if it.DurationMs != nil {
			took = fmt.Sprintf(" · %d ms", *it.DurationMs)
		}
		switch {
		case it.Status == "completed" && it.ExitCode != nil && *it.ExitCode == 0:
			v.line(sg(green, "    ✓ exit 0"), sg(dim, took))
		case it.ExitCode != nil:
			v.line(sg(red, fmt.Sprintf("    ✗ exit %d", *it.ExitCode)), sg(dim, took))
		default:
			v.line(sg(red, "    ✗ "+it.Status))
		}
	}
}

// serverRequest answers item/commandExecution/requestApproval and
// item/fileChange/requestApproval with "accept", after showing the request,
// and any other request with a JSON-RPC error (so the turn never hangs).
func (d *demo) serverRequest(m *message) error {
	v := d.v
	switch m.Method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
	default:
		v.line(sg(boldYlw, "  ! server request "+m.Method), sg(yellow, ": not supported by the demo, answered with an error"))
		return d.c.replyError(m.ID, -32601, "apserver demo does not handle "+m.Method)
	}
	var p struct {
		ItemID  string  `json:"itemId"`
		Command *string `json:"command"`
		Cwd     *string `json:"cwd"`
		Reason  *string `json:"reason"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		return fmt.Errorf("%s: decoding params: %w", m.Method, err)
	}
	v.breakLine()
	v.line(sg(boldYlw, "  ┌ approval requested"), sg(dim, " (server → client request, id "+string(m.ID)+")"))
	row := func(k, val string) { v.line(sg(boldYlw, "  │ "), sg(dim, fmt.Sprintf("%-9s", k)), sg(plain, val)) }
	row("method", m.Method)
	if p.Command != nil {
		row("command", *p.Command)
	} else {
		row("changes", "the fileChange item "+p.ItemID+" shown above")
	}
	if p.Cwd != nil {
		row("cwd", *p.Cwd)
	}
	if p.Reason != nil && *p.Reason != "" {
		row("reason", *p.Reason)
	}
	if len(d.flags) > 0 {
		row("status", "thread active, "+strings.Join(d.flags, ", "))
	}
	row("policy", `"untrusted": ask before file changes and before commands the rules do not allow`)
	v.breakLine()
	v.write(boldYlw, "  └ ")
	v.write(yellow, "approving… ")
	t := time.NewTimer(approvalPause)
	select {
	case <-t.C:
	case <-d.ctx.Done():
		t.Stop()
		return d.ctx.Err()
	}
	v.write(boldGrn, "✓ approved")
	v.write(dim, ` → {"decision":"accept"}`)
	v.newline()
	d.approvals++
	return d.c.reply(m.ID, map[string]any{"decision": "accept"})
}

func (d *demo) summary(ctx context.Context) error {
	v := d.v
	v.rule("summary")
	var list struct {
		Data []threadInfo `json:"data"`
	}
	if err := d.c.call(ctx, callTimeout, "thread/list", map[string]any{}, &list); err != nil {
		return err
	}
	found := []string{fmt.Sprintf("%d thread%s", len(list.Data), plural(len(list.Data)))}
	for _, t := range list.Data {
		found = append(found, fmt.Sprintf("%s %q (%s)", t.ID, t.Preview, t.Status.Type))
	}
	d.step("thread/list", found...)

	var read struct {
		Thread threadInfo `json:"thread"`
	}
	if err := d.c.call(ctx, callTimeout, "thread/read", map[string]any{"threadId": d.threadID, "includeTurns": true}, &read); err != nil {
		return err
	}
	stored := 0
	for _, t := range read.Thread.Turns {
		stored += len(t.Items)
	}
	d.step("thread/read", fmt.Sprintf("%d turns, %d items read back from the store", len(read.Thread.Turns), stored))

	if err := d.child.finish(exitGrace); err != nil {
		return err
	}
	v.line(sg(dim, "  stdin closed, apserver exited cleanly"))
	v.newline()
	u := d.usage
	v.line(sg(dim, "  threads    "), sg(plain, strconv.Itoa(len(list.Data))))
	v.line(sg(dim, "  turns      "), sg(plain, strconv.Itoa(len(read.Thread.Turns))))
	kept := fmt.Sprintf("%d completed live, %d stored", d.items, stored)
	if d.items > stored {
		kept += " (the reverted turn's were dropped)"
	}
	v.line(sg(dim, "  items      "), sg(plain, kept))
	v.line(sg(dim, "  approvals  "), sg(plain, strconv.Itoa(d.approvals)))
	v.line(sg(dim, "  tokens     "), sg(plain, thousands(u.TotalTokens)),
		sg(dim, fmt.Sprintf(" (%s input, %s cached, %s output)", thousands(u.InputTokens), thousands(u.CachedInputTokens), thousands(u.OutputTokens))))
	where := " (removed on exit; --keep keeps it)"
	if d.o.Keep {
		where = ""
	}
	v.line(sg(dim, "  data       "), sg(plain, d.dataDir), sg(dim, where))
	v.line(sg(dim, "  took       "), sg(plain, seconds(time.Since(d.began))))
	v.newline()
	v.line(sg(bold, "  Next: "), sg(plain, "point a Codex app-server client at `apserver serve`; docs/architecture.md"))
	v.line(sg(plain, "  explains the pieces. `apserver demo --json` shows every protocol line."))
	return nil
}

// fail prints err and, when the server misbehaved, the tail of its log.
func (d *demo) fail(err error) {
	v := d.v
	v.breakLine()
	v.newline()
	if errors.Is(err, context.Canceled) {
		v.line(sg(boldRed, "✗ demo interrupted"))
		d.child.kill()
		return
	}
	v.line(sg(boldRed, "✗ demo failed: "), sg(red, err.Error()))
	if exited, werr := d.child.exitedOnItsOwn(time.Second); exited {
		status := "exit status 0"
		if werr != nil {
			status = werr.Error()
		}
		v.line(sg(red, "  apserver exited on its own ("+status+")"))
	}
	d.child.kill()
	tail := d.child.logTail(20)
	if len(tail) == 0 {
		v.line(sg(dim, "  apserver's log is empty ("+d.child.logPath+")"))
		return
	}
	v.line(sg(dim, fmt.Sprintf("  apserver's log, last %d line%s (%s):", len(tail), plural(len(tail)), d.child.logPath)))
	for _, l := range tail {
		v.line(sg(dim, "    "+l))
	}
	if !d.o.Keep {
		v.line(sg(dim, "  (run with --keep to keep the log, the workspace and the data dir)"))
	}
}

// traceLine prints a raw protocol line for --json.
func (d *demo) traceLine(sent bool, line []byte) {
	if sent {
		d.v.line(sg(cyan, "→ "), sg(dim, string(line)))
	} else {
		d.v.line(sg(yellow, "← "), sg(dim, string(line)))
	}
}

// Wire shapes the demo reads. Fields it does not use are left out: a client
// must ignore what it does not know.
type (
	notification struct {
		Item         item   `json:"item"`
		ItemID       string `json:"itemId"`
		Delta        string `json:"delta"`
		SummaryIndex int    `json:"summaryIndex"`
		Status       struct {
			Type        string   `json:"type"`
			ActiveFlags []string `json:"activeFlags"`
		} `json:"status"`
		TokenUsage struct {
			Total tokenBreakdown `json:"total"`
		} `json:"tokenUsage"`
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
		WillRetry bool   `json:"willRetry"`
		Message   string `json:"message"`
		Plan      []struct {
			Step   string `json:"step"`
			Status string `json:"status"`
		} `json:"plan"`
		Diff string `json:"diff"`
	}
	item struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Text    string `json:"text"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Summary          []string `json:"summary"`
		Command          string   `json:"command"`
		Status           string   `json:"status"`
		AggregatedOutput *string  `json:"aggregatedOutput"`
		ExitCode         *int     `json:"exitCode"`
		DurationMs       *int64   `json:"durationMs"`
		Changes          []struct {
			Path string `json:"path"`
			Kind struct {
				Type     string  `json:"type"`
				MovePath *string `json:"move_path"`
			} `json:"kind"`
			Diff string `json:"diff"`
		} `json:"changes"`
	}
	tokenBreakdown struct {
		TotalTokens       int64 `json:"totalTokens"`
		InputTokens       int64 `json:"inputTokens"`
		CachedInputTokens int64 `json:"cachedInputTokens"`
		OutputTokens      int64 `json:"outputTokens"`
	}
	threadInfo struct {
		ID      string `json:"id"`
		Preview string `json:"preview"`
		Status  struct {
			Type string `json:"type"`
		} `json:"status"`
		Turns []struct {
			ID    string            `json:"id"`
			Items []json.RawMessage `json:"items"`
		} `json:"turns"`
	}
)

// tagOf renders a setting that is a string ("untrusted") or a tagged object
// ({"type":"workspaceWrite",…}).
func tagOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Type != "" {
		return o.Type
	}
	return string(raw)
}

var shellWrapped = regexp.MustCompile(`^(?:\S*/)?(?:ba|z)?sh -l?c '(.*)'$`)

// shellBody undoes the shell wrapping of a command item's command
// (`/bin/bash -c 'sh test.sh'` → `sh test.sh`) for display.
func shellBody(cmd string) string {
	if m := shellWrapped.FindStringSubmatch(cmd); m != nil {
		return strings.ReplaceAll(m[1], `'\''`, `'`)
	}
	return cmd
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func seconds(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// thousands formats n with comma separators: 12345 → "12,345".
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if neg {
		s = "-" + s
	}
	return s
}

// diffStat counts the files and the added and removed lines of a unified
// diff.
func diffStat(diff string) (files, plus, minus int) {
	for _, l := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(l, "diff --git "):
			files++
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "):
		case strings.HasPrefix(l, "+"):
			plus++
		case strings.HasPrefix(l, "-"):
			minus++
		}
	}
	return files, plus, minus
}
