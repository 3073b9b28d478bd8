package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestExecConfigFlag checks --config: an existing file is apserver's config
// file, key=value is a codex override read as TOML (a bare string when it
// does not parse), and a flag given by name wins over an override.
func TestExecConfigFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	parse := parseExecFlags

	f, cf, err := parse("--config", file, "-c", `openai_base_url="http://127.0.0.1:9/v1"`, "-c", "model=bare-name",
		"-c", `model_reasoning_effort="high"`, "-c", `approval_policy="on-failure"`, "-c", "sandbox_mode='read-only'",
		"-c", "web_search=\"live\"", "-c", "sandbox_workspace_write.network_access=true")
	if err != nil {
		t.Fatal(err)
	}
	if f.configFile != file || f.baseURL != "http://127.0.0.1:9/v1" || f.model != "bare-name" {
		t.Errorf("serve flags: file %q, base URL %q, model %q", f.configFile, f.baseURL, f.model)
	}
	if cf.effort != "high" || cf.approval != "on-request" || cf.sandbox != "read-only" {
		t.Errorf("effort %q, approval %q, sandbox %q", cf.effort, cf.approval, cf.sandbox)
	}
	if !reflect.DeepEqual(cf.ignored, []string{"web_search", "sandbox_workspace_write.network_access"}) {
		t.Errorf("ignored %v", cf.ignored)
	}

	f, cf, err = parse("-c", `model="from-override"`, "--model", "from-flag", "-c", `sandbox_mode="read-only"`, "-s", "danger-full-access")
	if err != nil || f.model != "from-flag" || cf.sandbox != "danger-full-access" {
		t.Errorf("a flag by name must win: model %q, sandbox %q, %v", f.model, cf.sandbox, err)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-c", "model=3"}, "expected a string"},
		{[]string{"-c", `sandbox_mode="everything"`}, "unknown sandbox mode"},
		{[]string{"--sandbox", "open"}, "unknown sandbox mode"},
		{[]string{"-c", `approval_policy="always"`}, "unknown approval_policy"},
	} {
		if _, _, err := parse(tc.args...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
}

// TestExecArgs checks the words after the flags.
func TestExecArgs(t *testing.T) {
	for _, tc := range []struct {
		words          []string
		resume, prompt string
		err            bool
	}{
		{words: []string{"fix", "it"}, prompt: "fix it"},
		{words: []string{"resume", "T1"}, resume: "T1"},
		{words: []string{"resume", "T1", "go", "on"}, resume: "T1", prompt: "go on"},
		{words: []string{"resume"}, err: true},
		{words: nil},
	} {
		id, prompt, err := execArgs(tc.words)
		if id != tc.resume || prompt != tc.prompt || (err != nil) != tc.err {
			t.Errorf("%q: %q %q %v", tc.words, id, prompt, err)
		}
	}
}

// parseExecFlags parses args as exec's flags and applies the codex
// overrides, as runExec does.
func parseExecFlags(args ...string) (serveFlags, codexExecFlags, error) {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var f serveFlags
	f.register(fs)
	var cf codexExecFlags
	cf.register(fs, &f)
	if err := fs.Parse(args); err != nil {
		return f, cf, err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	return f, cf, cf.apply(&f, set)
}
