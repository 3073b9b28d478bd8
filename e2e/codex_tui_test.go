package e2e

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
)

// TestCodexTUI drives OpenAI's Codex TUI, each version of
// codexTUIVersions (0.169 and 0.171, installed from npm by
// scripts/install-codex.sh), in tmux against `apserver serve --listen`, over
// ws:// with a capability token and over unix://, as a user would: it
// starts without an error on screen, a prompt streams an answer, an
// approval offers Codex's choices and y runs the command, Esc interrupts,
// `!cmd` runs the user's command, Shift+Tab plans (a proposed plan), /review
// reviews the uncommitted changes, /compact compacts (the next request
// starts from the summary), /quit exits, and `codex --remote …
// resume <id>` shows the conversation.
// Every message of the runs is checked against the schemas. Set
// APSERVER_TUI_CAPTURES=DIR to keep the screens.
func TestCodexTUI(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm not found: cannot install the Codex TUI")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux not found: the Codex TUI test needs it")
	}
	for _, version := range codexTUIVersions() {
		t.Run(version, func(t *testing.T) {
			codex := installCodex(t, version)
			t.Run("ws", func(t *testing.T) {
				tok := tokenFile(t)
				dir, _ := reviewRepo(t) // a repository with a change, for /review
				model := tuiModel(t)
				l := startListener(t, model, dir, "ws://127.0.0.1:0", "--ws-auth", "capability-token", "--ws-token-file", tok)
				runTUI(t, codex, model, l, dir, true)
			})
			t.Run("unix", func(t *testing.T) {
				dir, _ := reviewRepo(t)
				sock := filepath.Join(t.TempDir(), "aps.sock")
				model := tuiModel(t)
				l := startListener(t, model, dir, "unix://"+sock)
				runTUI(t, codex, model, l, dir, false)
			})
		})
	}
}

// codexTUIVersions are the Codex releases whose TUI the tests drive: the
// one whose protocol apserver speaks (protocol.CodexVersion) and the one
// before it. APSERVER_CODEX_VERSIONS (comma-separated) overrides the list.
func codexTUIVersions() []string {
	if v := os.Getenv("APSERVER_CODEX_VERSIONS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"0.169.0", protocol.CodexVersion}
}

// installCodex installs (once, cached per version) the Codex CLI of that
// version with scripts/install-codex.sh and returns its executable; it
// skips the test when npm cannot install it.
func installCodex(t *testing.T, version string) string {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(root, "scripts", "install-codex.sh"))
	cmd.Env = append(os.Environ(), "CODEX_VERSION="+version)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/install-codex.sh (Codex %s): %v", version, err)
	}
	codex := strings.TrimSpace(string(out))
	if codex == "" {
		t.Skipf("npm not usable: the Codex %s TUI is not installed", version)
	}
	if v, err := exec.Command(codex, "--version").Output(); err != nil || !strings.Contains(string(v), version) {
		t.Fatalf("%s --version = %q (%v), want %s", codex, v, err, version)
	}
	return codex
}

// tuiModel answers the TUI's title request with a title (the first rule:
// the title prompt quotes the user's prompt, which the later rules match),
// then the test's prompts.
func tuiModel(t *testing.T) *scripted.Server {
	return startModel(t,
		// /compact's summary request quotes the whole conversation: first.
		scripted.Rule{Match: compactMarker, Steps: []scripted.Step{{Text: "## Task\nThe TUI session.\n## Done\n[completed] TUI-SUMMARY of the session."}}},
		scripted.Rule{Match: "single-line task title", Steps: []scripted.Step{{Text: `{"title":"Scripted title"}`}}},
		scripted.Rule{Match: "say hello", Steps: []scripted.Step{{Text: "Hello from the scripted model."}}},
		scripted.Rule{Match: "tell me everything", Steps: []scripted.Step{{Text: strings.Repeat("EVERYTHING-DETAIL and more. ", 400) + "END-OF-EVERYTHING"}}},
		scripted.Rule{Match: "make the marker", Steps: []scripted.Step{
			{Text: "Making it.", ToolCalls: []scripted.ToolCall{{Name: "exec_command",
				Arguments: `{"cmd":"touch tui-marker","sandbox_permissions":"require_escalated","justification":"the marker goes outside the sandbox"}`}}},
			{Text: "The marker is made."},
		}},
		scripted.Rule{Match: "go slow", Steps: []scripted.Step{{Deltas: 100000, DeltaText: "tick ", InterDelta: 20 * time.Millisecond}}},
		scripted.Rule{Match: "plan the fix", Steps: []scripted.Step{{Text: "Here is my plan.\n<proposed_plan>\n1. Edit a.txt.\n2. Run the tests.\n</proposed_plan>"}}},
		scripted.Rule{Match: "Review the uncommitted changes", Steps: []scripted.Step{{Text: "[P1] a.txt:1: the value regressed.\nVerdict: the changes are incorrect."}}},
	)
}

// tui is one tmux server (private to the test) running the Codex TUI.
type tui struct {
	t        *testing.T
	sock     string // tmux -S
	captures string // where screens are kept ("" : not kept)
	n        int
}

func (u *tui) tmux(args ...string) string {
	u.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", u.sock}, args...)...).CombinedOutput()
	if err != nil {
		u.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (u *tui) screen() string {
	// -J joins wrapped lines, so a long command stays on one line.
	return u.tmux("capture-pane", "-p", "-J", "-t", "tui")
}

// waitScreen polls the screen (the TUI's only output) until ok accepts it.
func (u *tui) waitScreen(what string, ok func(string) bool) string {
	u.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := u.screen()
		if ok(s) {
			u.keep(what, s)
			return s
		}
		if time.Now().After(deadline) {
			u.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
		}
		if strings.Contains(s, "EXITED") {
			u.t.Fatalf("codex exited while the test waited for %s; screen:\n%s", what, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (u *tui) waitText(what, text string) string {
	u.t.Helper()
	return u.waitScreen(what, func(s string) bool { return strings.Contains(s, text) })
}

func (u *tui) keep(what, screen string) {
	if u.captures == "" {
		return
	}
	u.n++
	name := fmt.Sprintf("%s-%02d-%s.txt", strings.ReplaceAll(u.t.Name(), "/", "-"), u.n, strings.ReplaceAll(what, " ", "-"))
	os.WriteFile(filepath.Join(u.captures, name), []byte(screen), 0o644)
}

// typeLine types text, then Enter as its own key (the TUI takes a fast
// Enter as part of a paste).
func (u *tui) typeLine(text string) {
	u.t.Helper()
	u.tmux("send-keys", "-t", "tui", "-l", text)
	u.waitText("the typed text", text)
	u.tmux("send-keys", "-t", "tui", "Enter")
}

// start runs codex with args in a new tmux window; "EXITED" shows when it
// ends.
func (u *tui) start(codex, dir string, env []string, args ...string) {
	u.t.Helper()
	script := filepath.Join(u.t.TempDir(), "run.sh")
	var sb strings.Builder
	sb.WriteString("#!/bin/sh\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&sb, "export %s=%s\n", k, strconv.Quote(v))
	}
	fmt.Fprintf(&sb, "cd %s || exit 1\n%s", strconv.Quote(dir), strconv.Quote(codex))
	for _, a := range args {
		fmt.Fprintf(&sb, " %s", strconv.Quote(a))
	}
	sb.WriteString("\necho EXITED $?\nsleep 600\n")
	if err := os.WriteFile(script, []byte(sb.String()), 0o755); err != nil {
		u.t.Fatal(err)
	}
	u.tmux("kill-session", "-t", "tui")
	u.tmux("new-session", "-d", "-s", "tui", "-x", "160", "-y", "50", script)
}

// warningCount is the footer of a TUI (0.171) that holds startup warnings.
var warningCount = regexp.MustCompile(`⚠ (\d+) warnings? · f2 to view`)

// noVersionWarning opens the TUI's startup warnings, if it shows any, and
// fails on one about the server's version (a TUI warns about a server that
// reports an older Codex version in its userAgent). Other warnings (no
// bubblewrap on this machine's PATH) are the TUI's own business.
func (u *tui) noVersionWarning(screen string) {
	u.t.Helper()
	m := warningCount.FindStringSubmatch(screen)
	if m == nil {
		return
	}
	n, _ := strconv.Atoi(m[1])
	u.tmux("send-keys", "-t", "tui", "F2")
	for i := 1; i <= n; i++ {
		s := u.waitText("a startup warning", fmt.Sprintf("Warnings · %d of %d", i, n))
		for _, line := range strings.Split(s, "\n") {
			if versionWarning.MatchString(line) {
				u.t.Errorf("the TUI warns about the server's version: %q\nscreen:\n%s", line, s)
			}
		}
		if i < n {
			u.tmux("send-keys", "-t", "tui", "Right")
		}
	}
	u.tmux("send-keys", "-t", "tui", "Escape")
	u.waitScreen("the warnings closed", func(s string) bool { return !strings.Contains(s, "Warnings ·") })
}

var versionWarning = regexp.MustCompile(`(?i)older than|different from|version`)

var errorLine = regexp.MustCompile(`(?i)error|method not found|failed|older than`)

func runTUI(t *testing.T, codex string, model *scripted.Server, l *listener, dir string, token bool) {
	home := t.TempDir()
	if err := os.Mkdir(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	u := &tui{t: t, sock: filepath.Join(t.TempDir(), "tmux.sock"), captures: os.Getenv("APSERVER_TUI_CAPTURES")}
	if u.captures != "" {
		os.MkdirAll(u.captures, 0o755)
	}
	// A placeholder session keeps the private tmux server up between runs.
	u.tmux("new-session", "-d", "-s", "keep", "sleep 600")
	u.tmux("new-session", "-d", "-s", "tui", "sleep 600")
	t.Cleanup(func() { exec.Command("tmux", "-S", u.sock, "kill-server").Run() })
	env := []string{"HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"), "TERM=xterm-256color",
		"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	remote := []string{"--remote", l.url}
	if token {
		env = append(env, "APS_TOKEN="+testToken)
		remote = append(remote, "--remote-auth-token-env", "APS_TOKEN")
	}
	u.start(codex, dir, env, remote...)
	noErrors := func(when, s string) {
		for _, line := range strings.Split(s, "\n") {
			if errorLine.MatchString(line) {
				t.Errorf("the TUI shows an error %s: %q\nscreen:\n%s", when, line, s)
			}
		}
	}
	noErrors("at start", u.waitText("the prompt", "Ask Codex to do anything"))

	u.typeLine("say hello")
	noErrors("after the first answer", u.waitText("the answer", "Hello from the scripted model."))
	u.noVersionWarning(u.screen())

	u.typeLine("please make the marker")
	s := u.waitText("the approval", "Would you like to run the following command?")
	for _, want := range []string{"Reason: the marker goes outside the sandbox", "touch tui-marker", "Yes, proceed (y)",
		"don't ask again for this command in this session", "No, and tell Codex what to do differently"} {
		if !strings.Contains(s, want) {
			t.Errorf("approval prompt lacks %q; screen:\n%s", want, s)
		}
	}
	u.tmux("send-keys", "-t", "tui", "y")
	u.waitText("the end of the approved turn", "The marker is made.")
	if _, err := os.Stat(filepath.Join(dir, "tui-marker")); err != nil {
		t.Errorf("y did not run the command: %v", err)
	}

	u.typeLine("go slow now")
	u.waitText("the slow answer streaming", "tick tick tick")
	u.tmux("send-keys", "-t", "tui", "Escape")
	u.waitText("the interruption", "Conversation interrupted")

	u.typeLine("/quit")
	s = u.waitText("the exit", "EXITED 0")
	m := regexp.MustCompile(`resume ([0-9a-f-]{36})`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no resume command on screen after /quit:\n%s", s)
	}

	u.start(codex, dir, env, append(remote, "resume", m[1])...)
	s = u.waitScreen("the resumed conversation", func(s string) bool {
		return strings.Contains(s, "The marker is made.") && strings.Contains(s, "Ask Codex to do anything")
	})
	for _, want := range []string{"say hello", "Hello from the scripted model.", "please make the marker", "go slow now"} {
		if !strings.Contains(s, want) {
			t.Errorf("resumed conversation lacks %q; screen:\n%s", want, s)
		}
	}
	// In the resumed session, !cmd: the user's own command
	// (thread/shellCommand).
	u.tmux("send-keys", "-t", "tui", "-l", "!")
	u.waitText("shell mode", "Shell mode")
	u.typeLine("echo $((6*7))xyz")
	u.waitScreen("the shell command's output and its end", func(s string) bool {
		i := strings.Index(s, "42xyz")
		return i >= 0 && strings.Contains(s[i:], "Worked for") && strings.Contains(s[i:], "Ask Codex to do anything")
	})

	// Shift+Tab: plan mode (thread/settings/update); the plan comes back
	// as a proposed plan the TUI offers to implement.
	u.tmux("send-keys", "-t", "tui", "BTab")
	u.waitText("plan mode", "Plan mode")
	u.typeLine("plan the fix")
	s = u.waitText("the proposed plan", "Implement this plan?")
	if !strings.Contains(s, "Proposed Plan") || !strings.Contains(s, "2. Run the tests.") {
		t.Errorf("no proposed plan on screen:\n%s", s)
	}
	u.tmux("send-keys", "-t", "tui", "Escape")
	u.waitScreen("the plan dialog closed", func(s string) bool {
		return !strings.Contains(s, "Implement this plan?") && strings.Contains(s, "Ask Codex to do anything")
	})
	u.tmux("send-keys", "-t", "tui", "BTab")
	u.waitScreen("the default mode", func(s string) bool {
		return !strings.Contains(s, "Plan mode") && strings.Contains(s, "Ask Codex to do anything")
	})

	// /review: the preset picker, uncommitted changes (review/start).
	u.typeLine("/review")
	u.waitText("the review presets", "Review uncommitted changes")
	u.tmux("send-keys", "-t", "tui", "Down")
	u.tmux("send-keys", "-t", "tui", "Enter")
	noErrors("after the review", u.waitText("the review", "the value regressed"))

	// /compact: thread/compact/start; the TUI shows the compaction, and
	// the next turn's request starts from the summary (a long answer first,
	// so that there is something to compact).
	u.typeLine("tell me everything")
	u.waitText("the long answer", "END-OF-EVERYTHING")
	u.typeLine("/compact")
	noErrors("after /compact", u.waitText("the compaction", "Context compacted"))
	u.typeLine("say hello again")
	u.waitScreen("the answer after the compaction", func(s string) bool {
		return strings.Count(s, "Hello from the scripted model.") >= 1 && strings.Contains(s, "say hello again") &&
			strings.Index(s, "Hello from the scripted model.") > strings.Index(s, "say hello again")
	})
	reqs := modelRequests(model)
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "TUI-SUMMARY") || strings.Contains(last, "EVERYTHING-DETAIL") {
		t.Errorf("the request after /compact does not start from the summary (has it: %v; still holds the long answer: %v)",
			strings.Contains(last, "TUI-SUMMARY"), strings.Contains(last, "EVERYTHING-DETAIL"))
	}

	u.typeLine("/quit")
	u.waitText("the exit after resume", "EXITED 0")

	checkTranscripts(t, l.log)
}

var traceLine = regexp.MustCompile(`msg=(recv|send) conn=(\d+) line=(".*")$`)

// checkTranscripts validates every message of apserver's --trace log,
// connection by connection, against the schemas.
var methodNotFound = regexp.MustCompile(`"code":-32601,"message":"Method not found: ([^"]+)"`)

func checkTranscripts(t *testing.T, logFile string) {
	t.Helper()
	f, err := os.Open(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type conv struct {
		tr interface {
			Client([]byte)
			Server([]byte) error
			ClientAnswer([]byte) error
			Unknown() []string
		}
	}
	convs := map[string]*conv{}
	notFound := map[string]bool{}
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		m := traceLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		line, err := strconv.Unquote(m[3])
		if err != nil {
			t.Fatalf("trace line not quoted as expected: %v", err)
		}
		c := convs[m[2]]
		if c == nil {
			tr := validator.NewTranscript()
			tr.RequireEmittedAtMs = true
			tr.AllowUnknown = true
			c = &conv{tr: tr}
			convs[m[2]] = c
		}
		n++
		if nf := methodNotFound.FindStringSubmatch(line); m[1] == "send" && nf != nil && !notFound[nf[1]] {
			notFound[nf[1]] = true
			t.Logf("the TUI called %s: -32601 (docs/protocol.md, Codex 0.171)", nf[1])
		}
		switch {
		case m[1] == "send":
			if err := c.tr.Server([]byte(line)); err != nil {
				t.Errorf("conn %s: %v", m[2], err)
			}
		case strings.Contains(line, `"method"`):
			c.tr.Client([]byte(line))
		default:
			if err := c.tr.ClientAnswer([]byte(line)); err != nil {
				t.Errorf("conn %s: %v", m[2], err)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no traced messages in %s", logFile)
	}
	var unknown []string
	for _, c := range convs {
		unknown = append(unknown, c.tr.Unknown()...)
	}
	sort.Strings(unknown)
	if len(unknown) > 0 {
		t.Errorf("methods in neither schema: %v", unknown)
	}
}
