package mcpservers

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/tools/sandbox"
)

// TestPoolServers: what the pool starts of the configuration: enabled
// servers only, sorted; a stdio server gets the default variables, the
// ones it names, then its literal ones, and the default cwd; an HTTP
// server its literal headers, those from the environment and the bearer
// token. Nothing else of apserver's environment reaches a server.
func TestPoolServers(t *testing.T) {
	t.Setenv("PATH", "/bin")
	t.Setenv("MCPTEST_SHARED", "shared")
	t.Setenv("MCPTEST_SECRET", "secret")
	t.Setenv("MCPTEST_TOKEN", "tok")
	t.Setenv("MCPTEST_HDR", "hv")
	s := &Servers{cwd: "/ws", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	got := s.poolServers(map[string]config.MCPServer{
		"b-stdio": {Command: "srv", Args: []string{"-x"}, EnvVars: []string{"MCPTEST_SHARED"}, Env: map[string]string{"K": "v"}, Enabled: true},
		"a-http": {URL: "https://mcp.example/", HTTPHeaders: map[string]string{"X-A": "1"}, EnvHTTPHeaders: map[string]string{"X-B": "MCPTEST_HDR"},
			BearerTokenEnvVar: "MCPTEST_TOKEN", Enabled: true},
		"c-off": {Command: "off"},
	})
	if len(got) != 2 || got[0].Name != "a-http" || got[1].Name != "b-stdio" {
		t.Fatalf("poolServers = %+v, want a-http and b-stdio, in that order", got)
	}
	h := got[0]
	if want := map[string]string{"X-A": "1", "X-B": "hv", "Authorization": "Bearer tok"}; h.URL != "https://mcp.example/" || !reflect.DeepEqual(h.Headers, want) {
		t.Errorf("HTTP server = %s %v, want headers %v", h.URL, h.Headers, want)
	}
	st := got[1]
	env := map[string]bool{}
	for _, kv := range st.Env {
		env[kv] = true
	}
	if st.Command != "srv" || st.Cwd != "/ws" || !env["PATH=/bin"] || !env["MCPTEST_SHARED=shared"] || !env["K=v"] || env["MCPTEST_SECRET=secret"] {
		t.Errorf("stdio server = %s in %s with %v; want srv in /ws with PATH, MCPTEST_SHARED and K, without MCPTEST_SECRET", st.Command, st.Cwd, st.Env)
	}
}

// TestReloadWithoutUserFile: with no user config file (the default path
// names none), a reload reads the workspace's file alone, as the start
// did, instead of failing; a user file that is there is read.
func TestReloadWithoutUserFile(t *testing.T) {
	ws := t.TempDir()
	home := t.TempDir()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := New(Options{Cwd: ws, Sources: config.Sources{UserFile: filepath.Join(home, "config.toml")}, Log: log})
	defer s.Close()
	reload := func() error {
		var got error
		s.Reload(context.Background(), protocol.Empty{}, func(_ any, err error) { got = err })
		return got
	}
	if err := reload(); err != nil {
		t.Fatalf("reload without a user file: %v", err)
	}
	user := "[mcp_servers.docs]\ncommand = \"docs-server\"\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := reload(); err != nil {
		t.Fatalf("reload with a user file: %v", err)
	}
	s.mu.Lock()
	_, ok := s.servers["docs"]
	s.mu.Unlock()
	if !ok {
		t.Fatalf("the user file's server was not read: %v", s.servers)
	}
}

// TestReloadHidesNewCredentials: a server that a reload adds reads its
// token from a variable whose name says nothing of a secret; commands
// must not get that variable any more than one named at start.
func TestReloadHidesNewCredentials(t *testing.T) {
	home := t.TempDir()
	const auth, header = "APSERVER_TEST_RELOADED_AUTH", "APSERVER_TEST_RELOADED_HDR"
	if sandbox.SecretEnv(auth) || sandbox.SecretEnv(header) {
		t.Fatal("the variables look like secrets already: the test proves nothing")
	}
	s := New(Options{Cwd: t.TempDir(), Sources: config.Sources{UserFile: filepath.Join(home, "config.toml")}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer s.Close()
	user := "[mcp_servers.docs]\nurl = \"http://127.0.0.1:1/mcp\"\nbearer_token_env_var = \"" + auth + "\"\nenv_http_headers = { \"X-Org\" = \"" + header + "\" }\n"
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	s.Reload(context.Background(), protocol.Empty{}, func(_ any, e error) { err = e })
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{auth, header} {
		if !sandbox.SecretEnv(v) {
			t.Errorf("after the reload, commands still get %s", v)
		}
	}
}
