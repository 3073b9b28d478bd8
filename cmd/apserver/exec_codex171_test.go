package main

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// codexExecFlags171 reads testdata/codex-exec-0.171-flags.txt: every
// option of `codex exec --help` in Codex 0.171.0, as its names.
func codexExecFlags171(t *testing.T) [][]string {
	t.Helper()
	f, err := os.Open("testdata/codex-exec-0.171-flags.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, strings.Fields(line))
	}
	if len(out) < 25 {
		t.Fatalf("only %d flags read", len(out))
	}
	return out
}

// execFlagArgs gives each flag that takes a value a valid one, and the
// flags it must come with.
var execFlagArgs = map[string][]string{
	"config": {"model=m"}, "c": {"model=m"}, "image": {"x.png"}, "i": {"x.png"},
	"model": {"m"}, "m": {"m"}, "sandbox": {"read-only"}, "s": {"read-only"},
	"cd": {"."}, "C": {"."}, "add-dir": {"."}, "thread-source": {"cli"},
	"cyber-access-program": {"standard"}, "output-schema": {"schema.json"},
	"color": {"never"}, "output-last-message": {"out.txt"}, "o": {"out.txt"},
	"enable": {"x"}, "disable": {"x"}, "local-provider": {"ollama", "--oss"},
	"remote": {"ws://127.0.0.1:1"}, "remote-auth-token-env": {"T"}, "profile": {"p"}, "p": {"p"},
}

// TestExecTakesCodex171Flags: every option of codex 0.171's exec is either
// accepted by apserver exec (it then gets as far as asking for an
// objective) or refused with a message that names the flag and says why —
// never "flag provided but not defined".
func TestExecTakesCodex171Flags(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/schema.json", []byte(`{"type":"object"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir+"/x.png", []byte("png"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, names := range codexExecFlags171(t) {
		for _, n := range names {
			name := strings.TrimLeft(n, "-")
			args := append([]string{"exec", "--cd", dir, n}, execFlagArgs[name]...)
			out, errOut, code := apserver(t, args...)
			switch {
			case name == "help" || name == "h":
				if code != 0 || !strings.Contains(out+errOut, "Usage: apserver exec") {
					t.Errorf("%s: exit %d, output %q", n, code, out+errOut)
				}
			case name == "version" || name == "V":
				if code != 0 || !strings.HasPrefix(out, "apserver ") {
					t.Errorf("%s: exit %d, stdout %q", n, code, out)
				}
			case refusedExecFlags[name].why != "":
				if code != 2 || !strings.Contains(errOut, "--"+name+" is not supported: ") {
					t.Errorf("%s: exit %d, stderr %q; want a refusal naming the flag", n, code, errOut)
				}
			default:
				if code != 2 || !strings.Contains(errOut, "an objective is required") {
					t.Errorf("%s %v: exit %d, stderr %q; want it accepted (then: an objective is required)", n, execFlagArgs[name], code, errOut)
				}
			}
		}
	}
}

// TestExecCodex171Meanings: the flags that carry a meaning over do what
// codex's do, and contradictory combinations are usage errors.
func TestExecCodex171Meanings(t *testing.T) {
	parse := parseExecFlags
	_, cf, err := parse("--dangerously-bypass-approvals-and-sandbox")
	if err != nil || cf.sandbox != "danger-full-access" || cf.approval != "never" {
		t.Errorf("--dangerously-bypass-approvals-and-sandbox: sandbox %q approval %q err %v", cf.sandbox, cf.approval, err)
	}
	if _, _, err := parse("--dangerously-bypass-approvals-and-sandbox", "-s", "read-only"); err == nil {
		t.Error("--dangerously-bypass-approvals-and-sandbox with -s read-only: no error")
	}
	f, _, err := parse("--oss")
	if err != nil || f.baseURL != localProviders["ollama"] || f.wire != "chat" || f.model != ossDefaultModel {
		t.Errorf("--oss: base %q wire %q model %q err %v", f.baseURL, f.wire, f.model, err)
	}
	f, _, err = parse("--oss", "--local-provider", "lmstudio", "-m", "qwen")
	if err != nil || f.baseURL != localProviders["lmstudio"] || f.model != "qwen" {
		t.Errorf("--oss --local-provider lmstudio -m qwen: base %q model %q err %v", f.baseURL, f.model, err)
	}
	for _, bad := range [][]string{
		{"--local-provider", "ollama"},         // without --oss
		{"--oss", "--local-provider", "vllm"},  // unknown
		{"--oss", "--base-url", "http://x/v1"}, // two providers
		{"--color", "sometimes"},               // not a color mode
		{"--ignore-rules"},                     // refused: rules always apply
		{"--profile", "work"},                  // refused: no profiles
	} {
		if _, _, err := parse(bad...); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}
