package configread

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// readConfig answers config/read for a server loaded the way apserver
// loads its config: user file, workspace, environment (env), flags.
func readConfig(t *testing.T, userTOML, workspaceTOML string, env map[string]string, flags map[string]any) protocol.ConfigReadResult {
	t.Helper()
	home, ws := t.TempDir(), t.TempDir()
	user := filepath.Join(home, "config.toml")
	os.WriteFile(user, []byte(userTOML), 0o600)
	wsFile := filepath.Join(ws, ".apserver", "config.toml")
	os.MkdirAll(filepath.Dir(wsFile), 0o755)
	os.WriteFile(wsFile, []byte(workspaceTOML), 0o600)
	getenv := func(k string) string { return env[k] }
	for k, v := range env {
		t.Setenv(k, v)
	}
	o := config.Overrides{}
	if v, ok := flags["model"].(string); ok {
		o.Model = &v
	}
	cfg, err := config.Load(config.LoadOptions{UserFile: user, Workspace: ws, Getenv: getenv, Overrides: o})
	if err != nil {
		t.Fatal(err)
	}
	// The defaults a session gets from this config (session.Manager.Defaults).
	defaults := func() port.Defaults {
		return port.Defaults{Model: cfg.Model, Provider: cfg.Provider,
			ApprovalPolicy: protocol.ApprovalPolicy(cfg.ApprovalPolicy), Sandbox: protocol.SandboxMode(cfg.Sandbox)}
	}
	c := &Service{Defaults: defaults, Config: cfg, Sources: config.Sources{UserFile: user, WorkspaceFile: wsFile, Flags: flags}}
	got := make(chan any, 1)
	c.Read(context.Background(), protocol.ConfigReadParams{IncludeLayers: true}, func(r any, err error) {
		if err != nil {
			t.Errorf("config/read: %v", err)
		}
		got <- r
	})
	b, _ := json.Marshal(<-got)
	var res protocol.ConfigReadResult
	json.Unmarshal(b, &res)
	return res
}

// An untrusted workspace file may only tighten: config/read reports what
// config.Load applied, not the keys it skipped.
func TestConfigReadReportsOnlyAppliedWorkspaceKeys(t *testing.T) {
	res := readConfig(t, "", "approval_policy = \"never\"\nsandbox = \"read-only\"\n", nil, nil)
	if o := res.Origins["approval_policy"]; o.Name.Type == "project" {
		t.Errorf("approval_policy origin = %+v, want not the workspace (its loosening value was skipped)", o)
	}
	if res.Config["approval_policy"] == "never" {
		t.Errorf("config approval_policy = never, want the default")
	}
	if o := res.Origins["sandbox_mode"]; o.Name.Type != "project" {
		t.Errorf("sandbox_mode origin = %+v, want the workspace (tightening applies)", o)
	}
	for _, l := range res.Layers {
		if _, ok := l.Config["approval_policy"]; ok && l.Name.Type == "project" {
			t.Errorf("workspace layer reports the skipped approval_policy: %v", l.Config)
		}
	}
}

// A key set by an environment variable has an origin: the session layer
// (Codex has no environment layer); a flag still wins.
func TestConfigReadEnvOrigin(t *testing.T) {
	res := readConfig(t, "model = \"file-model\"\n", "", map[string]string{config.EnvModel: "env-model"}, nil)
	if res.Config["model"] != "env-model" || res.Origins["model"].Name.Type != "sessionFlags" {
		t.Errorf("model = %v from %+v, want env-model from the session layer", res.Config["model"], res.Origins["model"])
	}
	res = readConfig(t, "", "", map[string]string{config.EnvModel: "env-model"}, map[string]any{"model": "flag-model"})
	if res.Config["model"] != "flag-model" || res.Origins["model"].Name.Type != "sessionFlags" {
		t.Errorf("model = %v from %+v, want the flag's", res.Config["model"], res.Origins["model"])
	}
	var session map[string]any
	for _, l := range res.Layers {
		if l.Name.Type == "sessionFlags" {
			session = l.Config
		}
	}
	if session["model"] != "flag-model" {
		t.Errorf("session layer = %v, want the flag's model", session)
	}
}
