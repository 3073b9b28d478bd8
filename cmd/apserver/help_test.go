package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestMain lets a test run this package's main as the apserver binary:
// the test binary re-executes itself with APSERVER_TEST_MAIN set.
func TestMain(m *testing.M) {
	if os.Getenv("APSERVER_TEST_MAIN") == "1" {
		os.Args = append([]string{"apserver"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// apserver runs main with args and returns stdout, stderr and the exit
// status.
func apserver(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "APSERVER_TEST_MAIN=1", "HOME="+t.TempDir(), "XDG_CONFIG_HOME="+t.TempDir())
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running apserver %v: %v", args, err)
	}
	return out.String(), errb.String(), code
}

// TestHelpListsCommands: `apserver --help`, `-h` and `help` all print the
// commands with examples on stdout and exit 0 — not serve's flags under
// "Usage of serve", which is what a newcomer used to get from --help.
func TestHelpListsCommands(t *testing.T) {
	for _, arg := range []string{"--help", "-h", "help"} {
		out, errOut, code := apserver(t, arg)
		if code != 0 {
			t.Errorf("apserver %s exited %d; stderr %q", arg, code, errOut)
		}
		for _, want := range []string{"apserver demo", "apserver exec", "apserver run", "apserver runs list", "apserver replay", "Examples:"} {
			if !strings.Contains(out, want) {
				t.Errorf("apserver %s: output lacks %q:\n%s", arg, want, out)
			}
		}
		if strings.Contains(out+errOut, "Usage of serve") {
			t.Errorf("apserver %s printed serve's flag dump", arg)
		}
	}
}

// singleDashLong matches a help line naming a long flag with one dash
// ("  -data-dir string"), the style the docs never use.
var singleDashLong = regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+\b`)

// TestSubcommandHelpUsesDocFlagStyle: each command's --help prints long
// flags as the docs write them (--data-dir), one-letter ones with one dash.
func TestSubcommandHelpUsesDocFlagStyle(t *testing.T) {
	for _, cmd := range [][]string{{"serve"}, {"demo"}, {"exec"}, {"run"}, {"runs"}, {"replay"}, {"fake-model"},
		{"blueprint", "show"}, {"project", "decisions"}, {"project", "status"}} {
		out, errOut, code := apserver(t, append(cmd, "--help")...)
		text := out + errOut
		if code != 0 {
			t.Errorf("apserver %s --help exited %d:\n%s", cmd, code, text)
		}
		if !strings.Contains(text, "Usage: apserver") {
			t.Errorf("apserver %s --help has no usage line:\n%s", cmd, text)
		}
		if m := singleDashLong.FindString(text); m != "" {
			t.Errorf("apserver %s --help writes a long flag with one dash: %q", cmd, strings.TrimSpace(m))
		}
		if !strings.Contains(text, "  --") {
			t.Errorf("apserver %s --help lists no --flag:\n%s", cmd, text)
		}
	}
}

// TestDemoHelpSaysThreeTurns: the demo's help describes the three turns it
// runs (it used to say two).
func TestDemoHelpSaysThreeTurns(t *testing.T) {
	out, errOut, _ := apserver(t, "demo", "--help")
	if !strings.Contains(out+errOut, "three turns") {
		t.Errorf("apserver demo --help does not say three turns:\n%s", out+errOut)
	}
}

// TestRunsUsageErrors: what is missing is said, exit 2, before any data
// dir is opened.
func TestRunsUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "no request: say what the run should do"},
		{[]string{"run", "--max-clarifications", "-5", "x"}, "0 or more"},
		{[]string{"run", "--max-clarifications", "many", "x"}, "0 or more"},
		{[]string{"run", "--autonomy", "yolo", "x"}, `autonomy must be "off"`},
		{[]string{"runs"}, "which command?"},
		{[]string{"runs", "frob"}, `unknown command "frob"`},
		{[]string{"runs", "show"}, "give one run id"},
		{[]string{"runs", "reject", "abc"}, "--feedback TEXT is required"},
		{[]string{"runs", "answer", "abc"}, "exactly one of --text TEXT, --approve or --reject"},
		{[]string{"runs", "answer", "abc", "--approve", "--text", "x"}, "exactly one of"},
		{[]string{"runs", "prune", "--older-than", "soon"}, "not a duration"},
		{[]string{"runs", "list", "--base-url"}, "flag needs an argument: --base-url (apserver runs --help"},
		{[]string{"run", "--bogus", "x"}, "flag provided but not defined: --bogus (apserver run --help"},
	} {
		_, errOut, code := apserver(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "Invalid params") {
			t.Errorf("apserver %v = exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}
