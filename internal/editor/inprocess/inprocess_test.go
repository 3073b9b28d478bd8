package inprocess_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/internal/editor"
	"github.com/apserver/apserver/internal/editor/inprocess"
	"github.com/apserver/apserver/internal/wirecheck"
	"github.com/apserver/apserver/model/scripted"
)

// TestTurnWithApproval drives the in-process server as an editor would: a
// thread, a turn whose command needs approval, the approval answered, the
// turn completed; every line checked against the schemas; the end of the
// input ends the server.
func TestTurnWithApproval(t *testing.T) {
	t.Parallel()
	srv, err := scripted.Start(scripted.Script{Rules: []scripted.Rule{{Match: "make", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "echo made > made.txt"}}},
		{Text: "Made it."},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": srv.URL()}
	wire, model, dataDir := "responses", "scripted-model", t.TempDir()
	cfg, err := config.Load(config.LoadOptions{UserFile: filepath.Join(home, "config.toml"), Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Wire: &wire, Model: &model, DataDir: &dataDir}})
	if err != nil {
		t.Fatal(err)
	}
	v, err := wirecheck.Default()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := inprocess.Start(ctx, inprocess.Options{Config: cfg, Cwd: home})
	tr := v.NewTranscript()
	tr.RequireEmittedAtMs = true
	ed := s.Editor(editor.Options{Check: tr, Problem: func(err error) { t.Error(err) }})

	if _, err := ed.Initialize(ctx, "inprocess-test", "0.0.1"); err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	th, err := ed.Call(ctx, "thread/start", map[string]any{"cwd": cwd, "approvalPolicy": "untrusted"})
	if err != nil {
		t.Fatal(err)
	}
	threadID := th.Str("thread.id")
	turn, err := ed.Call(ctx, "turn/start", map[string]any{"threadId": threadID,
		"input": []any{map[string]any{"type": "text", "text": "make the file", "text_elements": []any{}}}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := ed.WaitFor(ctx, nil, "item/commandExecution/requestApproval", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !req.IsRequest() || req.Str("threadId") != threadID {
		t.Errorf("approval request = %s", req)
	}
	if err := ed.Answer(req, map[string]any{"decision": "accept"}); err != nil {
		t.Fatal(err)
	}
	done, err := ed.TurnDone(ctx, turn.Str("turn.id"))
	if err != nil {
		t.Fatal(err)
	}
	if got := done.Str("turn.status"); got != "completed" {
		t.Errorf("turn %s, want completed: %s", got, done)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "made.txt")); string(b) != "made\n" {
		t.Errorf("made.txt = %q (%v), want the approved command's output", b, err)
	}
	if r, err := ed.Call(ctx, "thread/start", map[string]any{"ephemeral": true}); err != nil || r.Str("cwd") != home {
		t.Errorf("thread/start without a cwd works in %q (%v), want the server's %s", r.Str("cwd"), err, home)
	}
	if bad, err := ed.Request(ctx, "thread/start", map[string]any{"sandbox": "open"}); err != nil || bad.Error == nil || bad.Error.Code != -32602 {
		t.Errorf("thread/start with a bad sandbox = %v (%v), want -32602", bad, err)
	}

	if err := s.Input().Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("the server did not stop at the end of its input")
	}
	<-ed.Done()
	if err := s.Err(); err != nil {
		t.Errorf("server: %v", err)
	}
	if u := tr.Unanswered(); len(u) != 0 {
		t.Errorf("unanswered: %v", u)
	}
}
