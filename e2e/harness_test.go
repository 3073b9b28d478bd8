// Package e2e drives apserver as an editor would, against the scripted
// model server: in this process (internal/editor/inprocess, under
// coverage) where no process boundary is under test, else the real binary
// over stdio (framing, kill -9, EOF and exit codes, exec, listeners, the
// Codex TUI and SDK). Every line the server writes is
// validated against Codex's JSON Schema and apserver's own for its
// extensions (internal/wirecheck, protocol/codex, protocol/apserver).
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/editor"
	"github.com/apserver/apserver/internal/editor/inprocess"
	"github.com/apserver/apserver/internal/wirecheck"
	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/session"
)

// Timeouts are generous: a healthy server answers in milliseconds, and a
// test that waits this long has found a bug.
const (
	waitTimeout = 15 * time.Second
	exitTimeout = 10 * time.Second
)

var (
	binPath   string // the apserver binary built by TestMain
	validator *wirecheck.Validator
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// The tests mostly wait on child processes, so run more of them at
	// once than there are CPUs, unless -parallel says otherwise.
	flag.Parse()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		flag.Set("test.parallel", strconv.Itoa(max(4, runtime.GOMAXPROCS(0))))
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "apserver-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binPath = filepath.Join(dir, "apserver")
	args := []string{"build", "-o", binPath}
	if os.Getenv("APSERVER_E2E_RACE") != "" {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/apserver")
	build := exec.Command(goTool(), args...)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: building apserver: %v\n%s", err, out)
		return 1
	}
	if validator, err = wirecheck.Default(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	return m.Run()
}

// moduleRoot walks up from the working directory to the directory holding
// go.mod.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		p := filepath.Dir(d)
		if p == d {
			return "", errors.New("no go.mod above the test directory")
		}
		d = p
	}
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return "go"
}

// ---------------------------------------------------------------------------
// Scripted model.

// startModel starts a scripted model server closed at the end of the test.
func startModel(t *testing.T, rules ...scripted.Rule) *scripted.Server {
	t.Helper()
	srv, err := scripted.Start(scripted.Script{Rules: rules})
	if err != nil {
		t.Fatalf("scripted.Start: %v", err)
	}
	t.Cleanup(srv.Close)
	return srv
}

// modelRequests returns the model requests (Responses or Chat
// Completions) received so far.
func modelRequests(srv *scripted.Server) []scripted.Request {
	var out []scripted.Request
	for _, r := range srv.Requests() {
		if r.Wire == scripted.WireResponses || r.Wire == scripted.WireChat {
			out = append(out, r)
		}
	}
	return out
}

// varTmpDir is a fresh directory under /var/tmp, removed after the test:
// not under /tmp, which workspace-write lets commands write (and where the
// sandbox gives them a private one).
func varTmpDir(t *testing.T, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("/var/tmp", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// waitModelRequests waits until the model has received at least n requests.
func waitModelRequests(t *testing.T, srv *scripted.Server, n int) []scripted.Request {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		reqs := modelRequests(srv)
		if len(reqs) >= n {
			return reqs
		}
		if time.Now().After(deadline) {
			t.Fatalf("model got %d requests, want at least %d", len(reqs), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------------
// Client.

// message is one line the server sent.
type message struct {
	Seq    int             // position among all server lines
	Raw    string          // the line as sent
	ID     json.RawMessage // request or response id (nil for notifications)
	Method string          // notification or server request method
	Params json.RawMessage
	Result json.RawMessage
	Error  *rpcError
	// ReqMethod is the method of the client request a response answers.
	ReqMethod string

	params any // decoded Params (or Result for responses)
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

func (m *message) isResponse() bool { return m.Method == "" }
func (m *message) isRequest() bool  { return m.Method != "" && m.ID != nil }

// get returns the value at a dotted path in the params (or the result, for
// a response): "turn.items.0.text".
func (m *message) get(path string) any { return jget(m.params, path) }

// str is get as a string ("" when absent or not a string).
func (m *message) str(path string) string {
	s, _ := m.get(path).(string)
	return s
}

// label names the message in ordering lists: the method, or
// "response:<method>" for a response to a client request.
func (m *message) label() string {
	if m.isResponse() {
		return "response:" + m.ReqMethod
	}
	return m.Method
}

func (m *message) String() string { return m.Raw }

// jget walks a decoded JSON value along a dotted path (editor.Get).
func jget(v any, path string) any { return editor.Get(v, path) }

// options configure a spawned server.
type options struct {
	dataDir string   // --data-dir; a fresh temp dir when empty
	wire    string   // --wire; "responses" when empty
	args    []string // extra flags
	env     []string // extra environment (KEY=VALUE), overriding the harness's
	dir     string   // the process's working directory; a fresh temp dir when empty
	// inProcess runs apserver in the test binary (internal/editor/inprocess)
	// instead of spawning it: for tests that need no process boundary, and
	// so under coverage. args may then hold only --config, --on-eof and
	// --no-coalesce, and env must be empty: its commands run with the
	// test's environment. APSERVER_E2E_BINARY=1 runs these on the binary.
	inProcess bool
}

// client is a fake editor speaking to one apserver process.
type client struct {
	t       *testing.T
	cmd     *exec.Cmd         // nil in process
	inproc  *inprocess.Server // nil for a spawned process
	stdin   io.WriteCloser
	stderr  *syncBuffer
	tr      *wirecheck.Transcript
	dataDir string
	model   *scripted.Server

	// wait overrides waitTimeout for this client's waits (a test whose
	// whole point is a long run under load).
	wait time.Duration

	// ed speaks the protocol (internal/editor): it writes, reads, checks
	// every line with tr, and hands each message to record.
	ed *editor.Editor

	mu       sync.Mutex
	msgs     []*message      // every server line, in order
	changed  chan struct{}   // closed and replaced when msgs grows
	readDone <-chan struct{} // closed when the output has ended and is recorded
	exited   chan struct{}   // closed when the process has been reaped
	exitErr  error
	killed   bool
	noReply  map[string]bool // client request ids (JSON) allowed to stay unanswered
}

// newClient spawns apserver against model and initializes the connection.
func newClient(t *testing.T, model *scripted.Server, opts options) *client {
	t.Helper()
	c := spawn(t, model, opts)
	c.initialize()
	return c
}

// spawn starts apserver without initializing.
func spawn(t *testing.T, model *scripted.Server, opts options) *client {
	t.Helper()
	if opts.dataDir == "" {
		opts.dataDir = t.TempDir()
	}
	if opts.wire == "" {
		opts.wire = "responses"
	}
	home := t.TempDir()
	cfgFile := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if opts.inProcess && os.Getenv("APSERVER_E2E_BINARY") == "" {
		return startInProcess(t, model, opts, home, cfgFile)
	}
	args := []string{"--data-dir", opts.dataDir, "--config", cfgFile, "--wire", opts.wire, "--model", "scripted-model"}
	args = append(args, opts.args...)
	cmd := exec.Command(binPath, args...)
	cmd.Dir = home
	if opts.dir != "" {
		cmd.Dir = opts.dir
	}
	env := append(serverEnv(t, home, model), "APSERVER_MODEL=scripted-model")
	cmd.Env = append(env, opts.env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = pw
	c := newClientState(t, model, opts)
	c.cmd, c.stdin = cmd, stdin
	cmd.Stderr = c.stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting apserver: %v", err)
	}
	pw.Close()
	c.connect(stdin, pr)
	go func() {
		err := cmd.Wait()
		c.mu.Lock()
		c.exitErr = err
		c.mu.Unlock()
		close(c.exited)
		// A grandchild holding stdout must not keep the reader alive.
		select {
		case <-c.readDone:
		case <-time.After(2 * time.Second):
			pr.Close()
		}
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(exitTimeout):
			c.t.Errorf("apserver did not exit within %v of stdin closing", exitTimeout)
			cmd.Process.Kill()
			<-c.exited
		}
		c.finish()
	})
	return c
}

// newClientState is a client not yet connected.
func newClientState(t *testing.T, model *scripted.Server, opts options) *client {
	c := &client{
		t: t, stderr: &syncBuffer{},
		dataDir: opts.dataDir, model: model,
		tr:      validator.NewTranscript(),
		noReply: map[string]bool{},
		changed: make(chan struct{}),
		exited:  make(chan struct{}),
	}
	c.tr.RequireEmittedAtMs = true
	return c
}

// startInProcess runs apserver in this process, configured as spawn would
// configure the binary: the same config file, environment and flags.
func startInProcess(t *testing.T, model *scripted.Server, opts options, home, cfgFile string) *client {
	t.Helper()
	c := newClientState(t, model, opts)
	var onEOF session.EOFMode
	noCoalesce := false
	for i := 0; i < len(opts.args); i++ {
		switch a := opts.args[i]; {
		case a == "--no-coalesce":
			noCoalesce = true
		case a == "--config" && i+1 < len(opts.args):
			i++
			cfgFile = opts.args[i]
		case a == "--on-eof" && i+1 < len(opts.args):
			i++
			m, err := session.ParseEOFMode(opts.args[i])
			if err != nil {
				t.Fatal(err)
			}
			onEOF = m
		default:
			t.Fatalf("in process: flag %q needs the binary", a)
		}
	}
	if len(opts.env) > 0 {
		// The commands of an in-process server run with the test's own
		// environment, which opts.env cannot change.
		t.Fatalf("in process: env %q needs the binary", opts.env)
	}
	env := map[string]string{"APSERVER_MODEL": "scripted-model"}
	for _, kv := range serverEnv(t, home, model) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	dir := home
	if opts.dir != "" {
		dir = opts.dir
	}
	modelName := "scripted-model"
	cfg, err := config.Load(config.LoadOptions{UserFile: cfgFile, Workspace: dir, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: &modelName, Wire: &opts.wire, DataDir: &opts.dataDir}})
	if err != nil {
		t.Fatalf("in process: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	c.inproc = inprocess.Start(ctx, inprocess.Options{Config: cfg, Logger: log, OnEOF: onEOF, Version: "e2e", NoCoalesce: noCoalesce, Cwd: dir,
		ConfigSources: session.ConfigSources{UserFile: cfgFile, WorkspaceFile: filepath.Join(dir, ".apserver", "config.toml"),
			Flags: map[string]any{"model": modelName}}})
	c.stdin = c.inproc.Input()
	c.connect(c.stdin, c.inproc.Output())
	go func() {
		err := c.inproc.Err()
		c.mu.Lock()
		c.exitErr = err
		c.mu.Unlock()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		select {
		case <-c.exited:
		case <-time.After(exitTimeout):
			c.t.Errorf("apserver did not stop within %v of its input closing", exitTimeout)
			cancel()
			<-c.exited
		}
		cancel()
		c.finish()
	})
	return c
}

// finish checks, once the server has stopped, what must hold of the whole
// conversation.
func (c *client) finish() {
	t := c.t
	<-c.readDone
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	c.checkInvariants()
	if !killed {
		for _, u := range c.tr.Unanswered() {
			f := strings.Fields(u)
			if f[0] == "client" && !c.noReply[f[1]] {
				t.Errorf("apserver never answered request %s", u)
			}
		}
	}
	if t.Failed() {
		t.Logf("apserver stderr:\n%s", c.stderr.String())
	}
}

// connect starts the fake editor on the server's input and output.
func (c *client) connect(w io.Writer, r io.Reader) {
	c.ed = editor.New(w, r, editor.Options{Check: c.tr, Problem: c.problem, OnMessage: c.record})
	c.readDone = c.ed.Done()
}

// problem reports what is wrong with the server's output; an answer of the
// test's own outside the schema is the point of the test, not an error.
func (c *client) problem(err error) {
	if errors.Is(err, editor.ErrAnswerOutsideSchema) {
		c.t.Logf("client answer outside the schema (intended): %v", err)
		return
	}
	c.t.Error(err)
}

// record keeps the editor's message m as the test's, at the same Seq.
func (c *client) record(m *editor.Message) {
	msg := &message{Seq: m.Seq, Raw: m.Raw, ID: m.ID, Method: m.Method, Params: m.Params, Result: m.Result,
		ReqMethod: m.ReqMethod, params: m.Value()}
	if m.Error != nil {
		msg.Error = (*rpcError)(m.Error)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg)
	close(c.changed)
	c.changed = make(chan struct{})
}

// write sends one raw line (a newline is added) and records it in the
// transcript as a client message.
func (c *client) write(line string) {
	c.t.Helper()
	if err := c.ed.Write([]byte(line)); err != nil {
		c.t.Fatalf("%v\nstderr:\n%s", err, c.stderr.String())
	}
}

// sendWithID sends a request with the given id (any JSON value) and returns
// the id's JSON form.
func (c *client) sendWithID(id any, method string, params any) string {
	c.t.Helper()
	idJSON, err := c.ed.SendWithID(id, method, params)
	if err != nil {
		c.t.Fatalf("%v\nstderr:\n%s", err, c.stderr.String())
	}
	return idJSON
}

// send sends a request with the next integer id and returns that id's JSON
// form, for response.
func (c *client) send(method string, params any) string {
	c.t.Helper()
	id, err := c.ed.Send(method, params)
	if err != nil {
		c.t.Fatalf("%v\nstderr:\n%s", err, c.stderr.String())
	}
	return id
}

// expect notes a request written raw (write) with id (its JSON form), for
// response.
func (c *client) expect(id, method string) { c.ed.Sent(id, method) }

// response waits for the response with id (in its JSON form) to the
// latest request sent with that id.
func (c *client) response(id string) *message {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), c.limit())
	defer cancel()
	m, err := c.ed.Response(ctx, id)
	if err != nil {
		c.t.Fatalf("waiting for the response %s: %v\n%s", id, err, c.dump(0))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msgs[m.Seq]
}

// request sends a request and waits for its response (result or error).
func (c *client) request(method string, params any) *message {
	c.t.Helper()
	return c.response(c.send(method, params))
}

// call sends a request, requires a result and returns it.
func (c *client) call(method string, params any) *message {
	c.t.Helper()
	m := c.request(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %q, want a result", method, m.Error.Code, m.Error.Message)
	}
	return m
}

// callErr sends a request and requires an error with code whose message
// contains want.
func (c *client) callErr(method string, params any, code int, want string) *message {
	c.t.Helper()
	m := c.request(method, params)
	checkErr(c.t, method, m, code, want)
	return m
}

func checkErr(t *testing.T, what string, m *message, code int, want string) {
	t.Helper()
	if m.Error == nil {
		t.Errorf("%s = result %s, want error %d %q", what, m.Result, code, want)
		return
	}
	if m.Error.Code != code || !strings.Contains(m.Error.Message, want) {
		t.Errorf("%s = error %d %q, want %d containing %q", what, m.Error.Code, m.Error.Message, code, want)
	}
}

// notify sends a client notification.
func (c *client) notify(method string, params any) {
	c.t.Helper()
	n := map[string]any{"method": method}
	if params != nil {
		n["params"] = params
	}
	b, _ := json.Marshal(n)
	c.write(string(b))
}

// answer replies to a server request with a result.
func (c *client) answer(req *message, result any) {
	c.t.Helper()
	if err := c.ed.Answer(&editor.Message{ID: req.ID, Method: req.Method}, result); err != nil {
		c.t.Fatal(err)
	}
}

// answerError replies to a server request with a JSON-RPC error.
func (c *client) answerError(req *message, code int, msg string) {
	c.t.Helper()
	if err := c.ed.AnswerError(&editor.Message{ID: req.ID, Method: req.Method}, code, msg); err != nil {
		c.t.Fatal(err)
	}
}

// limit is how long a wait of this client's lasts.
func (c *client) limit() time.Duration {
	if c.wait > 0 {
		return c.wait
	}
	return waitTimeout
}

// waitMsg waits for the first message at or after position from that
// satisfies pred.
func (c *client) waitMsg(what string, from int, pred func(*message) bool) *message {
	c.t.Helper()
	limit := c.limit()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		for _, m := range c.msgs[min(from, len(c.msgs)):] {
			if pred(m) {
				c.mu.Unlock()
				return m
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-c.readDone:
			// Drain what was read before EOF, then give up.
			c.mu.Lock()
			for _, m := range c.msgs[min(from, len(c.msgs)):] {
				if pred(m) {
					c.mu.Unlock()
					return m
				}
			}
			c.mu.Unlock()
			c.t.Fatalf("apserver closed stdout while waiting for %s\n%s", what, c.dump(from))
		case <-deadline.C:
			c.t.Fatalf("timed out after %v waiting for %s; messages since #%d:\n%s", limit, what, from, c.dump(from))
		}
	}
}

// waitFor waits for the first notification or server request with method
// (from the start of the conversation) that satisfies pred (nil: any).
func (c *client) waitFor(method string, pred func(*message) bool) *message {
	c.t.Helper()
	return c.waitAfter(nil, method, pred)
}

// waitAfter is waitFor for messages after after (nil: from the start).
func (c *client) waitAfter(after *message, method string, pred func(*message) bool) *message {
	c.t.Helper()
	from := 0
	if after != nil {
		from = after.Seq + 1
	}
	return c.waitMsg(method, from, func(m *message) bool {
		return m.Method == method && (pred == nil || pred(m))
	})
}

// turnDone waits for turn/completed of turnID.
func (c *client) turnDone(turnID string) *message {
	c.t.Helper()
	return c.waitFor("turn/completed", func(m *message) bool { return m.str("turn.id") == turnID })
}

// snapshot returns a copy of the messages received so far.
func (c *client) snapshot() []*message {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*message(nil), c.msgs...)
}

// find returns the messages with method (any method when "") that satisfy
// pred, among those received so far.
func (c *client) find(method string, pred func(*message) bool) []*message {
	var out []*message
	for _, m := range c.snapshot() {
		if (method == "" || m.Method == method) && (pred == nil || pred(m)) {
			out = append(out, m)
		}
	}
	return out
}

// labelsBetween lists the labels of the messages strictly between a and b
// (a nil a: from the start; a nil b: to the end so far).
func (c *client) labelsBetween(a, b *message) []string {
	var out []string
	for _, m := range c.snapshot() {
		if a != nil && m.Seq <= a.Seq {
			continue
		}
		if b != nil && m.Seq >= b.Seq {
			break
		}
		out = append(out, m.label())
	}
	return out
}

// sync returns once apserver has handled everything it had for threadID
// before this call. policy/explain with a threadId is answered on the
// thread's goroutine, after what was queued there (requests, answers, the
// steps of a turn), and apserver writes replies and notifications in the
// order it makes them: what the thread did before is in the log when sync
// returns. Tests count what must not have happened after a sync, not
// after a quiet spell.
func (c *client) sync(threadID string) *message {
	c.t.Helper()
	return c.call("policy/explain", map[string]any{"threadId": threadID, "command": "true"})
}

// after returns the messages with method after m that satisfy pred (nil: any).
func (c *client) after(m *message, method string, pred func(*message) bool) []*message {
	return c.find(method, func(x *message) bool { return x.Seq > m.Seq && (pred == nil || pred(x)) })
}

// turnRunningAt returns the id of the turn that had started and not
// completed when m arrived, or "".
func (c *client) turnRunningAt(m *message) string {
	running := ""
	for _, x := range c.snapshot() {
		if x.Seq >= m.Seq {
			break
		}
		switch x.Method {
		case "turn/started":
			running = x.str("turn.id")
		case "turn/completed":
			if x.str("turn.id") == running {
				running = ""
			}
		}
	}
	return running
}

// quiet waits d and reports the messages that arrived meanwhile with method.
func (c *client) quiet(d time.Duration, method string, pred func(*message) bool) []*message {
	n := len(c.snapshot())
	time.Sleep(d)
	var out []*message
	for _, m := range c.snapshot()[n:] {
		if m.Method == method && (pred == nil || pred(m)) {
			out = append(out, m)
		}
	}
	return out
}

func (c *client) dump(from int) string {
	var sb strings.Builder
	for _, m := range c.snapshot()[min(from, len(c.snapshot())):] {
		s := m.Raw
		if len(s) > 400 {
			s = s[:400] + "…"
		}
		fmt.Fprintf(&sb, "  #%d %s\n", m.Seq, s)
	}
	return sb.String()
}

// initialize performs the handshake.
func (c *client) initialize() *message {
	c.t.Helper()
	m := c.call("initialize", map[string]any{
		"clientInfo": map[string]any{"name": "e2e", "title": "apserver e2e", "version": "0.0.1"},
	})
	c.notify("initialized", nil)
	return m
}

// close closes stdin and waits for a clean exit; it returns the exit error.
func (c *client) close() error {
	c.t.Helper()
	c.stdin.Close()
	select {
	case <-c.exited:
	case <-time.After(exitTimeout):
		c.t.Fatalf("apserver did not exit within %v of stdin closing", exitTimeout)
	}
	<-c.readDone
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.exitErr
}

// kill sends SIGKILL and waits for the process to be reaped.
func (c *client) kill() {
	c.t.Helper()
	if c.cmd == nil {
		c.t.Fatal("kill needs a process: this client runs in process")
	}
	c.mu.Lock()
	c.killed = true
	c.mu.Unlock()
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		c.t.Fatalf("SIGKILL: %v", err)
	}
	select {
	case <-c.exited:
	case <-time.After(exitTimeout):
		c.t.Fatal("apserver survived SIGKILL")
	}
	<-c.readDone
}

// ---------------------------------------------------------------------------
// Protocol helpers.

// startThread starts a thread in a fresh temp cwd with approvalPolicy and
// returns the thread id and its cwd.
func (c *client) startThread(approval string) (threadID, cwd string) {
	c.t.Helper()
	cwd = c.t.TempDir()
	return c.startThreadIn(cwd, approval), cwd
}

func (c *client) startThreadIn(cwd, approval string) string {
	c.t.Helper()
	params := map[string]any{"cwd": cwd}
	if approval != "" {
		params["approvalPolicy"] = approval
	}
	r := c.call("thread/start", params)
	id := r.str("thread.id")
	if id == "" {
		c.t.Fatalf("thread/start result has no thread.id: %s", r.Raw)
	}
	c.waitAfter(r, "thread/started", func(m *message) bool { return m.str("thread.id") == id })
	return id
}

// textInput is a UserInput list holding one text element.
func textInput(text string) []any {
	return []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}
}

// startTurn sends turn/start and returns its response (requiring a result)
// and the turn id.
func (c *client) startTurn(threadID, text string) (*message, string) {
	c.t.Helper()
	r := c.call("turn/start", map[string]any{"threadId": threadID, "input": textInput(text)})
	id := r.str("turn.id")
	if id == "" {
		c.t.Fatalf("turn/start result has no turn.id: %s", r.Raw)
	}
	return r, id
}

// runTurn starts a turn and waits for its turn/completed.
func (c *client) runTurn(threadID, text string) (start *message, done *message) {
	c.t.Helper()
	start, id := c.startTurn(threadID, text)
	return start, c.turnDone(id)
}

// itemPred matches item notifications for a turn by item type.
func itemOfType(turnID, typ string) func(*message) bool {
	return func(m *message) bool {
		return m.str("turnId") == turnID && m.str("item.type") == typ
	}
}

func forTurn(turnID string) func(*message) bool {
	return func(m *message) bool { return m.str("turnId") == turnID || m.str("turn.id") == turnID }
}

func statusIs(threadID, typ string, flags ...string) func(*message) bool {
	return func(m *message) bool {
		if m.str("threadId") != threadID || m.str("status.type") != typ {
			return false
		}
		if typ != "active" {
			return true
		}
		got, _ := m.get("status.activeFlags").([]any)
		if len(got) != len(flags) {
			return false
		}
		for i, f := range flags {
			if got[i] != f {
				return false
			}
		}
		return true
	}
}

// indexOf returns the position of the first label equal to want, or -1.
func indexOf(labels []string, want string) int {
	for i, l := range labels {
		if l == want {
			return i
		}
	}
	return -1
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// checkInvariants checks the ordering rules of protocol/codex/CORE.md §9 over the whole
// conversation: each turn starts once and completes once; items, deltas
// and turn-scoped notifications sit between their turn's turn/started and
// turn/completed; each item starts before its deltas and completes at most
// once; and (unless the process was killed) every server request gets
// exactly one serverRequest/resolved.
func (c *client) checkInvariants() {
	t := c.t
	type key struct{ turn, item string }
	turnStarted, turnCompleted := map[string]int{}, map[string]int{}
	itemStarted, itemCompleted := map[key]int{}, map[key]int{}
	requests, resolved := map[string]int{}, map[string]int{}
	inTurn := func(m *message, turnID string) {
		if _, ok := turnStarted[turnID]; !ok {
			t.Errorf("#%d %s for turn %s before its turn/started", m.Seq, m.Method, turnID)
		}
		if s, ok := turnCompleted[turnID]; ok {
			t.Errorf("#%d %s for turn %s after its turn/completed (#%d)", m.Seq, m.Method, turnID, s)
		}
	}
	for _, m := range c.snapshot() {
		if m.isRequest() {
			requests[string(m.ID)]++
			continue
		}
		switch m.Method {
		case "turn/started":
			id := m.str("turn.id")
			if s, dup := turnStarted[id]; dup {
				t.Errorf("#%d second turn/started for turn %s (first #%d)", m.Seq, id, s)
			}
			turnStarted[id] = m.Seq
		case "turn/completed":
			id := m.str("turn.id")
			if _, ok := turnStarted[id]; !ok {
				t.Errorf("#%d turn/completed for turn %s without turn/started", m.Seq, id)
			}
			if s, dup := turnCompleted[id]; dup {
				t.Errorf("#%d second turn/completed for turn %s (first #%d)", m.Seq, id, s)
			}
			turnCompleted[id] = m.Seq
		case "item/started":
			k := key{m.str("turnId"), m.str("item.id")}
			inTurn(m, k.turn)
			if s, dup := itemStarted[k]; dup {
				t.Errorf("#%d second item/started for item %s (first #%d)", m.Seq, k.item, s)
			}
			itemStarted[k] = m.Seq
		case "item/completed":
			k := key{m.str("turnId"), m.str("item.id")}
			inTurn(m, k.turn)
			if _, ok := itemStarted[k]; !ok {
				t.Errorf("#%d item/completed for item %s without item/started", m.Seq, k.item)
			}
			if s, dup := itemCompleted[k]; dup {
				t.Errorf("#%d second item/completed for item %s (first #%d)", m.Seq, k.item, s)
			}
			itemCompleted[k] = m.Seq
		case "item/agentMessage/delta", "item/commandExecution/outputDelta", "item/reasoning/summaryTextDelta",
			"item/reasoning/summaryPartAdded", "item/reasoning/textDelta":
			k := key{m.str("turnId"), m.str("itemId")}
			inTurn(m, k.turn)
			if _, ok := itemStarted[k]; !ok {
				t.Errorf("#%d %s for item %s before its item/started", m.Seq, m.Method, k.item)
			}
			if s, ok := itemCompleted[k]; ok {
				t.Errorf("#%d %s for item %s after its item/completed (#%d)", m.Seq, m.Method, k.item, s)
			}
		case "thread/tokenUsage/updated", "turn/plan/updated", "turn/diff/updated", "error":
			if id := m.str("turnId"); id != "" {
				inTurn(m, id)
			}
		case "serverRequest/resolved":
			id, _ := json.Marshal(m.get("requestId"))
			resolved[string(id)]++
			if requests[string(id)] == 0 {
				t.Errorf("#%d serverRequest/resolved for request %s, which was never sent", m.Seq, id)
			}
		}
	}
	c.mu.Lock()
	killed := c.killed
	c.mu.Unlock()
	if killed {
		return
	}
	for id := range requests {
		if resolved[id] != 1 {
			t.Errorf("server request %s got %d serverRequest/resolved, want exactly 1", id, resolved[id])
		}
	}
}
