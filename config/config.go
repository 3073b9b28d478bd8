// Package config owns apserver's configuration: the built-in defaults, the
// user and workspace TOML files, the environment variables and the flag
// overrides, merged in that order of precedence, and the resolution of a
// role or model name to a model.Provider. It also owns project trust
// (trust.go): a workspace file may only tighten the SafetyKeys unless the
// user file trusts the project, and ProjectTrusted answers that for any
// project file.
//
// config may import model (for model.Provider and model.Wire) and the
// standard library; it must not import session, server, store or tools.
package config

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/apserver/apserver/model"
)

// DefaultModel is the model used when no file, variable or flag names one.
const DefaultModel = "gpt-5.1-codex"

// DefaultMaxLineBytes caps one JSONL protocol line.
const DefaultMaxLineBytes = 16 << 20

// Valid values of the string settings.
var (
	ApprovalPolicies = []string{"untrusted", "on-failure", "on-request", "never"}
	Sandboxes        = []string{"read-only", "workspace-write", "danger-full-access"}
	Durabilities     = []string{"normal", "full"}
)

// Config is apserver's merged configuration.
type Config struct {
	Model     string // default model name (role "default")
	Provider  string // default provider name
	Providers map[string]ProviderConfig
	Roles     map[string]RoleConfig // e.g. "decision"; "default" is implied by Model/Provider
	Models    []ModelInfo           // catalog shown by model/list

	ApprovalPolicy    string // default for new threads
	Sandbox           string // default for new threads
	MaxLineBytes      int    // JSONL line cap
	StreamIdleTimeout time.Duration
	RequestMaxRetries int // retries after the first attempt; 0 = none
	DataDir           string
	Durability        string // "normal" | "full"
	Instructions      string // extra system-prompt text
	Prices            map[string]Price

	// Caps on one model response and on one turn (caps.go); 0 = no cap.
	ResponseMaxOutputBytes int64
	ResponseMaxTime        time.Duration
	TurnMaxOutputBytes     int64
	TurnMaxTime            time.Duration

	// Context compaction (compaction.go): the context window of models the
	// catalog does not size, and the prompt size that triggers automatic
	// compaction (0 = 90% of the window).
	ModelContextWindow         int64
	ModelAutoCompactTokenLimit int64

	// SandboxWritableRoots are extra directories commands and file tools
	// may write in workspace-write mode (a workspace file adds them only when
	// the project is trusted).
	SandboxWritableRoots []string
	// SandboxReadableRoots are extra directories sandboxed commands may
	// read besides the system directories and the workspace (likewise).
	SandboxReadableRoots []string
	// SandboxNetwork lets sandboxed commands use the network (likewise).
	SandboxNetwork bool
	// SandboxPassEnv names variables that commands get although their
	// names look like secrets (NPM_TOKEN, say); never one of OwnSecretEnv
	// (only the user's file, or a trusted project's, sets it).
	SandboxPassEnv []string
	// RulesFile is the user's command rules file (see tools/rules); the
	// workspace's .apserver/rules is read as well.
	RulesFile string
	// ApplyPatchTool is how apply_patch is offered: "freeform" (a Responses
	// custom tool taking the raw patch; a one-string function on the Chat
	// wire) or "function" (a function taking {"input": patch}).
	ApplyPatchTool string

	// MaxConcurrentModelCalls caps the model requests in flight across all
	// threads; FullAuto tunes full-auto runs (fullauto.go).
	MaxConcurrentModelCalls int
	FullAuto                FullAutoConfig
	// Runs are run/start's defaults and worktree setup (runs.go).
	Runs RunsConfig
	// Cluster keeps runs in PostgreSQL (cluster.go).
	Cluster ClusterConfig
	// Manager is the manager's heartbeat (manager.go).
	Manager ManagerConfig
	// GitHub is how runs end on GitHub (github.go).
	GitHub GitHubConfig
	// Brain is the project brain's: project_context and [brain] (brain.go).
	Brain BrainConfig

	// Projects maps a project directory (cleaned, symbolic links resolved)
	// to its trust_level, from the user file's [projects."PATH"] tables;
	// see ProjectTrusted.
	Projects map[string]string
	// MCPServers are the [mcp_servers.NAME] tables (mcp.go), by name;
	// MCPToolOutputMaxBytes caps the text of one MCP tool result the model
	// sees.
	MCPServers            map[string]MCPServer
	MCPToolOutputMaxBytes int64
	// DynamicToolTimeout bounds a client's answer to item/tool/call (a
	// tool the editor declared on thread/start).
	DynamicToolTimeout time.Duration
	// Warnings say what Load skipped in a file it could still use, e.g. a
	// key an untrusted workspace file may not loosen. The caller logs them.
	Warnings []string
}

// ApplyPatchTools are the valid values of ApplyPatchTool.
var ApplyPatchTools = []string{"freeform", "function"}

// ProviderConfig is one [providers.NAME] table.
type ProviderConfig struct {
	Name      string
	BaseURL   string
	APIKey    string // literal key; the variable named by APIKeyEnv wins when set
	APIKeyEnv string // environment variable holding the key
	Wire      string // "responses" | "chat"
	Headers   map[string]string
	// MaxRetries overrides Config.RequestMaxRetries for this provider.
	MaxRetries *int
	// IdleTimeoutMs overrides Config.StreamIdleTimeout for this provider.
	IdleTimeoutMs *int

	// envKey is the value of APIKeyEnv (or, for the default provider,
	// OPENAI_API_KEY) as Load saw it; envRead says Load looked.
	envKey  string
	envRead bool
}

// RoleConfig picks the model and provider for one role. Empty fields fall
// back to the default model and provider.
type RoleConfig struct {
	Model    string
	Provider string
}

// ModelInfo is one entry of the model catalog.
type ModelInfo struct {
	ID                     string
	DisplayName            string
	Description            string
	Provider               string // "" = whichever provider the role uses
	ReasoningEfforts       []string
	DefaultReasoningEffort string
	ContextWindow          int64
	Hidden                 bool
}

// Price is the USD cost per million tokens of one model.
type Price struct {
	InputPerMTok       float64
	CachedInputPerMTok float64
	OutputPerMTok      float64
}

// Default returns the built-in configuration: the OpenAI provider on the
// Responses wire, its key from OPENAI_API_KEY.
func Default() Config { return defaults(os.Getenv) }

func defaults(getenv func(string) string) Config {
	return Config{
		Model:    DefaultModel,
		Provider: "openai",
		Providers: map[string]ProviderConfig{
			"openai": {
				Name:      "openai",
				BaseURL:   "https://api.openai.com/v1",
				APIKeyEnv: "OPENAI_API_KEY",
				Wire:      string(model.WireResponses),
			},
		},
		Roles:             map[string]RoleConfig{},
		Prices:            map[string]Price{},
		ApprovalPolicy:    "on-request",
		Sandbox:           "workspace-write",
		MaxLineBytes:      DefaultMaxLineBytes,
		StreamIdleTimeout: model.DefaultIdleTimeout,
		RequestMaxRetries: model.DefaultMaxRetries,
		DataDir:           defaultDataDir(getenv),
		Durability:        "normal",

		ResponseMaxOutputBytes: model.DefaultMaxOutputBytes,
		ResponseMaxTime:        model.DefaultMaxResponseTime,
		TurnMaxOutputBytes:     DefaultTurnMaxOutputBytes,
		TurnMaxTime:            DefaultTurnMaxTime,

		MaxConcurrentModelCalls: DefaultMaxConcurrentModelCalls,
		FullAuto:                defaultFullAuto(),
		Runs:                    defaultRuns(),
		Cluster:                 ClusterConfig{DatabaseURL: getenv(EnvDatabaseURL), Execute: "here"},
		Manager:                 defaultManager(),
		GitHub:                  defaultGitHub(),
		RulesFile:               userRulesFile(getenv),
		ApplyPatchTool:          "freeform",
		MCPToolOutputMaxBytes:   DefaultMCPToolOutputMaxBytes,
		DynamicToolTimeout:      DefaultDynamicToolTimeout,
	}
}

// userRulesFile is the rules file beside the user config file.
func userRulesFile(getenv func(string) string) string {
	if p := userFile(getenv); p != "" {
		return filepath.Join(filepath.Dir(p), "rules")
	}
	return ""
}

// DefaultUserFile is $XDG_CONFIG_HOME/apserver/config.toml, or
// ~/.config/apserver/config.toml.
func DefaultUserFile() string { return userFile(os.Getenv) }

func userFile(getenv func(string) string) string {
	if d := getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "apserver", "config.toml")
	}
	if h := home(getenv); h != "" {
		return filepath.Join(h, ".config", "apserver", "config.toml")
	}
	return ""
}

// defaultDataDir is $XDG_DATA_HOME/apserver, or ~/.local/share/apserver.
func defaultDataDir(getenv func(string) string) string {
	if d := getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "apserver")
	}
	if h := home(getenv); h != "" {
		return filepath.Join(h, ".local", "share", "apserver")
	}
	return ".apserver-data"
}

func home(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// ResolveModel picks the model and builds the provider for a role ("" or
// "default" = the default role; an unknown role falls back to the default).
// A non-empty override replaces the role's model; the role's provider is
// kept unless the catalog entry for the override names one.
func (c Config) ResolveModel(role, override string) (string, model.Provider, error) {
	modelName, provName := c.Model, c.Provider
	if r, ok := c.Roles[role]; ok && role != "" && role != "default" {
		if r.Model != "" {
			modelName = r.Model
		}
		if r.Provider != "" {
			provName = r.Provider
		}
	}
	if override != "" {
		modelName = override
		if mi, ok := c.ModelInfo(override); ok && mi.Provider != "" {
			provName = mi.Provider
		}
	}
	return c.resolved(fmt.Sprintf("role %q", roleName(role)), modelName, provName)
}

// resolved builds provName's provider for modelName, the choice of who
// (named in the errors).
func (c Config) resolved(who, modelName, provName string) (string, model.Provider, error) {
	if modelName == "" {
		return "", model.Provider{}, fmt.Errorf("config: no model configured for %s", who)
	}
	pc, ok := c.Providers[provName]
	if !ok {
		return "", model.Provider{}, fmt.Errorf("config: %s uses unknown provider %q", who, provName)
	}
	p, err := c.buildProvider(provName, pc)
	return modelName, p, err
}

// ResolveThreadModel is the model and provider a thread's turn uses: the
// thread's model (the default one when empty) on the thread's provider
// (the default one when empty), unless the model's catalog entry names a
// provider of its own, as for roles (ResolveModel).
func (c Config) ResolveThreadModel(modelName, provName string) (string, model.Provider, error) {
	if modelName == "" {
		modelName = c.Model
	}
	if provName == "" {
		provName = c.Provider
	}
	if mi, ok := c.ModelInfo(modelName); ok && mi.Provider != "" {
		provName = mi.Provider
	}
	return c.resolved("the thread", modelName, provName)
}

func roleName(r string) string {
	if r == "" {
		return "default"
	}
	return r
}

func (c Config) buildProvider(name string, pc ProviderConfig) (model.Provider, error) {
	wire, err := model.ParseWire(pc.Wire)
	if err != nil {
		return model.Provider{}, fmt.Errorf("config: provider %q: %w", name, err)
	}
	p := model.Provider{
		Name:        name,
		BaseURL:     pc.BaseURL,
		APIKey:      pc.APIKey,
		APIKeyEnv:   pc.APIKeyEnv,
		Wire:        wire,
		MaxRetries:  retriesToModel(c.RequestMaxRetries),
		IdleTimeout: c.StreamIdleTimeout,

		MaxOutputBytes:  capToModel(c.ResponseMaxOutputBytes),
		MaxResponseTime: time.Duration(capToModel(int64(c.ResponseMaxTime))),
	}
	if k := pc.envKey; k != "" {
		p.APIKey = k
	} else if !pc.envRead && pc.APIKeyEnv != "" {
		if k := os.Getenv(pc.APIKeyEnv); k != "" {
			p.APIKey = k
		}
	}
	if len(pc.Headers) > 0 {
		p.Headers = make(map[string]string, len(pc.Headers))
		for k, v := range pc.Headers {
			p.Headers[k] = v
		}
	}
	if pc.MaxRetries != nil {
		p.MaxRetries = retriesToModel(*pc.MaxRetries)
	}
	if pc.IdleTimeoutMs != nil && *pc.IdleTimeoutMs > 0 {
		p.IdleTimeout = time.Duration(*pc.IdleTimeoutMs) * time.Millisecond
	}
	return p, nil
}

// retriesToModel maps a configured retry count (0 = no retries) to
// model.Provider.MaxRetries (0 = default, negative = none).
func retriesToModel(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// ModelInfo returns the catalog entry with the given id.
func (c Config) ModelInfo(id string) (ModelInfo, bool) {
	for _, m := range c.Models {
		if m.ID == id {
			return m, true
		}
	}
	return ModelInfo{}, false
}

// Catalog returns the models to list: the configured catalog, with an entry
// for the default model first when the catalog lacks one.
func (c Config) Catalog() []ModelInfo {
	if _, ok := c.ModelInfo(c.Model); ok || c.Model == "" {
		return c.Models
	}
	out := make([]ModelInfo, 0, len(c.Models)+1)
	out = append(out, ModelInfo{ID: c.Model, DisplayName: c.Model, Provider: c.Provider})
	return append(out, c.Models...)
}

// OwnSecretEnv names the variables that hold apserver's own secrets, each
// with where the configuration names it: every provider's api_key_env
// (and OPENAI_API_KEY, which serves the default provider without one),
// the GitHub token's variable (GITHUB_TOKEN and GH_TOKEN when token_env is
// unset), the MCP servers' bearer tokens and header values, and the
// cluster's database URL. No command gets any of them, whatever
// sandbox_settings.pass_env says.
func (c Config) OwnSecretEnv() map[string]string {
	own := map[string]string{EnvOpenAIAPIKey: "the default provider's key", EnvDatabaseURL: "the cluster's database URL"}
	for _, name := range sortedKeys(c.Providers) {
		if v := c.Providers[name].APIKeyEnv; v != "" {
			own[v] = "providers." + name + ".api_key_env"
		}
	}
	if v := c.GitHub.TokenEnv; v != "" {
		own[v] = "github.token_env"
	} else {
		own["GITHUB_TOKEN"], own["GH_TOKEN"] = "the GitHub token", "the GitHub token"
	}
	for _, name := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[name]
		if s.BearerTokenEnvVar != "" {
			own[s.BearerTokenEnvVar] = "mcp_servers." + name + ".bearer_token_env_var"
		}
		for h, v := range s.EnvHTTPHeaders {
			own[v] = "mcp_servers." + name + ".env_http_headers." + h
		}
	}
	return own
}
