package e2e

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/apserver/apserver/internal/wirecheck"
	"github.com/apserver/apserver/model/scripted"
)

// listener is `apserver serve --listen …` running for a test.
type listener struct {
	url     string // ws://IP:PORT or unix://PATH, as apserver printed it
	dataDir string
	log     string // the --trace log file
	cmd     *exec.Cmd
	stderr  *syncBuffer
}

// serverEnv is the environment of an apserver process: a private home and
// the scripted model.
func serverEnv(t *testing.T, home string, model *scripted.Server) []string {
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"OPENAI_API_KEY=test",
	}
	if model != nil {
		env = append(env, "OPENAI_BASE_URL="+model.URL())
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == "HOME", strings.HasPrefix(k, "XDG_"), strings.HasPrefix(k, "OPENAI_"),
			strings.HasPrefix(k, "APSERVER_"), strings.HasPrefix(k, "CODEX_"), strings.HasPrefix(k, "ANTHROPIC_"):
			continue
		}
		env = append(env, kv)
	}
	return env
}

// startListener starts apserver serving listen (plus args) in workspace dir
// and waits for the line naming its address. It is stopped with SIGTERM
// at the end of the test.
func startListener(t *testing.T, model *scripted.Server, dir, listen string, args ...string) *listener {
	t.Helper()
	home := t.TempDir()
	cfgFile := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfgFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	l := &listener{dataDir: t.TempDir(), log: filepath.Join(t.TempDir(), "apserver.log"), stderr: &syncBuffer{}}
	all := append([]string{"serve", "--listen", listen, "--data-dir", l.dataDir, "--config", cfgFile,
		"--wire", "responses", "--model", "gpt-5.5", "--trace", "--log-file", l.log}, args...)
	l.cmd = exec.Command(binPath, all...)
	l.cmd.Dir = dir
	l.cmd.Env = serverEnv(t, home, model)
	pr, pw := io.Pipe()
	l.cmd.Stderr = io.MultiWriter(l.stderr, pw)
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { l.cmd.Wait(); pw.Close(); close(exited) }()
	t.Cleanup(func() {
		l.cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(exitTimeout):
			t.Errorf("apserver did not exit within %v of SIGINT", exitTimeout)
			l.cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("apserver stderr:\n%s", l.stderr.String())
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "apserver: listening on "); ok {
				found <- u
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case l.url = <-found:
	case <-exited:
		t.Fatalf("apserver exited before listening:\n%s", l.stderr.String())
	case <-time.After(waitTimeout):
		t.Fatalf("apserver did not print its address:\n%s", l.stderr.String())
	}
	return l
}

// httpClient reaches the listener over TCP or its unix socket.
func (l *listener) httpClient() (*http.Client, string) {
	if path, ok := strings.CutPrefix(l.url, "unix://"); ok {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", path)
		}}
		return &http.Client{Transport: tr}, "http://apserver"
	}
	return http.DefaultClient, "http://" + strings.TrimPrefix(l.url, "ws://")
}

// wsURL is the WebSocket URL of the listener: "/" over TCP, "/rpc" over
// the unix socket (as Codex's clients connect).
func (l *listener) wsURL() string {
	_, base := l.httpClient()
	if strings.HasPrefix(l.url, "unix://") {
		return strings.Replace(base, "http://", "ws://", 1) + "/rpc"
	}
	return strings.Replace(base, "http://", "ws://", 1) + "/"
}

// wsClient is a fake editor on one WebSocket connection. Every message
// the server sends is validated against the schemas.
type wsClient struct {
	t  *testing.T
	c  *websocket.Conn
	tr *wirecheck.Transcript

	mu      sync.Mutex
	nextID  int
	msgs    []*message
	changed chan struct{}
	done    chan struct{}
}

// dialWS connects with the given headers; the HTTP status is returned when
// the upgrade is refused.
func dialWS(t *testing.T, l *listener, header http.Header) (*wsClient, int, error) {
	t.Helper()
	hc, _ := l.httpClient()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, l.wsURL(), &websocket.DialOptions{HTTPClient: hc, HTTPHeader: header})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		return nil, status, err
	}
	c.SetReadLimit(64 << 20)
	w := &wsClient{t: t, c: c, tr: validator.NewTranscript(), changed: make(chan struct{}), done: make(chan struct{})}
	w.tr.RequireEmittedAtMs = true
	go w.readLoop()
	t.Cleanup(func() { c.Close(websocket.StatusNormalClosure, ""); <-w.done })
	return w, 0, nil
}

func (w *wsClient) readLoop() {
	defer close(w.done)
	for {
		_, b, err := w.c.Read(context.Background())
		if err != nil {
			return
		}
		if err := w.tr.Server(b); err != nil {
			w.t.Errorf("wirecheck: %v\n%s", err, b)
		}
		var env struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  *rpcError       `json:"error"`
		}
		if err := json.Unmarshal(b, &env); err != nil {
			w.t.Errorf("server sent a message that is not a JSON object: %s", b)
			continue
		}
		m := &message{Raw: string(b), Method: env.Method, Params: env.Params, Result: env.Result, Error: env.Error, ID: env.ID}
		body := env.Params
		if m.isResponse() {
			body = env.Result
		}
		if len(body) > 0 {
			json.Unmarshal(body, &m.params)
		}
		w.mu.Lock()
		m.Seq = len(w.msgs)
		w.msgs = append(w.msgs, m)
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

func (w *wsClient) write(v any) {
	w.t.Helper()
	b, _ := json.Marshal(v)
	if _, ok := v.(map[string]any)["method"]; ok {
		w.tr.Client(b)
	} else if err := w.tr.ClientAnswer(b); err != nil {
		w.t.Errorf("wirecheck (client answer): %v", err)
	}
	if err := w.c.Write(context.Background(), websocket.MessageText, b); err != nil {
		w.t.Fatalf("writing: %v", err)
	}
}

// wait returns the first message from index from on that pred accepts.
func (w *wsClient) wait(what string, from int, pred func(*message) bool) *message {
	w.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		w.mu.Lock()
		for _, m := range w.msgs[from:] {
			if pred(m) {
				w.mu.Unlock()
				return m
			}
		}
		from = len(w.msgs)
		ch := w.changed
		w.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			w.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (w *wsClient) call(method string, params any) *message {
	w.t.Helper()
	w.mu.Lock()
	w.nextID++
	id := w.nextID
	w.mu.Unlock()
	w.write(map[string]any{"id": id, "method": method, "params": params})
	key := fmt.Sprint(id)
	m := w.wait("the answer to "+method, 0, func(m *message) bool { return m.isResponse() && string(m.ID) == key })
	if m.Error != nil {
		w.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m
}

func (w *wsClient) initialize() {
	w.t.Helper()
	w.call("initialize", map[string]any{"clientInfo": map[string]any{"name": "e2e", "version": "1.0"}})
	w.write(map[string]any{"method": "initialized"})
}

func (w *wsClient) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.msgs)
}

func (w *wsClient) has(pred func(*message) bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.msgs {
		if pred(m) {
			return true
		}
	}
	return false
}

const testToken = "e2e-capability-token-7f3a"

func tokenFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func bearer(tok string) http.Header {
	return http.Header{"Authorization": {"Bearer " + tok}}
}

// TestListenAuth attacks the listeners from outside: without the token, or
// with a wrong one, the upgrade gets 401; a browser Origin gets 403 even
// with the token; the unix socket is 0600; a non-loopback address without
// auth is refused at start; the health endpoints answer.
func TestListenAuth(t *testing.T) {
	t.Parallel()
	ws := startListener(t, nil, t.TempDir(), "ws://127.0.0.1:0", "--ws-auth", "capability-token", "--ws-token-file", tokenFile(t))
	sock := filepath.Join(t.TempDir(), "s", "apserver.sock")
	ux := startListener(t, nil, t.TempDir(), "unix://"+sock, "--ws-auth", "capability-token", "--ws-token-file", tokenFile(t))
	for _, l := range []*listener{ws, ux} {
		for name, h := range map[string]http.Header{
			"no token":    nil,
			"wrong token": bearer("not-the-token"),
			"not bearer":  {"Authorization": {"Basic " + testToken}},
		} {
			if _, status, err := dialWS(t, l, h); err == nil || status != http.StatusUnauthorized {
				t.Errorf("%s, %s: status %d (err %v), want 401", l.url, name, status, err)
			}
		}
		h := bearer(testToken)
		h.Set("Origin", "https://evil.example")
		if _, status, err := dialWS(t, l, h); err == nil || status != http.StatusForbidden {
			t.Errorf("%s, browser Origin: status %d (err %v), want 403", l.url, status, err)
		}
		c, _, err := dialWS(t, l, bearer(testToken))
		if err != nil {
			t.Fatalf("%s with the token: %v", l.url, err)
		}
		c.initialize()
		hc, base := l.httpClient()
		for _, p := range []string{"/readyz", "/healthz"} {
			resp, err := hc.Get(base + p)
			if err != nil || resp.StatusCode != 200 {
				t.Errorf("%s%s: %v %v", l.url, p, resp, err)
			} else {
				resp.Body.Close()
			}
		}
	}
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("unix socket mode %v, want 0600", fi.Mode().Perm())
	}

	// The token given as its SHA-256, and an Origin allowed by a flag.
	sum := sha256.Sum256([]byte(testToken))
	hx := startListener(t, nil, t.TempDir(), "ws://127.0.0.1:0", "--ws-auth", "capability-token",
		"--ws-token-sha256", hex.EncodeToString(sum[:]), "--ws-allow-origin", "https://ok.example")
	h := bearer(testToken)
	h.Set("Origin", "https://ok.example")
	if _, _, err := dialWS(t, hx, h); err != nil {
		t.Errorf("token by SHA-256 with an allowed Origin: %v", err)
	}
	h.Set("Origin", "https://evil.example")
	if _, status, err := dialWS(t, hx, h); err == nil || status != http.StatusForbidden {
		t.Errorf("an Origin not allowed: status %d (err %v), want 403", status, err)
	}
	if _, status, err := dialWS(t, hx, bearer("wrong")); err == nil || status != http.StatusUnauthorized {
		t.Errorf("wrong token against --ws-token-sha256: status %d (err %v), want 401", status, err)
	}

	// Reachable from other machines without auth: refused before binding.
	cmd := exec.Command(binPath, "serve", "--listen", "ws://0.0.0.0:0", "--data-dir", t.TempDir())
	cmd.Env = serverEnv(t, t.TempDir(), nil)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--ws-auth capability-token") {
		t.Errorf("--listen ws://0.0.0.0:0 without auth: err %v, output %q; want a refusal naming --ws-auth", err, out)
	}
}

// TestListenTwoClients: each connection gets the notifications of the
// threads it started or resumed, not the others'; a thread outlives the
// connection that started it, and an approval it was waiting for reaches
// the client that resumes it, whose answer runs the command.
func TestListenTwoClients(t *testing.T) {
	t.Parallel()
	model := startModel(t,
		scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "Hello there."}}},
		scripted.Rule{Match: "escalate", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "exec_command", Arguments: `{"cmd":"touch reconnect-marker","sandbox_permissions":"require_escalated","justification":"needs it"}`}}},
			{Text: "Done."},
		}},
	)
	dir := t.TempDir()
	l := startListener(t, model, dir, "ws://127.0.0.1:0", "--ws-auth", "none")
	a, _, err := dialWS(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.initialize()
	b, _, err := dialWS(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.initialize()

	// A's turn streams to A only.
	tid := a.call("thread/start", map[string]any{"cwd": dir}).str("thread.id")
	a.call("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "hello"}}})
	a.wait("turn/completed", 0, func(m *message) bool { return m.Method == "turn/completed" })
	bt := b.call("thread/start", map[string]any{"cwd": dir}).str("thread.id")
	b.call("turn/start", map[string]any{"threadId": bt, "input": []any{map[string]any{"type": "text", "text": "hello"}}})
	b.wait("B's turn/completed", 0, func(m *message) bool { return m.Method == "turn/completed" })
	if b.has(func(m *message) bool { return m.str("threadId") == tid }) {
		t.Errorf("B got a notification of A's thread")
	}
	if a.has(func(m *message) bool { return m.str("threadId") == bt }) {
		t.Errorf("A got a notification of B's thread")
	}

	// A starts a turn that waits for an approval, then goes away.
	a.call("turn/start", map[string]any{"threadId": tid, "input": []any{map[string]any{"type": "text", "text": "escalate"}}})
	req := a.wait("the approval request", 0, func(m *message) bool { return m.Method == "item/commandExecution/requestApproval" })
	if req.get("availableDecisions") == nil {
		t.Errorf("approval request without availableDecisions: %s", req.Raw)
	}
	a.c.Close(websocket.StatusNormalClosure, "")
	<-a.done

	// B resumes the thread: the same request comes to B, and B's answer
	// runs the command.
	from := b.count()
	b.call("thread/resume", map[string]any{"threadId": tid})
	again := b.wait("the approval re-sent", from, func(m *message) bool { return m.Method == "item/commandExecution/requestApproval" })
	if string(again.ID) != string(req.ID) || again.str("itemId") != req.str("itemId") {
		t.Errorf("re-sent request %s, want the same id and item as %s", again.Raw, req.Raw)
	}
	b.write(map[string]any{"id": json.RawMessage(again.ID), "result": map[string]any{"decision": "accept"}})
	b.wait("the turn's end", from, func(m *message) bool { return m.Method == "turn/completed" && m.str("threadId") == tid })
	if _, err := os.Stat(filepath.Join(dir, "reconnect-marker")); err != nil {
		t.Errorf("the approved command did not run: %v", err)
	}
}

// TestListenReleasesEphemeral: an ephemeral thread (the Codex TUI makes one
// per prompt to title it) is unloaded once its last client unsubscribes or
// disconnects; a stored thread stays loaded for whoever resumes it.
func TestListenReleasesEphemeral(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "hello", Steps: []scripted.Step{{Text: "Hi."}}})
	dir := t.TempDir()
	l := startListener(t, model, dir, "ws://127.0.0.1:0", "--ws-auth", "none")
	a, _, err := dialWS(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	a.initialize()
	loaded := func(c *wsClient, id string) bool {
		return strings.Contains(c.call("thread/loaded/list", map[string]any{}).Raw, id)
	}
	waitUnloaded := func(c *wsClient, id string) {
		t.Helper()
		deadline := time.Now().Add(waitTimeout)
		for loaded(c, id) {
			if time.Now().After(deadline) {
				t.Fatalf("thread %s still loaded", id)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	run := func(c *wsClient, ephemeral bool) string {
		id := c.call("thread/start", map[string]any{"cwd": dir, "ephemeral": ephemeral}).str("thread.id")
		from := c.count()
		c.call("turn/start", map[string]any{"threadId": id, "input": []any{map[string]any{"type": "text", "text": "hello"}}})
		c.wait("turn/completed", from, func(m *message) bool { return m.Method == "turn/completed" && m.str("threadId") == id })
		return id
	}
	eph, kept := run(a, true), run(a, false)
	if m := a.call("thread/unsubscribe", map[string]any{"threadId": eph}); m.str("status") != "unsubscribed" {
		t.Errorf("thread/unsubscribe = %s", m.Raw)
	}
	a.call("thread/unsubscribe", map[string]any{"threadId": kept})
	waitUnloaded(a, eph)
	if !loaded(a, kept) {
		t.Errorf("a stored thread was unloaded on unsubscribe")
	}

	// A client that goes away without unsubscribing releases it too.
	eph2 := run(a, true)
	a.c.Close(websocket.StatusNormalClosure, "")
	<-a.done
	b, _, err := dialWS(t, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.initialize()
	waitUnloaded(b, eph2)
}

// TestListenWatchesPerClient: fs/watch ids are each client's own: two
// clients may use the same one, and each gets only its own fs/changed,
// with its id.
func TestListenWatchesPerClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	l := startListener(t, nil, dir, "ws://127.0.0.1:0", "--ws-auth", "none")
	a, b := twoClients(t, l)
	wa, wb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.Mkdir(wa, 0o755)
	os.Mkdir(wb, 0o755)
	a.call("fs/watch", map[string]any{"watchId": "w", "path": wa})
	b.call("fs/watch", map[string]any{"watchId": "w", "path": wb})
	fromB := b.count()
	os.WriteFile(filepath.Join(wa, "x"), []byte("1"), 0o644)
	m := a.wait("A's fs/changed", 0, func(m *message) bool { return m.Method == "fs/changed" })
	if m.str("watchId") != "w" || !strings.Contains(m.Raw, filepath.Join(wa, "x")) {
		t.Errorf("A got %s, want watchId w and a/x", m.Raw)
	}
	os.WriteFile(filepath.Join(wb, "y"), []byte("1"), 0o644)
	m = b.wait("B's fs/changed", fromB, func(m *message) bool { return m.Method == "fs/changed" })
	if m.str("watchId") != "w" || strings.Contains(m.Raw, filepath.Join(wa, "x")) {
		t.Errorf("B got %s, want only its own watch", m.Raw)
	}
	if a.has(func(m *message) bool { return m.Method == "fs/changed" && strings.Contains(m.Raw, wb) }) {
		t.Errorf("A got B's change")
	}
	a.call("fs/unwatch", map[string]any{"watchId": "w"})
	// B's watch is still there: its id is taken for B, not for A.
	if m := a.call("fs/watch", map[string]any{"watchId": "w", "path": wa}); m.str("path") == "" {
		t.Errorf("A could not reuse its id: %s", m.Raw)
	}
}

// TestListenLoopbackTokenByDefault: a loopback ws:// listener given no
// auth still requires a capability token (any local process, another
// user's included, can reach the port): apserver writes one, readable by
// its owner only, into the data dir and says where. Codex's TUI presents
// it with --remote-auth-token-env. `--ws-auth none` opts out, on loopback
// only.
func TestListenLoopbackTokenByDefault(t *testing.T) {
	t.Parallel()
	l := startListener(t, nil, t.TempDir(), "ws://127.0.0.1:0")
	path := filepath.Join(l.dataDir, "ws-token")
	if !strings.Contains(l.stderr.String(), path) {
		t.Errorf("stderr does not name the token file %s:\n%s", path, l.stderr.String())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(path)
	tok := strings.TrimSpace(string(b))
	for name, h := range map[string]http.Header{"no token": nil, "wrong token": bearer("guess")} {
		if _, status, err := dialWS(t, l, h); err == nil || status != http.StatusUnauthorized {
			t.Errorf("%s: status %d (err %v), want 401", name, status, err)
		}
	}
	c, _, err := dialWS(t, l, bearer(tok))
	if err != nil {
		t.Fatalf("with the token from %s: %v", path, err)
	}
	c.initialize()

	open := startListener(t, nil, t.TempDir(), "ws://127.0.0.1:0", "--ws-auth", "none")
	if _, _, err := dialWS(t, open, nil); err != nil {
		t.Errorf("--ws-auth none: %v", err)
	}
	cmd := exec.Command(binPath, "serve", "--listen", "ws://0.0.0.0:0", "--ws-auth", "none", "--data-dir", t.TempDir())
	cmd.Env = serverEnv(t, t.TempDir(), nil)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "--ws-auth capability-token") {
		t.Errorf("--ws-auth none on 0.0.0.0: err %v, output %q; want a refusal", err, out)
	}
}

// twoClients dials l twice and initializes both connections.
func twoClients(t *testing.T, l *listener) (a, b *wsClient) {
	t.Helper()
	var cs [2]*wsClient
	for i := range cs {
		c, _, err := dialWS(t, l, nil)
		if err != nil {
			t.Fatal(err)
		}
		c.initialize()
		cs[i] = c
	}
	return cs[0], cs[1]
}
