package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

// Stdin EOF (docs/protocol.md "When stdin ends"): a script pipes a batch of
// requests into apserver and reads every answer. Each test writes all of
// its input, closes stdin, reads stdout to its end and waits for the exit.

// piped is one apserver run fed a fixed input.
type piped struct {
	lines  []map[string]any // stdout, one decoded message per line
	raw    []string
	code   int // exit status
	stderr string
	took   time.Duration // from start to exit
}

// pipeRun runs apserver with input as stdin (one JSON value a line) in cwd
// against model, over dataDir.
func pipeRun(t *testing.T, model *scripted.Server, dataDir, cwd string, args []string, input ...any) piped {
	t.Helper()
	var in bytes.Buffer
	for _, v := range input {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		in.Write(append(b, '\n'))
	}
	home := t.TempDir()
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"--data-dir", dataDir, "--config", cfg,
		"--wire", "responses", "--model", "scripted-model"}, args...)...)
	cmd.Dir = cwd
	cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "OPENAI_API_KEY=test",
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_DATA_HOME=" + filepath.Join(home, ".local", "share")}
	if model != nil {
		cmd.Env = append(cmd.Env, "OPENAI_BASE_URL="+model.URL())
	}
	cmd.Stdin = &in // written whole, then EOF
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	p := piped{stderr: errb.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("apserver did not exit within %v of its stdin ending; stdout:\n%s\nstderr:\n%s", waitTimeout, out.String(), errb.String())
	case errors.As(err, &ee):
		p.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line is not JSON: %q", l)
		}
		p.lines, p.raw = append(p.lines, m), append(p.raw, l)
	}
	return p
}

func rpc(id any, method string, params any) map[string]any {
	m := map[string]any{"method": method, "params": params}
	if id != nil {
		m["id"] = id
	}
	return m
}

func initReq(id int) map[string]any {
	return rpc(id, "initialize", map[string]any{"clientInfo": map[string]any{"name": "script", "version": "1"}})
}

// response returns the answer to id (nil if none) and how many there are.
func (p piped) response(id float64) (map[string]any, int) {
	var r map[string]any
	n := 0
	for _, m := range p.lines {
		if m["method"] == nil && m["id"] == id {
			r = m
			n++
		}
	}
	return r, n
}

// notes returns the notifications of method.
func (p piped) notes(method string) []map[string]any {
	var out []map[string]any
	for _, m := range p.lines {
		if m["method"] == method && m["id"] == nil {
			out = append(out, m)
		}
	}
	return out
}

// requests returns the server→client requests of method.
func (p piped) requests(method string) []map[string]any {
	var out []map[string]any
	for _, m := range p.lines {
		if m["method"] == method && m["id"] != nil {
			out = append(out, m)
		}
	}
	return out
}

func (p piped) dump() string {
	return fmt.Sprintf("exit %d after %v\nstdout:\n%s\nstderr:\n%s", p.code, p.took, strings.Join(p.raw, "\n"), p.stderr)
}

// newPipedThread creates a thread in a first run over dataDir and returns
// its id (a script learns it the same way, or with thread/list).
func newPipedThread(t *testing.T, dataDir, cwd, approval string) string {
	t.Helper()
	p := pipeRun(t, nil, dataDir, cwd, nil, initReq(0),
		rpc(1, "thread/start", map[string]any{"cwd": cwd, "approvalPolicy": approval}))
	r, _ := p.response(1)
	id, _ := jget(r, "result.thread.id").(string)
	if id == "" || p.code != 0 {
		t.Fatalf("thread/start in a first run failed:\n%s", p.dump())
	}
	return id
}

// storedTurnStatus reads the thread in a new run and returns its last
// turn's status.
func storedTurnStatus(t *testing.T, dataDir, cwd, threadID string) string {
	t.Helper()
	p := pipeRun(t, nil, dataDir, cwd, nil, initReq(0),
		rpc(1, "thread/read", map[string]any{"threadId": threadID, "includeTurns": true}))
	r, _ := p.response(1)
	turns, _ := jget(r, "result.thread.turns").([]any)
	if len(turns) == 0 {
		t.Fatalf("thread/read shows no turn:\n%s", p.dump())
	}
	s, _ := jget(turns[len(turns)-1], "status").(string)
	return s
}

// TestEOFReadmeExample is the README's example: both responses come out.
func TestEOFReadmeExample(t *testing.T) {
	t.Parallel()
	cwd := t.TempDir()
	p := pipeRun(t, nil, t.TempDir(), cwd, nil, initReq(0), rpc(1, "thread/start", map[string]any{"cwd": cwd}))
	if p.code != 0 {
		t.Errorf("exit status %d, want 0", p.code)
	}
	for _, id := range []float64{0, 1} {
		if r, n := p.response(id); n != 1 || r["result"] == nil {
			t.Errorf("request %v: %d answers (%v), want one result", id, n, r)
		}
	}
	if len(p.notes("thread/started")) != 1 {
		t.Errorf("no thread/started")
	}
	if t.Failed() {
		t.Log(p.dump())
	}
}

// TestEOFPipedTurnRunsToTheEnd: a turn piped in with the input already
// closed streams all the way to turn/completed, and apserver exits 0.
func TestEOFPipedTurnRunsToTheEnd(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "say hello", Steps: []scripted.Step{
		{Text: "Let me look.", ToolCalls: []scripted.ToolCall{{Command: "echo hi > hello.txt"}}},
		{Text: "Hello from the script.", TTFT: 50 * time.Millisecond},
	}})
	dataDir, cwd := t.TempDir(), t.TempDir()
	threadID := newPipedThread(t, dataDir, cwd, "never")
	p := pipeRun(t, model, dataDir, cwd, nil, initReq(0), rpc(nil, "initialized", nil),
		rpc(1, "thread/resume", map[string]any{"threadId": threadID}),
		rpc(2, "turn/start", map[string]any{"threadId": threadID, "input": textInput("say hello")}))
	if p.code != 0 {
		t.Errorf("exit status %d, want 0", p.code)
	}
	for _, id := range []float64{0, 1, 2} {
		if r, n := p.response(id); n != 1 || r["result"] == nil {
			t.Errorf("request %v: %d answers (%v), want one result", id, n, r)
		}
	}
	done := p.notes("turn/completed")
	if len(done) != 1 || jget(done[0], "params.turn.status") != "completed" {
		t.Fatalf("turn/completed = %v, want one, completed\n%s", done, p.dump())
	}
	var texts []string
	for _, m := range p.notes("item/completed") {
		if jget(m, "params.item.type") == "agentMessage" {
			texts = append(texts, jget(m, "params.item.text").(string))
		}
	}
	if strings.Join(texts, "|") != "Let me look.|Hello from the script." {
		t.Errorf("agent messages = %q", texts)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("the turn's command did not run: %q, %v", b, err)
	}
	if s := storedTurnStatus(t, dataDir, cwd, threadID); s != "completed" {
		t.Errorf("stored turn status %q, want completed", s)
	}
	if t.Failed() {
		t.Log(p.dump())
	}
}

// TestEOFPendingApprovalCancelled: a piped turn asks for an approval that
// nobody can give. apserver cancels it: the command never runs, the turn
// is stored interrupted, a warning says why, and the exit status says so.
func TestEOFPendingApprovalCancelled(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "write the file", Steps: []scripted.Step{
		{Text: "Writing the file.", ToolCalls: []scripted.ToolCall{{Command: "echo ran > marker.txt"}}},
		{Text: "All finished."},
	}})
	dataDir, cwd := t.TempDir(), t.TempDir()
	threadID := newPipedThread(t, dataDir, cwd, "untrusted")
	p := pipeRun(t, model, dataDir, cwd, nil, initReq(0), rpc(nil, "initialized", nil),
		rpc(1, "thread/resume", map[string]any{"threadId": threadID}),
		rpc(2, "turn/start", map[string]any{"threadId": threadID, "input": textInput("please write the file")}))
	if p.code != 3 {
		t.Errorf("exit status %d, want 3 (a turn was interrupted)", p.code)
	}
	if _, err := os.Stat(filepath.Join(cwd, "marker.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran although nobody approved it (marker: %v)", err)
	}
	if len(p.requests("item/commandExecution/requestApproval")) != 1 {
		t.Errorf("no approval request in the transcript")
	}
	done := p.notes("turn/completed")
	if len(done) != 1 || jget(done[0], "params.turn.status") != "interrupted" {
		t.Errorf("turn/completed = %v, want one, interrupted", done)
	}
	warned := false
	for _, w := range p.notes("warning") {
		warned = warned || strings.Contains(jget(w, "params.message").(string), "closed its input")
	}
	if !warned {
		t.Errorf("no warning saying why the turn stopped")
	}
	if n := len(modelRequests(model)); n != 1 {
		t.Errorf("model requests = %d, want 1 (the turn stops at the approval)", n)
	}
	if s := storedTurnStatus(t, dataDir, cwd, threadID); s != "interrupted" {
		t.Errorf("stored turn status %q, want interrupted", s)
	}
	if t.Failed() {
		t.Log(p.dump())
	}
}

// TestEOFInterruptMode: with --on-eof interrupt a turn whose model never
// answers is interrupted at once: apserver exits promptly, the turn is
// stored interrupted and the exit status says so.
func TestEOFInterruptMode(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "think forever", Steps: []scripted.Step{{Hang: true}}})
	dataDir, cwd := t.TempDir(), t.TempDir()
	threadID := newPipedThread(t, dataDir, cwd, "never")
	p := pipeRun(t, model, dataDir, cwd, []string{"--on-eof", "interrupt"}, initReq(0), rpc(nil, "initialized", nil),
		rpc(1, "thread/resume", map[string]any{"threadId": threadID}),
		rpc(2, "turn/start", map[string]any{"threadId": threadID, "input": textInput("think forever")}))
	if p.code != 3 {
		t.Errorf("exit status %d, want 3 (a turn was interrupted)", p.code)
	}
	if r, n := p.response(2); n != 1 || r["result"] == nil {
		t.Errorf("turn/start: %d answers (%v), want one result", n, r)
	}
	done := p.notes("turn/completed")
	if len(done) != 1 || jget(done[0], "params.turn.status") != "interrupted" {
		t.Errorf("turn/completed = %v, want one, interrupted", done)
	}
	if s := storedTurnStatus(t, dataDir, cwd, threadID); s != "interrupted" {
		t.Errorf("stored turn status %q, want interrupted", s)
	}
	if t.Failed() {
		t.Log(p.dump())
	}
}

// TestEOFManyPipelined: 200 thread/starts and a thread/list in one batch
// are all answered, once each, in the order they were sent, and the list
// sees every thread.
func TestEOFManyPipelined(t *testing.T) {
	t.Parallel()
	const n = 200
	cwd := t.TempDir()
	in := []any{initReq(0)}
	for i := 1; i <= n; i++ {
		in = append(in, rpc(i, "thread/start", map[string]any{"cwd": cwd}))
	}
	in = append(in, rpc(n+1, "thread/list", map[string]any{"limit": n + 10}))
	p := pipeRun(t, nil, t.TempDir(), cwd, nil, in...)
	if p.code != 0 {
		t.Errorf("exit status %d, want 0", p.code)
	}
	var ids []float64
	for _, m := range p.lines {
		if m["method"] == nil {
			ids = append(ids, m["id"].(float64))
		}
	}
	for i := 0; i <= n+1; i++ {
		if i >= len(ids) || ids[i] != float64(i) {
			t.Fatalf("answers out of order or missing at %d: %v", i, ids)
		}
	}
	if len(ids) != n+2 {
		t.Fatalf("%d answers, want %d", len(ids), n+2)
	}
	r, _ := p.response(n + 1)
	if data, _ := jget(r, "result.data").([]any); len(data) != n {
		t.Errorf("thread/list after %d thread/starts lists %d threads", n, len(data))
	}
}

// TestEOFPendingQuestionInterrupts: request_user_input with nobody left to
// answer: the request is written, apserver answers it itself, the model is
// not asked again, the turn is stored interrupted and the exit status is 3.
func TestEOFPendingQuestionInterrupts(t *testing.T) {
	t.Parallel()
	q := `{"questions":[{"id":"color","header":"Color","question":"Which color?","options":[{"label":"red"},{"label":"blue"}]}]}`
	model := startModel(t, scripted.Rule{Match: "ask me", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Name: "request_user_input", Arguments: q}}},
		{Text: "Going on without an answer."},
	}})
	dataDir, cwd := t.TempDir(), t.TempDir()
	threadID := newPipedThread(t, dataDir, cwd, "never")
	p := pipeRun(t, model, dataDir, cwd, nil, initReq(0), rpc(nil, "initialized", nil),
		rpc(1, "thread/resume", map[string]any{"threadId": threadID}),
		rpc(2, "turn/start", map[string]any{"threadId": threadID, "input": textInput("ask me")}))
	if p.code != 3 {
		t.Errorf("exit status %d, want 3", p.code)
	}
	if len(p.requests("item/tool/requestUserInput")) != 1 {
		t.Errorf("the question was not written")
	}
	if len(p.notes("warning")) != 1 {
		t.Errorf("warnings = %v, want one saying why the turn stopped", p.notes("warning"))
	}
	done := p.notes("turn/completed")
	if len(done) != 1 || jget(done[0], "params.turn.status") != "interrupted" {
		t.Errorf("turn/completed = %v, want one, interrupted", done)
	}
	if n := len(modelRequests(model)); n != 1 {
		t.Errorf("model requests = %d, want 1 (the turn stops at the question)", n)
	}
	if s := storedTurnStatus(t, dataDir, cwd, threadID); s != "interrupted" {
		t.Errorf("stored turn status %q, want interrupted", s)
	}
	if t.Failed() {
		t.Log(p.dump())
	}
}
