package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model"
)

func writeFile(t *testing.T, path, text string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// env returns a Getenv over a fixed map (HOME points at an empty dir so no
// real user file is found).
func env(t *testing.T, kv ...string) func(string) string {
	m := map[string]string{"HOME": t.TempDir()}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDefault(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Model != DefaultModel || c.Provider != "openai" || c.ApprovalPolicy != "on-request" ||
		c.Sandbox != "workspace-write" || c.MaxLineBytes != 16<<20 || c.Durability != "normal" {
		t.Errorf("defaults: %+v", c)
	}
	p := c.Providers["openai"]
	if p.BaseURL != "https://api.openai.com/v1" || p.APIKeyEnv != "OPENAI_API_KEY" || p.Wire != "responses" {
		t.Errorf("openai provider: %+v", p)
	}
	// Default() values do not share maps.
	c.Providers["x"] = ProviderConfig{}
	if _, ok := Default().Providers["x"]; ok {
		t.Error("Default() shares its providers map")
	}
}

// TestPrecedence: defaults < user file < workspace file < environment < flags.
func TestPrecedence(t *testing.T) {
	type layers struct{ user, workspace, env, flag bool }
	rows := []struct {
		on                         layers
		model, wire, base, approve string
	}{
		{layers{}, DefaultModel, "responses", "https://api.openai.com/v1", "on-request"},
		{layers{user: true}, "user-model", "chat", "http://user/v1", "never"},
		{layers{user: true, workspace: true}, "ws-model", "responses", "http://user/v1", "untrusted"},
		{layers{workspace: true}, "ws-model", "responses", "https://api.openai.com/v1", "untrusted"},
		{layers{user: true, workspace: true, env: true}, "env-model", "chat", "http://env/v1", "untrusted"},
		{layers{env: true}, "env-model", "chat", "http://env/v1", "on-request"},
		{layers{user: true, workspace: true, env: true, flag: true}, "flag-model", "responses", "http://flag/v1", "on-failure"},
		{layers{user: true, flag: true}, "flag-model", "responses", "http://flag/v1", "on-failure"},
	}
	for _, r := range rows {
		t.Run(label(r.on.user, "user")+label(r.on.workspace, "ws")+label(r.on.env, "env")+label(r.on.flag, "flag"), func(t *testing.T) {
			dir := t.TempDir()
			opts := LoadOptions{Getenv: env(t)}
			if r.on.user {
				opts.UserFile = writeFile(t, filepath.Join(dir, "user.toml"), `
model = "user-model"
approval_policy = "never"
[providers.openai]
base_url = "http://user/v1"
wire = "chat"
`)
			}
			if r.on.workspace {
				ws := filepath.Join(dir, "ws")
				writeFile(t, filepath.Join(ws, ".apserver", "config.toml"), `
model = "ws-model"
approval_policy = "untrusted"
[providers.openai]
wire = "responses"
`)
				opts.Workspace = ws
			}
			if r.on.env {
				opts.Getenv = env(t, "APSERVER_MODEL", "env-model", "OPENAI_BASE_URL", "http://env/v1", "APSERVER_WIRE", "chat")
			}
			if r.on.flag {
				opts.Overrides = Overrides{Model: ptr("flag-model"), Wire: ptr("responses"), BaseURL: ptr("http://flag/v1"), ApprovalPolicy: ptr("on-failure")}
			}
			c, err := Load(opts)
			if err != nil {
				t.Fatal(err)
			}
			p := c.Providers[c.Provider]
			got := [4]string{c.Model, p.Wire, p.BaseURL, c.ApprovalPolicy}
			want := [4]string{r.model, r.wire, r.base, r.approve}
			if got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
}

func label(on bool, s string) string {
	if on {
		return "+" + s
	}
	return ""
}

const fullUserFile = `
model = "gpt-main"
provider = "openai"
approval_policy = "on-request"
sandbox = "read-only"
max_line_bytes = 1048576
stream_idle_timeout_ms = 30000
request_max_retries = 2
data_dir = "data"
durability = "full"
instructions = "Be terse."

[providers.openai]
api_key_env = "MY_OPENAI_KEY"
headers = { "OpenAI-Organization" = "org-1" }

[providers.ollama]
base_url = "http://localhost:11434/v1"
wire = "chat"
max_retries = 0
idle_timeout_ms = 300000

[providers.openrouter]
base_url = "https://openrouter.ai/api/v1"
wire = "chat"
api_key_env = "OPENROUTER_API_KEY"
headers = { "HTTP-Referer" = "https://example.com", "X-Title" = "apserver" }

[roles.decision]
model = "qwen3:8b"
provider = "ollama"

[roles.summary]
model = "gpt-small"

[[models]]
id = "gpt-main"
display_name = "GPT Main"
description = "The default."
reasoning_efforts = ["low", "medium", "high"]
default_reasoning_effort = "medium"
context_window = 400000

[[models]]
id = "llama3.3"
provider = "ollama"
hidden = true

[prices."gpt-main"]
input_per_mtok = 1.25
cached_input_per_mtok = 0.125
output_per_mtok = 10
`

func TestLoadFullFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "config.toml"), fullUserFile)
	c, err := Load(LoadOptions{UserFile: path, Getenv: env(t, "MY_OPENAI_KEY", "sk-mine", "OPENROUTER_API_KEY", "sk-or", "OPENAI_API_KEY", "sk-not-used")})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox != "read-only" || c.MaxLineBytes != 1<<20 || c.StreamIdleTimeout != 30*time.Second ||
		c.RequestMaxRetries != 2 || c.Durability != "full" || c.Instructions != "Be terse." {
		t.Errorf("scalars: %+v", c)
	}
	if c.DataDir != filepath.Join(dir, "data") {
		t.Errorf("data_dir %q, want it relative to the file", c.DataDir)
	}
	wantModels := []ModelInfo{
		{ID: "gpt-main", DisplayName: "GPT Main", Description: "The default.", ReasoningEfforts: []string{"low", "medium", "high"}, DefaultReasoningEffort: "medium", ContextWindow: 400000},
		{ID: "llama3.3", Provider: "ollama", Hidden: true},
	}
	if !reflect.DeepEqual(c.Models, wantModels) {
		t.Errorf("models %+v", c.Models)
	}
	if c.Prices["gpt-main"] != (Price{1.25, 0.125, 10}) {
		t.Errorf("prices %+v", c.Prices)
	}

	// Default role.
	m, p, err := c.ResolveModel("", "")
	if err != nil {
		t.Fatal(err)
	}
	if m != "gpt-main" || p.Name != "openai" || p.BaseURL != "https://api.openai.com/v1" || p.APIKey != "sk-mine" ||
		p.Wire != model.WireResponses || p.MaxRetries != 2 || p.IdleTimeout != 30*time.Second ||
		p.Headers["OpenAI-Organization"] != "org-1" {
		t.Errorf("default: %q %+v", m, p)
	}
	// A role with its own model and provider; max_retries = 0 means none.
	m, p, err = c.ResolveModel("decision", "")
	if err != nil {
		t.Fatal(err)
	}
	if m != "qwen3:8b" || p.Name != "ollama" || p.Wire != model.WireChat || p.APIKey != "" ||
		p.MaxRetries >= 0 || p.IdleTimeout != 5*time.Minute {
		t.Errorf("decision: %q %+v", m, p)
	}
	// A role with only a model keeps the default provider.
	m, p, _ = c.ResolveModel("summary", "")
	if m != "gpt-small" || p.Name != "openai" {
		t.Errorf("summary: %q %s", m, p.Name)
	}
	// Unknown roles fall back to the default.
	m, p, _ = c.ResolveModel("nope", "")
	if m != "gpt-main" || p.Name != "openai" {
		t.Errorf("unknown role: %q %s", m, p.Name)
	}
	// An override keeps the role's provider...
	m, p, _ = c.ResolveModel("decision", "mistral")
	if m != "mistral" || p.Name != "ollama" {
		t.Errorf("override: %q %s", m, p.Name)
	}
	// ...unless the catalog says otherwise.
	m, p, _ = c.ResolveModel("", "llama3.3")
	if m != "llama3.3" || p.Name != "ollama" {
		t.Errorf("catalog override: %q %s", m, p.Name)
	}
	// Keys come from the variable named by api_key_env.
	c.Provider = "openrouter"
	_, p, _ = c.ResolveModel("", "")
	if p.APIKey != "sk-or" || p.Headers["X-Title"] != "apserver" {
		t.Errorf("openrouter: %+v", p)
	}
}

func TestCatalog(t *testing.T) {
	c := Default()
	if got := c.Catalog(); len(got) != 1 || got[0].ID != DefaultModel {
		t.Errorf("catalog %+v", got)
	}
	c.Models = []ModelInfo{{ID: "a"}, {ID: DefaultModel}}
	if got := c.Catalog(); len(got) != 2 {
		t.Errorf("catalog %+v", got)
	}
}

func TestEnvironment(t *testing.T) {
	c, err := Load(LoadOptions{Getenv: env(t,
		"OPENAI_API_KEY", "sk-env", "OPENAI_BASE_URL", "http://localhost:8080/v1", "APSERVER_MODEL", "local", "APSERVER_WIRE", "chat")})
	if err != nil {
		t.Fatal(err)
	}
	m, p, err := c.ResolveModel("", "")
	if err != nil {
		t.Fatal(err)
	}
	if m != "local" || p.APIKey != "sk-env" || p.BaseURL != "http://localhost:8080/v1" || p.Wire != model.WireChat {
		t.Errorf("%q %+v", m, p)
	}
	// The defaults map retries and idle timeout to the model defaults.
	if p.MaxRetries != model.DefaultMaxRetries || p.IdleTimeout != model.DefaultIdleTimeout {
		t.Errorf("retries %d idle %s", p.MaxRetries, p.IdleTimeout)
	}

	// OPENAI_API_KEY also serves a default provider without api_key_env,
	// but never one that names another variable.
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "c.toml"), `
provider = "local"
[providers.local]
base_url = "http://localhost:8000/v1"
[providers.other]
base_url = "https://other/v1"
api_key_env = "OTHER_KEY"
[roles.r]
provider = "other"
`)
	c, err = Load(LoadOptions{UserFile: user, Getenv: env(t, "OPENAI_API_KEY", "sk-env")})
	if err != nil {
		t.Fatal(err)
	}
	_, p, _ = c.ResolveModel("", "")
	if p.APIKey != "sk-env" {
		t.Errorf("local key %q", p.APIKey)
	}
	_, p, _ = c.ResolveModel("r", "")
	if p.APIKey != "" {
		t.Errorf("other provider got key %q", p.APIKey)
	}

	if _, err := Load(LoadOptions{Getenv: env(t, "APSERVER_WIRE", "grpc")}); err == nil || !strings.Contains(err.Error(), "APSERVER_WIRE") {
		t.Errorf("bad APSERVER_WIRE: %v", err)
	}
}

func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, user, workspace string
		wantAll               []string
	}{
		{name: "unknown key", user: "model = \"m\"\nmodle = \"x\"\n", wantAll: []string{`unknown key "modle"`, "user.toml"}},
		{name: "unknown nested keys", user: "[providers.openai]\nbaseurl = \"x\"\n[roles.decision]\nmodel = \"m\"\ntemp = 1\n",
			wantAll: []string{`"providers.openai.baseurl"`, `"roles.decision.temp"`, "user.toml"}},
		{name: "unknown key in workspace", workspace: "[[models]]\nid = \"a\"\nwindow = 3\n", wantAll: []string{`"models.window"`, filepath.Join(".apserver", "config.toml")}},
		{name: "bad wire", user: "[providers.openai]\nwire = \"grpc\"\n", wantAll: []string{"providers.openai.wire", `unknown wire "grpc"`}},
		{name: "bad approval policy", user: "approval_policy = \"sometimes\"\n", wantAll: []string{"approval_policy", "sometimes"}},
		{name: "bad sandbox", user: "sandbox = \"none\"\n", wantAll: []string{"sandbox", "none"}},
		{name: "bad durability", user: "durability = \"eventual\"\n", wantAll: []string{"durability"}},
		{name: "unknown default provider", user: "provider = \"nope\"\n", wantAll: []string{`"nope"`}},
		{name: "role with unknown provider", user: "[roles.decision]\nprovider = \"nope\"\n", wantAll: []string{"decision", `"nope"`}},
		{name: "new provider without base_url", user: "[providers.x]\nwire = \"chat\"\n", wantAll: []string{"providers.x", "base_url"}},
		{name: "syntax error", user: "model = \n", wantAll: []string{"user.toml", "line 1"}},
		{name: "wrong type", user: "max_line_bytes = \"big\"\n", wantAll: []string{"user.toml", "max_line_bytes"}},
		{name: "bad trust level", user: "[projects.\"/x\"]\ntrust_level = \"yes\"\n", wantAll: []string{"trust_level", `"yes"`}},
		{name: "relative project path", user: "[projects.\"x\"]\ntrust_level = \"trusted\"\n", wantAll: []string{"projects", "absolute"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			opts := LoadOptions{Getenv: env(t)}
			if tc.user != "" {
				opts.UserFile = writeFile(t, filepath.Join(dir, "user.toml"), tc.user)
			}
			if tc.workspace != "" {
				writeFile(t, filepath.Join(dir, ".apserver", "config.toml"), tc.workspace)
				opts.Workspace = dir
			}
			_, err := Load(opts)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.wantAll {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestUserFileDiscovery(t *testing.T) {
	xdg := t.TempDir()
	getenv := env(t, "XDG_CONFIG_HOME", xdg)
	if got, want := userFile(getenv), filepath.Join(xdg, "apserver", "config.toml"); got != want {
		t.Errorf("userFile %q, want %q", got, want)
	}
	// Absent: defaults.
	c, err := Load(LoadOptions{Getenv: getenv})
	if err != nil || c.Model != DefaultModel {
		t.Fatalf("%v %q", err, c.Model)
	}
	// Present: read.
	writeFile(t, filepath.Join(xdg, "apserver", "config.toml"), "model = \"found\"\n")
	c, err = Load(LoadOptions{Getenv: getenv})
	if err != nil || c.Model != "found" {
		t.Fatalf("%v %q", err, c.Model)
	}
	// A named file must exist.
	if _, err := Load(LoadOptions{UserFile: filepath.Join(xdg, "missing.toml"), Getenv: getenv}); err == nil {
		t.Error("missing named user file accepted")
	}
	// Without XDG_CONFIG_HOME: ~/.config.
	h := t.TempDir()
	if got := userFile(func(k string) string { return map[string]string{"HOME": h}[k] }); got != filepath.Join(h, ".config", "apserver", "config.toml") {
		t.Errorf("userFile %q", got)
	}
	// Data dir default follows XDG_DATA_HOME.
	c, _ = Load(LoadOptions{Getenv: env(t, "XDG_DATA_HOME", "/xdg/data")})
	if c.DataDir != filepath.Join("/xdg/data", "apserver") {
		t.Errorf("data dir %q", c.DataDir)
	}
}

func TestMergeAcrossFiles(t *testing.T) {
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "user.toml"), `
[providers.openai]
headers = { "A" = "1", "B" = "1" }
[[models]]
id = "m1"
display_name = "one"
[[models]]
id = "m2"
[prices.m1]
input_per_mtok = 1
output_per_mtok = 2
[roles.decision]
model = "small"
provider = "openai"
`)
	writeFile(t, filepath.Join(dir, "ws", ".apserver", "config.toml"), `
instructions = "Project rules."
[providers.openai]
headers = { "B" = "2" }
[[models]]
id = "m1"
display_name = "uno"
[[models]]
id = "m3"
[prices.m1]
output_per_mtok = 3
[roles.decision]
model = "tiny"
`)
	c, err := Load(LoadOptions{UserFile: user, Workspace: filepath.Join(dir, "ws"), Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Providers["openai"].Headers; h["A"] != "1" || h["B"] != "2" {
		t.Errorf("headers %v", h)
	}
	var ids []string
	for _, m := range c.Models {
		ids = append(ids, m.ID+"="+m.DisplayName)
	}
	if strings.Join(ids, ",") != "m1=uno,m2=,m3=" {
		t.Errorf("models %v", ids)
	}
	if c.Prices["m1"] != (Price{InputPerMTok: 1, OutputPerMTok: 3}) {
		t.Errorf("price %+v", c.Prices["m1"])
	}
	if c.Roles["decision"] != (RoleConfig{Model: "tiny", Provider: "openai"}) {
		t.Errorf("role %+v", c.Roles["decision"])
	}
	if c.Instructions != "Project rules." {
		t.Errorf("instructions %q", c.Instructions)
	}
}

func TestOverrides(t *testing.T) {
	dur := 5 * time.Second
	c, err := Load(LoadOptions{Getenv: env(t), Overrides: Overrides{
		Sandbox: ptr("danger-full-access"), MaxLineBytes: ptr(1024), StreamIdleTimeout: &dur,
		RequestMaxRetries: ptr(0), DataDir: ptr("/tmp/x"), Durability: ptr("full"), Instructions: ptr("hi"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Sandbox != "danger-full-access" || c.MaxLineBytes != 1024 || c.DataDir != "/tmp/x" || c.Durability != "full" || c.Instructions != "hi" {
		t.Errorf("%+v", c)
	}
	_, p, _ := c.ResolveModel("", "")
	if p.IdleTimeout != 5*time.Second || p.MaxRetries >= 0 {
		t.Errorf("provider %+v", p)
	}
	if _, err := Load(LoadOptions{Getenv: env(t), Overrides: Overrides{Wire: ptr("nope")}}); err == nil {
		t.Error("bad --wire accepted")
	}
	if _, err := Load(LoadOptions{Getenv: env(t), Overrides: Overrides{Provider: ptr("nope")}}); err == nil {
		t.Error("unknown --provider accepted")
	}
}

// TestBadBaseURL: a base URL that cannot work fails Load, naming where it
// came from.
func TestBadBaseURL(t *testing.T) {
	for _, tc := range []struct {
		name, file, env, flag, want string
	}{
		{name: "env no scheme", env: "/v1", want: "OPENAI_BASE_URL"},
		{name: "env ftp", env: "ftp://x", want: "OPENAI_BASE_URL"},
		{name: "env host:port", env: "localhost:8080", want: "OPENAI_BASE_URL"},
		{name: "flag", flag: "localhost:8080", want: "--base-url"},
		{name: "flag over a bad env", env: "/v1", flag: "ftp://x", want: "--base-url"},
		{name: "file", file: "[providers.openai]\nbase_url = \"/v1\"\n", want: "providers.openai.base_url"},
		{name: "file, new provider", file: "[providers.local]\nbase_url = \"localhost:8080\"\n", want: "providers.local.base_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := LoadOptions{Getenv: env(t)}
			if tc.env != "" {
				opts.Getenv = env(t, "OPENAI_BASE_URL", tc.env)
			}
			if tc.flag != "" {
				opts.Overrides.BaseURL = ptr(tc.flag)
			}
			if tc.file != "" {
				opts.UserFile = writeFile(t, filepath.Join(t.TempDir(), "user.toml"), tc.file)
			}
			_, err := Load(opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load = %v, want an error naming %s", err, tc.want)
			}
		})
	}
	// A good flag wins over a bad environment variable.
	if _, err := Load(LoadOptions{Getenv: env(t, "OPENAI_BASE_URL", "/v1"), Overrides: Overrides{BaseURL: ptr("http://localhost:8080/v1")}}); err != nil {
		t.Errorf("Load with a good --base-url over a bad OPENAI_BASE_URL = %v", err)
	}
}

// TestPassEnv: the user's sandbox_settings.pass_env lists variables that
// commands get although they look like secrets; a name that is not a
// variable's is refused by key, and so is one that holds a secret of
// apserver's, whatever the config calls it.
func TestPassEnv(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) (Config, error) {
		return Load(LoadOptions{UserFile: writeFile(t, filepath.Join(dir, "user.toml"), text), Getenv: env(t)})
	}
	c, err := load("[sandbox_settings]\npass_env = [\"NPM_TOKEN\", \"CARGO_REGISTRY_TOKEN\", \"NPM_TOKEN\"]\n")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.SandboxPassEnv, []string{"NPM_TOKEN", "CARGO_REGISTRY_TOKEN"}) {
		t.Errorf("SandboxPassEnv = %q", c.SandboxPassEnv)
	}
	for _, tc := range []struct{ text, want string }{
		{"[sandbox_settings]\npass_env = [\"NPM TOKEN\"]\n", `sandbox_settings.pass_env: "NPM TOKEN" is not an environment variable name`},
		{"[sandbox_settings]\npass_env = [\"OPENAI_API_KEY\"]\n", "sandbox_settings.pass_env: OPENAI_API_KEY holds a secret of apserver's (providers.openai.api_key_env)"},
		{"[sandbox_settings]\npass_env = [\"GITHUB_TOKEN\"]\n", "GITHUB_TOKEN holds a secret of apserver's (the GitHub token)"},
		{"[sandbox_settings]\npass_env = [\"MY_GH\"]\n[github]\ntoken_env = \"MY_GH\"\n", "MY_GH holds a secret of apserver's (github.token_env)"},
		{"[sandbox_settings]\npass_env = [\"LOCAL_KEY\"]\n[providers.local]\nbase_url = \"http://localhost:1/v1\"\napi_key_env = \"LOCAL_KEY\"\n", "LOCAL_KEY holds a secret of apserver's (providers.local.api_key_env)"},
		{"[sandbox_settings]\npass_env = [\"MCP_TOKEN\"]\n[mcp_servers.docs]\nurl = \"http://localhost:1/mcp\"\nbearer_token_env_var = \"MCP_TOKEN\"\n", "MCP_TOKEN holds a secret of apserver's (mcp_servers.docs.bearer_token_env_var)"},
		{"[sandbox_settings]\npass_env = [\"APSERVER_DATABASE_URL\"]\n", "APSERVER_DATABASE_URL holds a secret of apserver's (the cluster's database URL)"},
	} {
		if _, err := load(tc.text); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.text, err, tc.want)
		}
	}
}
