package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/internal/mcptest"
	"github.com/apserver/apserver/model/scripted"
)

// TestCodexTUIMCP: Codex's own TUI (each of codexTUIVersions, from npm), over ws, against an
// apserver with an MCP server configured: a turn calls one of its tools
// (the TUI shows "Called mcptest.echo" and the result), /mcp lists the
// server as connected with its tools, a destructive tool's approval is
// Codex's own dialog, and the server's question (an elicitation) is a form
// the user fills in; every message is checked against the schemas.
func TestCodexTUIMCP(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found: cannot install the Codex TUI")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux not found: the Codex TUI test needs it")
	}
	for _, version := range codexTUIVersions() {
		t.Run(version, func(t *testing.T) { runTUIMCP(t, installCodex(t, version)) })
	}
}

func runTUIMCP(t *testing.T, codex string) {
	bin := mcpTestServer(t)
	cfg := filepath.Join(t.TempDir(), "config.toml")
	written := filepath.Join(t.TempDir(), "written")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[mcp_servers.mcptest]\ncommand = %q\nenv = { %s = %q }\n", bin, mcptest.EnvWriteFile, written)), 0o600); err != nil {
		t.Fatal(err)
	}
	model := startModel(t,
		scripted.Rule{Match: "single-line task title", Steps: []scripted.Step{{Text: `{"title":"Scripted title"}`}}},
		scripted.Rule{Match: "use the echo tool", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "mcp__mcptest__echo", Arguments: `{"text":"from the TUI"}`}}},
			{Text: "The echo came back."},
		}},
		scripted.Rule{Match: "ask my name", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "mcp__mcptest__ask", Arguments: `{}`}}},
			{Text: "Asked."},
		}},
		scripted.Rule{Match: "write it down", Steps: []scripted.Step{
			{ToolCalls: []scripted.ToolCall{{Name: "mcp__mcptest__write", Arguments: `{"text":"approved in the TUI"}`}}},
			{Text: "Written."},
		}},
	)
	dir := t.TempDir()
	tok := tokenFile(t)
	l := startListener(t, model, dir, "ws://127.0.0.1:0", "--ws-auth", "capability-token", "--ws-token-file", tok, "--config", cfg)

	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	u := &tui{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock"), captures: os.Getenv("APSERVER_TUI_CAPTURES")}
	u.tmux("new-session", "-d", "-s", "keep", "sleep 600")
	u.tmux("new-session", "-d", "-s", "tui", "sleep 600")
	t.Cleanup(func() { exec.Command("tmux", "-S", u.sock, "kill-server").Run() })
	env := []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), "TERM=xterm-256color",
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8", "APS_TOKEN=" + testToken}
	u.start(codex, dir, env, "--remote", l.url, "--remote-auth-token-env", "APS_TOKEN")
	u.waitText("the prompt", "Ask Codex to do anything")

	u.typeLine("use the echo tool")
	s := u.waitText("the answer after the tool", "The echo came back.")
	if !strings.Contains(s, "Called mcptest.echo") || !strings.Contains(s, "echo: from the TUI") {
		t.Errorf("the MCP call is not on screen:\n%s", s)
	}

	u.typeLine("/mcp")
	s = u.waitText("the MCP servers", "mcptest: connected (8 tools)")
	for _, line := range strings.Split(s, "\n") {
		if errorLine.MatchString(line) {
			t.Errorf("the TUI shows an error: %q\nscreen:\n%s", line, s)
		}
	}
	// A destructive tool is asked about; the TUI shows Codex's MCP approval.
	u.typeLine("write it down")
	s = u.waitText("the MCP approval", "Allow for this session")
	for _, want := range []string{`Allow the mcptest MCP server to run tool "write"?`, "text: approved in the TUI", "1. Allow", "3. Cancel"} {
		if !strings.Contains(s, want) {
			t.Errorf("the approval lacks %q:\n%s", want, s)
		}
	}
	if _, err := os.Stat(written); err == nil {
		t.Error("the tool ran before the answer")
	}
	u.tmux("send-keys", "-t", "tui", "Down")
	u.tmux("send-keys", "-t", "tui", "Enter")
	u.waitText("the end of the approved turn", "Written.")
	if b, err := os.ReadFile(written); err != nil || string(b) != "approved in the TUI" {
		t.Errorf("the approved tool did not run: %q, %v", b, err)
	}
	// "Allow for this session" answered accept with _meta.persist = session.
	logText, _ := os.ReadFile(l.log)
	answered := false
	for _, ln := range strings.Split(string(logText), "\n") {
		if strings.Contains(ln, "msg=recv") && strings.Contains(ln, `\"action\":\"accept\"`) {
			answered = strings.Contains(ln, `\"persist\":\"session\"`)
			if !answered {
				t.Logf("answer: %s", ln)
			}
		}
	}
	if !answered {
		t.Error("no accept for the session in the TUI's answer")
	}
	// The server asks the user (elicitation): the TUI shows the form.
	u.typeLine("ask my name")
	u.waitText("the server's question", "Type your answer")
	u.tmux("send-keys", "-t", "tui", "-l", "Ada")
	u.waitText("the typed name", "Ada")
	u.tmux("send-keys", "-t", "tui", "Enter")
	s = u.waitText("the end of the asking turn", "Asked.")
	if !strings.Contains(s, "action=accept name=Ada") {
		t.Errorf("the server did not get the answer:\n%s", s)
	}
	u.typeLine("/quit")
	u.waitText("the exit", "EXITED 0")
	checkTranscripts(t, l.log)
}
