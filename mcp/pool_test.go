package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apserver/apserver/internal/mcptest"
	"github.com/apserver/apserver/internal/proctest"
	"github.com/apserver/apserver/mcp"
)

var testBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mcptest")
	if err != nil {
		panic(err)
	}
	testBin, err = mcptest.Build(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer is a log sink safe for the pool's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func stdioServer(t *testing.T, name string) (mcp.Server, string) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	return mcp.Server{Name: name, Command: testBin, Env: append(os.Environ(), mcptest.EnvPIDFile+"="+pidFile), StartupTimeout: 10 * time.Second}, pidFile
}

func readPID(t *testing.T, f string) int {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// alive reports whether pid is a running (not zombie) process.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

func text(t *testing.T, r mcp.Result) string {
	t.Helper()
	var sb strings.Builder
	for _, c := range r.Content {
		var tc struct{ Type, Text string }
		if err := json.Unmarshal(c, &tc); err != nil {
			t.Fatal(err)
		}
		sb.WriteString(tc.Text)
	}
	return sb.String()
}

func TestStdioTools(t *testing.T) {
	logs := &syncBuffer{}
	srv, pidFile := stdioServer(t, "t")
	var elicited []mcp.ElicitRequest
	var emu sync.Mutex
	var states []string
	p := mcp.NewPool([]mcp.Server{srv}, mcp.Options{
		Log: slog.New(slog.NewTextHandler(logs, nil)),
		Elicit: func(ctx context.Context, server string, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
			emu.Lock()
			elicited = append(elicited, req)
			emu.Unlock()
			return mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
		OnState: func(server string, st mcp.State, err error) {
			emu.Lock()
			states = append(states, st.String())
			emu.Unlock()
		},
	})
	defer p.Close()
	ctx := context.Background()

	if st, _ := p.Status("t"); st.State != mcp.NotStarted {
		t.Fatalf("before use: state %v, want notStarted (lazy start)", st.State)
	}
	tools, err := p.Tools(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]mcp.Tool{}
	for _, tl := range tools {
		byName[tl.Name] = tl
	}
	for _, n := range []string{mcptest.ToolEcho, mcptest.ToolFail, mcptest.ToolStall, mcptest.ToolBig, mcptest.ToolAsk, mcptest.ToolCrash, mcptest.ToolWrite, mcptest.ToolPlain} {
		if _, ok := byName[n]; !ok {
			t.Errorf("tool %s not listed", n)
		}
	}
	if a := byName[mcptest.ToolEcho].Annotations; a == nil || !a.ReadOnly {
		t.Errorf("echo annotations = %+v, want read-only", a)
	}
	if a := byName[mcptest.ToolWrite].Annotations; a == nil || a.Destructive == nil || !*a.Destructive {
		t.Errorf("write annotations = %+v, want destructive", a)
	}
	if !strings.Contains(string(byName[mcptest.ToolEcho].InputSchema), `"text"`) {
		t.Errorf("echo input schema = %s", byName[mcptest.ToolEcho].InputSchema)
	}

	r, err := p.Call(ctx, "t", mcptest.ToolEcho, json.RawMessage(`{"text":"hi"}`), nil)
	if err != nil || r.IsError || text(t, r) != "echo: hi" || !strings.Contains(string(r.Structured), `"hi"`) {
		t.Fatalf("echo = %+v, %v", r, err)
	}
	r, err = p.Call(ctx, "t", mcptest.ToolFail, nil, nil)
	if err != nil || !r.IsError {
		t.Fatalf("fail = %+v, %v; want a result with isError", r, err)
	}
	r, err = p.Call(ctx, "t", mcptest.ToolBig, nil, nil)
	if err != nil || len(text(t, r)) != mcptest.BigSize {
		t.Fatalf("big: %d bytes, %v", len(text(t, r)), err)
	}
	r, err = p.Call(ctx, "t", mcptest.ToolAsk, nil, nil)
	if err != nil || text(t, r) != "action=accept name=Ada" {
		t.Fatalf("ask = %q, %v", text(t, r), err)
	}
	emu.Lock()
	if len(elicited) != 1 || elicited[0].Message != "What is your name?" || elicited[0].Mode != "form" || !strings.Contains(string(elicited[0].RequestedSchema), `"name"`) {
		t.Errorf("elicitations = %+v", elicited)
	}
	emu.Unlock()

	// A stalled call ends with its context, after reporting progress.
	progress := make(chan string, 4)
	sctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := p.Call(sctx, "t", mcptest.ToolStall, nil, func(m string) { progress <- m })
		done <- err
	}()
	if m := <-progress; m != "stalling" {
		t.Errorf("progress = %q", m)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("stall: %v, want context.Canceled", err)
	}
	// The server still serves after a cancelled call.
	if _, err := p.Call(ctx, "t", mcptest.ToolEcho, json.RawMessage(`{"text":"again"}`), nil); err != nil {
		t.Fatal(err)
	}

	c, err := p.ReadResource(ctx, "t", "mcptest://readme")
	if err != nil || len(c) != 1 || !strings.Contains(string(c[0]), "mcptest readme") {
		t.Fatalf("resource = %s, %v", c, err)
	}
	if st, _ := p.Status("t"); st.State != mcp.Connected || len(st.Resources) != 1 || !strings.Contains(string(st.Info), "mcptest") {
		t.Errorf("status = %+v", st)
	}
	if !strings.Contains(logs.String(), "mcptestserver: started") {
		t.Errorf("the server's stderr is not in the log:\n%s", logs.String())
	}

	pid := readPID(t, pidFile)
	p.Close()
	if alive(pid) {
		t.Errorf("server process %d still running after Close", pid)
	}
	emu.Lock()
	if strings.Join(states, ",") != "starting,connected" {
		t.Errorf("states = %v", states)
	}
	emu.Unlock()
}

func TestCrashRestart(t *testing.T) {
	srv, pidFile := stdioServer(t, "c")
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	failed := make(chan string, 4)
	p := mcp.NewPool([]mcp.Server{srv}, mcp.Options{
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
		OnState: func(server string, st mcp.State, err error) {
			if st == mcp.Failed {
				failed <- err.Error()
			}
		},
	})
	defer p.Close()
	ctx := context.Background()
	if _, err := p.Call(ctx, "c", mcptest.ToolEcho, json.RawMessage(`{"text":"1"}`), nil); err != nil {
		t.Fatal(err)
	}
	pid1 := readPID(t, pidFile)
	if _, err := p.Call(ctx, "c", mcptest.ToolCrash, nil, nil); err == nil {
		t.Fatal("crash: no error")
	}
	<-failed
	st, _ := p.Status("c")
	if st.State != mcp.Failed || st.Err == "" {
		t.Fatalf("after the crash: %+v, want failed with an error", st)
	}
	r, err := p.Call(ctx, "c", mcptest.ToolEcho, json.RawMessage(`{"text":"2"}`), nil)
	if err != nil || text(t, r) != "echo: 2" {
		t.Fatalf("after restart: %v %v", r, err)
	}
	if pid2 := readPID(t, pidFile); pid2 == pid1 {
		t.Errorf("not restarted: same pid %d", pid1)
	}
}

func TestStartFailureBackoff(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	p := mcp.NewPool([]mcp.Server{{Name: "x", Command: filepath.Join(t.TempDir(), "missing")}}, mcp.Options{
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	})
	defer p.Close()
	ctx := context.Background()
	_, err := p.Tools(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("err = %v", err)
	}
	// Within the backoff, no new attempt: the error says when.
	_, err = p.Tools(ctx, "x")
	if err == nil || !strings.Contains(err.Error(), "next start after") {
		t.Fatalf("within backoff: %v", err)
	}
	mu.Lock()
	now = now.Add(1100 * time.Millisecond)
	mu.Unlock()
	_, err = p.Tools(ctx, "x")
	if err == nil || strings.Contains(err.Error(), "next start after") {
		t.Fatalf("after 1 s: %v, want a new attempt", err)
	}
	// Two failures: the backoff is 2 s now.
	mu.Lock()
	now = now.Add(1100 * time.Millisecond)
	mu.Unlock()
	if _, err = p.Tools(ctx, "x"); err == nil || !strings.Contains(err.Error(), "next start after") {
		t.Fatalf("second backoff: %v", err)
	}
}

func TestHTTP(t *testing.T) {
	url := mcptest.StartHTTP(t, testBin, "s3cret")
	p := mcp.NewPool([]mcp.Server{
		{Name: "good", URL: url, Headers: map[string]string{"Authorization": "Bearer s3cret"}},
		{Name: "bad", URL: url, Headers: map[string]string{"Authorization": "Bearer wrong"}},
	}, mcp.Options{Elicit: func(ctx context.Context, server string, req mcp.ElicitRequest) (mcp.ElicitResult, error) {
		return mcp.ElicitResult{Action: "decline"}, nil
	}})
	defer p.Close()
	ctx := context.Background()
	r, err := p.Call(ctx, "good", mcptest.ToolEcho, json.RawMessage(`{"text":"web"}`), nil)
	if err != nil || text(t, r) != "echo: web" {
		t.Fatalf("echo over HTTP = %+v, %v", r, err)
	}
	r, err = p.Call(ctx, "good", mcptest.ToolAsk, nil, nil)
	if err != nil || !strings.HasPrefix(text(t, r), "action=decline") {
		t.Fatalf("ask over HTTP = %q, %v", text(t, r), err)
	}
	if _, err := p.Tools(ctx, "bad"); err == nil {
		t.Fatal("a wrong bearer token connected")
	}
	if st, _ := p.Status("bad"); st.State != mcp.Failed {
		t.Errorf("bad: %v", st.State)
	}
}

// TestCloseKillsProcessGroup: what a stdio server started itself (npx
// starting node, say) goes too, judged from outside by its command line.
func TestCloseKillsProcessGroup(t *testing.T) {
	mark := fmt.Sprintf("%d", 4_000_000+os.Getpid()%1_000_000)
	srv := mcp.Server{Name: "g", Command: "sh", Args: []string{"-c", "sleep " + mark + " & exec " + testBin}, Env: os.Environ()}
	p := mcp.NewPool([]mcp.Server{srv}, mcp.Options{})
	if _, err := p.Tools(context.Background(), "g"); err != nil {
		t.Fatal(err)
	}
	if len(proctest.Marked(mark)) == 0 {
		t.Fatal("the grandchild is not running: the test proves nothing")
	}
	p.Close()
	// SIGKILL was sent to the group before Close returned; the kernel
	// takes a moment to tear the process down.
	deadline := time.Now().Add(5 * time.Second)
	for len(proctest.Marked(mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pids := proctest.Marked(mark); len(pids) > 0 {
		t.Errorf("grandchild %v still running after Close", pids)
	}
}

// TestReload: a changed server is stopped and the new configuration is
// used on next use; an unchanged one keeps its process.
func TestReload(t *testing.T) {
	a, pidA := stdioServer(t, "a")
	b, pidB := stdioServer(t, "b")
	p := mcp.NewPool([]mcp.Server{a, b}, mcp.Options{})
	defer p.Close()
	ctx := context.Background()
	for _, n := range []string{"a", "b"} {
		if _, err := p.Tools(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	a1, b1 := readPID(t, pidA), readPID(t, pidB)
	b2 := b
	b2.Env = append(append([]string{}, b.Env...), "X_CHANGED=1")
	p.Reload([]mcp.Server{a, b2})
	if alive(b1) {
		t.Errorf("changed server b (%d) still running after Reload", b1)
	}
	if st, _ := p.Status("b"); st.State != mcp.NotStarted {
		t.Errorf("b after reload: %v", st.State)
	}
	if _, err := p.Tools(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if readPID(t, pidB) == b1 || !alive(a1) {
		t.Errorf("b not restarted or a stopped: b %d→%d, a alive %v", b1, readPID(t, pidB), alive(a1))
	}
	p.Reload([]mcp.Server{a})
	if _, err := p.Tools(ctx, "b"); err == nil || !errors.Is(err, mcp.ErrUnknownServer) {
		t.Errorf("removed server: %v", err)
	}
}

// TestStartupTimeout: a server that never answers initialize fails after
// its startup timeout, and is not left running.
func TestStartupTimeout(t *testing.T) {
	mark := fmt.Sprintf("%d", 5_000_000+os.Getpid()%1_000_000)
	p := mcp.NewPool([]mcp.Server{{Name: "mute", Command: "sleep", Args: []string{mark}, StartupTimeout: 300 * time.Millisecond}}, mcp.Options{})
	defer p.Close()
	start := time.Now()
	_, err := p.Tools(context.Background(), "mute")
	if err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Fatalf("err = %v, want the startup deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("failed after %v, want about the 300 ms startup timeout", d)
	}
	if st, _ := p.Status("mute"); st.State != mcp.Failed {
		t.Errorf("state %v, want failed", st.State)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(proctest.Marked(mark)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if pids := proctest.Marked(mark); len(pids) > 0 {
		t.Errorf("the mute server %v is still running", pids)
	}
}
