package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestExecEphemeral: codex exec's --ephemeral keeps nothing: the turn runs
// and answers, and the data dir given is left without a database (the
// thread lived in a data dir of its own, removed at the end). Without the
// flag the same run leaves its database behind.
func TestExecEphemeral(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "E-eph", Steps: []scripted.Step{{Text: "Nothing kept."}}})
	for _, ephemeral := range []bool{true, false} {
		args := []string{"E-eph: answer"}
		if ephemeral {
			args = append([]string{"--ephemeral"}, args...)
		}
		r := runExec(t, model, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "Nothing kept.") {
			t.Fatalf("exec %v: exit %d\nstdout:\n%s\nstderr:\n%s", args, r.code, r.stdout, r.stderr)
		}
		entries, err := os.ReadDir(r.dataDir)
		if err != nil {
			t.Fatal(err)
		}
		if ephemeral && len(entries) != 0 {
			t.Errorf("--ephemeral left %d entries in the data dir (%s…)", len(entries), entries[0].Name())
		}
		if !ephemeral && len(entries) == 0 {
			t.Errorf("without --ephemeral the data dir is empty: the test cannot tell the difference")
		}
	}
}

// TestExecIgnoreUserConfig: --ignore-user-config leaves the default user
// file unread. The user file here names a provider that does not exist,
// which fails the exec unless the file is ignored.
func TestExecIgnoreUserConfig(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "E-iuc", Steps: []scripted.Step{{Text: "Read no user file."}}})
	home := t.TempDir()
	dir := filepath.Join(home, ".config", "apserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte("provider = \"nowhere\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ignore := range []bool{true, false} {
		r := execResult{dataDir: t.TempDir(), cwd: t.TempDir()}
		args := []string{"exec", "--data-dir", r.dataDir, "--model", "scripted-model", "--base-url", model.URL()}
		if ignore {
			args = append(args, "--ignore-user-config")
		}
		r.run(t, home, append(args, "E-iuc: answer"))
		if ignore && (r.code != 0 || !strings.Contains(r.stdout, "Read no user file.")) {
			t.Errorf("--ignore-user-config: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
		}
		if !ignore && (r.code == 0 || !strings.Contains(r.stderr, "nowhere")) {
			t.Errorf("without --ignore-user-config the user file was not read: exit %d\nstderr:\n%s", r.code, r.stderr)
		}
	}
}
