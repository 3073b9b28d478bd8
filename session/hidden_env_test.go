package session

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/store"
	"github.com/apserver/apserver/tools/sandbox"
)

// TestManagerHidesItsCredentials: the variables that hold apserver's own
// credentials reach no command, even where the secret-word rule (KEY,
// TOKEN, …) would not catch their names: an MCP server's bearer token
// and header variables, and the cluster's database URL, which may carry
// a password.
func TestManagerHidesItsCredentials(t *testing.T) {
	cfg := config.Default()
	cfg.MCPServers = map[string]config.MCPServer{"tracker": {
		URL: "http://127.0.0.1:1/mcp", BearerTokenEnvVar: "TRACKER_PAT", EnvHTTPHeaders: map[string]string{"X-Org": "TRACKER_ORG_AUTH"},
	}}
	// None of the three names holds a secret word: only the Manager
	// naming them hides them.
	path := filepath.Join(t.TempDir(), "a.db")
	m := NewManager(Options{
		OpenStore: func() (*store.Store, error) { return store.Open(path, store.Options{}) },
		Config:    cfg, Client: newFakeClient(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test",
	})
	defer m.Close()
	for _, v := range []string{"TRACKER_PAT", "TRACKER_ORG_AUTH", config.EnvDatabaseURL} {
		if !sandbox.SecretEnv(v) {
			t.Errorf("%s reaches commands", v)
		}
	}
	if sandbox.SecretEnv("DATABASE_URL") {
		t.Error("a project's own DATABASE_URL is hidden: its tests need it")
	}
}
