package files_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

// TestProtectedDirAttacks: the model cannot change the project's apserver
// config and rules (which would loosen its own limits at the next start)
// nor .git, through any spelling, symlink or forged change.
func TestProtectedDirAttacks(t *testing.T) {
	setup := func(t *testing.T) *attackEnv {
		e := newAttackEnv(t)
		writeTree(t, e.ws, map[string]string{
			".apserver/config.toml": "sandbox = \"read-only\"\n",
			".apserver/rules":       "forbidden rm\n",
			"sub/.apserver/rules":   "forbidden rm\n",
		})
		for name, target := range map[string]string{
			"apslink":   ".apserver",
			"cfglink":   ".apserver/config.toml",
			"deeplink":  "sub/../.apserver",
			"sub/up":    "..",
			"sub/aps":   "../.apserver/rules",
			"nestedaps": "sub/.apserver",
		} {
			if err := os.Symlink(target, filepath.Join(e.ws, name)); err != nil {
				t.Fatal(err)
			}
		}
		return e
	}
	const cfg = ".apserver/config.toml"
	tests := []struct {
		name string
		run  func(t *testing.T, e *attackEnv) (string, error)
	}{
		{"write config", func(t *testing.T, e *attackEnv) (string, error) { return e.write(cfg) }},
		{"write new file in .apserver", func(t *testing.T, e *attackEnv) (string, error) { return e.write(".apserver/new") }},
		{"write absolute", func(t *testing.T, e *attackEnv) (string, error) { return e.write(filepath.Join(e.ws, cfg)) }},
		{"write via ..", func(t *testing.T, e *attackEnv) (string, error) { return e.write("sub/../.apserver/rules") }},
		{"write upper case", func(t *testing.T, e *attackEnv) (string, error) { return e.write(".APSERVER/config.toml") }},
		{"write mixed case", func(t *testing.T, e *attackEnv) (string, error) { return e.write(".ApServer/rules") }},
		{"write nested project's rules", func(t *testing.T, e *attackEnv) (string, error) { return e.write("sub/.apserver/rules") }},
		{"write via symlinked dir", func(t *testing.T, e *attackEnv) (string, error) { return e.write("apslink/config.toml") }},
		{"write symlink to config", func(t *testing.T, e *attackEnv) (string, error) { return e.write("cfglink") }},
		{"write via symlink with ..", func(t *testing.T, e *attackEnv) (string, error) { return e.write("deeplink/rules") }},
		{"write via parent symlink", func(t *testing.T, e *attackEnv) (string, error) { return e.write("sub/up/.apserver/rules") }},
		{"write symlink in sub to rules", func(t *testing.T, e *attackEnv) (string, error) { return e.write("sub/aps") }},
		{"write via symlink to nested", func(t *testing.T, e *attackEnv) (string, error) { return e.write("nestedaps/rules") }},
		{"edit config", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit(cfg, "read-only", "danger-full-access")
		}},
		{"edit rules via symlink", func(t *testing.T, e *attackEnv) (string, error) {
			return e.edit("apslink/rules", "forbidden rm", "allow rm")
		}},
		{"commit add config", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: ".apserver/other.toml", New: []byte("x")})
		}},
		{"commit delete rules", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindDelete, Path: ".apserver/rules", Old: []byte("forbidden rm\n")})
		}},
		{"commit update config", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindUpdate, Path: cfg, Old: []byte("sandbox = \"read-only\"\n"), New: []byte("sandbox = \"danger-full-access\"\n")})
		}},
		{"commit move into .apserver", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindUpdate, Path: "a.txt", MoveTo: ".apserver/a.txt", Old: []byte("a\n"), New: []byte("a\n")})
		}},
		{"commit move rules out", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindUpdate, Path: ".apserver/rules", MoveTo: "rules.bak", Old: []byte("forbidden rm\n"), New: []byte("forbidden rm\n")})
		}},
		{"commit add upper-case .GIT hook", func(t *testing.T, e *attackEnv) (string, error) {
			return e.commit(files.Change{Kind: files.KindAdd, Path: ".Git/hooks/pre-commit", New: []byte("#!/bin/sh\n")})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := setup(t)
			ws := snapshot(t, e.ws)
			_, err := tt.run(t, e)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), "directory, which file tools may not write") {
				t.Errorf("error does not say the directory is protected: %v", err)
			}
			if snapshot(t, e.ws) != ws {
				t.Errorf("the attack changed the workspace")
			}
		})
	}

	// Files merely named like the protected directories stay writable.
	e := setup(t)
	for _, p := range []string{".apserver.toml", "apserver/config.toml", "sub/.apserverx", ".gitignore"} {
		if _, err := e.write(p); err != nil {
			t.Errorf("write %s: %v", p, err)
		}
	}
}
