package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/apserver/apserver/model"
)

// LoadOptions says where Load looks.
type LoadOptions struct {
	// UserFile is the user configuration file; "" means DefaultUserFile()
	// when that file exists. A named file must exist.
	UserFile string
	// NoUserFile: with UserFile "", read no user file, not even the
	// default one (codex exec's --ignore-user-config).
	NoUserFile bool
	// Workspace is a directory; <Workspace>/.apserver/config.toml is read
	// when present. "" = none.
	Workspace string
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
	// Overrides come from command-line flags.
	Overrides Overrides
}

// Overrides are settings from flags; nil fields are unset.
type Overrides struct {
	Model             *string
	Provider          *string
	BaseURL           *string // of the default provider
	Wire              *string // of the default provider
	ApprovalPolicy    *string
	Sandbox           *string
	MaxLineBytes      *int
	StreamIdleTimeout *time.Duration
	RequestMaxRetries *int
	DataDir           *string
	Durability        *string
	Instructions      *string
}

// WorkspaceFile is the workspace configuration path relative to the workspace.
const WorkspaceFile = ".apserver/config.toml"

// Environment variables Load reads.
const (
	EnvOpenAIBaseURL = "OPENAI_BASE_URL" // base_url of the default provider
	EnvOpenAIAPIKey  = "OPENAI_API_KEY"  // API key of the default provider
	EnvModel         = "APSERVER_MODEL"  // default model
	EnvWire          = "APSERVER_WIRE"   // wire of the default provider
	// EnvDatabaseURL is the cluster's PostgreSQL URL when the files set
	// none; commands never get it (it may carry a password).
	EnvDatabaseURL = "APSERVER_DATABASE_URL"
)

// Load merges, lowest precedence first: Default(), the user file, the
// workspace file, the environment, and opts.Overrides; then validates.
func Load(opts LoadOptions) (Config, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := defaults(getenv)

	userPath := opts.UserFile
	if userPath == "" && !opts.NoUserFile {
		if p := userFile(getenv); p != "" {
			if _, err := os.Stat(p); err == nil {
				userPath = p
			}
		}
	}
	if userPath != "" {
		if err := c.mergeFile(userPath, nil); err != nil {
			return Config{}, err
		}
	}
	if opts.Workspace != "" {
		p := filepath.Join(opts.Workspace, WorkspaceFile)
		if _, err := os.Stat(p); err == nil {
			uf := userPath
			if uf == "" {
				uf = userFile(getenv)
			}
			ws := &workspaceLayer{dir: opts.Workspace, trusted: c.ProjectTrusted(opts.Workspace), userFile: uf}
			if err := c.mergeFile(p, ws); err != nil {
				return Config{}, err
			}
		} else if !errors.Is(err, fs.ErrNotExist) {
			return Config{}, fmt.Errorf("config: %w", err)
		}
	}

	o := opts.Overrides
	// Environment and flags that name "the default provider" mean the one
	// in effect after all layers.
	if o.Provider != nil {
		c.Provider = *o.Provider
	}
	if err := c.applyEnv(getenv); err != nil {
		return Config{}, err
	}
	if err := c.applyOverrides(o); err != nil {
		return Config{}, err
	}
	// A bad base URL from the environment or a flag is named as such
	// (Validate names the file key).
	if o.BaseURL != nil && *o.BaseURL != "" {
		if err := model.CheckBaseURL(*o.BaseURL); err != nil {
			return Config{}, fmt.Errorf("config: --base-url: %w", err)
		}
	} else if v := getenv(EnvOpenAIBaseURL); v != "" {
		if err := model.CheckBaseURL(v); err != nil {
			return Config{}, fmt.Errorf("config: %s: %w", EnvOpenAIBaseURL, err)
		}
	}
	c.resolveKeys(getenv)
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// fileConfig mirrors the TOML format; pointers tell "unset" from zero.
// fileSandbox is the [sandbox_settings] table.
type fileSandbox struct {
	WritableRoots []string `toml:"writable_roots"`
	ReadableRoots []string `toml:"readable_roots"`
	Network       *bool    `toml:"network"`
	PassEnv       []string `toml:"pass_env"`
}

type fileConfig struct {
	Model               *string                 `toml:"model"`
	Provider            *string                 `toml:"provider"`
	ApprovalPolicy      *string                 `toml:"approval_policy"`
	Sandbox             *string                 `toml:"sandbox"`
	MaxLineBytes        *int                    `toml:"max_line_bytes"`
	StreamIdleTimeoutMs *int64                  `toml:"stream_idle_timeout_ms"`
	RequestMaxRetries   *int                    `toml:"request_max_retries"`
	DataDir             *string                 `toml:"data_dir"`
	Durability          *string                 `toml:"durability"`
	Instructions        *string                 `toml:"instructions"`
	Providers           map[string]fileProvider `toml:"providers"`
	Roles               map[string]fileRole     `toml:"roles"`
	Models              []fileModel             `toml:"models"`
	Prices              map[string]filePrice    `toml:"prices"`
	SandboxSettings     *fileSandbox            `toml:"sandbox_settings"`
	RulesFile           *string                 `toml:"rules_file"`
	ApplyPatchTool      *string                 `toml:"apply_patch_tool"`
	// Full auto (fullauto.go).
	MaxConcurrentModelCalls *int          `toml:"max_concurrent_model_calls"`
	FullAuto                *fileFullAuto `toml:"full_auto"`
	// Runs (runs.go).
	MaxParallelRuns *int      `toml:"max_parallel_runs"`
	Runs            *fileRuns `toml:"runs"`
	// Cluster (cluster.go).
	Cluster *fileCluster `toml:"cluster"`
	// The manager's heartbeat (manager.go).
	Manager *fileManager `toml:"manager"`
	// GitHub (github.go).
	GitHub *fileGitHub `toml:"github"`
	// Trust (trust.go); user file only.
	Projects map[string]fileProject `toml:"projects"`

	fileCaps       // caps.go
	fileCompaction // compaction.go
	fileMCP        // mcp.go
	fileBrain      // brain.go
}

type fileProvider struct {
	BaseURL       *string           `toml:"base_url"`
	APIKey        *string           `toml:"api_key"`
	APIKeyEnv     *string           `toml:"api_key_env"`
	Wire          *string           `toml:"wire"`
	Headers       map[string]string `toml:"headers"`
	MaxRetries    *int              `toml:"max_retries"`
	IdleTimeoutMs *int              `toml:"idle_timeout_ms"`
}

type fileRole struct {
	Model    *string `toml:"model"`
	Provider *string `toml:"provider"`
}

type fileModel struct {
	ID                     string   `toml:"id"`
	DisplayName            string   `toml:"display_name"`
	Description            string   `toml:"description"`
	Provider               string   `toml:"provider"`
	ReasoningEfforts       []string `toml:"reasoning_efforts"`
	DefaultReasoningEffort string   `toml:"default_reasoning_effort"`
	ContextWindow          int64    `toml:"context_window"`
	Hidden                 bool     `toml:"hidden"`
}

type filePrice struct {
	InputPerMTok       *float64 `toml:"input_per_mtok"`
	CachedInputPerMTok *float64 `toml:"cached_input_per_mtok"`
	OutputPerMTok      *float64 `toml:"output_per_mtok"`
}

// mergeFile decodes one TOML file over c (whose maps Load owns). ws is nil
// for the user file. A workspace file lives in a repository that may not be
// trusted: unless the user trusts the project (trust.go), it may only
// tighten the safety settings listed in safetyKeys, and a key that would
// loosen one is skipped with a warning in c.Warnings.
func (c *Config) mergeFile(path string, ws *workspaceLayer) error {
	var f fileConfig
	md, err := toml.DecodeFile(path, &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fmt.Errorf("config: %s: %s", path, pe.ErrorWithPosition())
		}
		return fmt.Errorf("config: %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, 0, len(und))
		for _, k := range und {
			if len(k) > 0 && k[0] == "mcp_servers" {
				continue // read by hand, unknown keys warn (mcp.go)
			}
			keys = append(keys, k.String())
		}
		if len(keys) == 1 {
			return fmt.Errorf("config: %s: unknown key %q", path, keys[0])
		}
		if len(keys) > 1 {
			return fmt.Errorf("config: %s: unknown keys %s", path, quoteAll(keys))
		}
	}
	bad := func(key, format string, args ...any) error {
		return fmt.Errorf("config: %s: %s: %s", path, key, fmt.Sprintf(format, args...))
	}
	// may says whether a key may be applied: always, unless it comes from
	// an untrusted workspace file and loosens; then it records why not.
	may := func(key string, value any, loosens bool) bool {
		if ws == nil || ws.trusted || !loosens {
			return true
		}
		c.Warnings = append(c.Warnings, ws.ignored(path, key, value))
		return false
	}
	dir := filepath.Dir(path)

	if len(f.Projects) > 0 {
		if ws != nil {
			// Trust is the user's word; a project cannot vouch for itself.
			c.Warnings = append(c.Warnings, fmt.Sprintf("config: %s: [projects] has no effect in a workspace file: trust is set only in the user file", path))
		} else if err := c.mergeProjects(f.Projects, dir, bad); err != nil {
			return err
		}
	}

	// A provider an untrusted workspace file defines would need a base_url
	// it may not set: the provider is dropped, and so is every reference
	// to it, instead of failing Load.
	dropped := map[string]bool{}
	if ws != nil && !ws.trusted {
		for name := range f.Providers {
			if _, ok := c.Providers[name]; !ok {
				dropped[name] = true
			}
		}
	}
	setStr(&c.Model, f.Model)
	if f.Provider != nil && may("provider", *f.Provider, dropped[*f.Provider]) {
		c.Provider = *f.Provider
	}
	if v := f.ApprovalPolicy; v != nil && may("approval_policy", *v, looser(ApprovalPolicies, approvalRank, *v, c.ApprovalPolicy)) {
		c.ApprovalPolicy = *v
	}
	if v := f.Sandbox; v != nil && may("sandbox", *v, looser(Sandboxes, nil, *v, c.Sandbox)) {
		c.Sandbox = *v
	}
	setStr(&c.Durability, f.Durability)
	setStr(&c.Instructions, f.Instructions)
	if f.MaxLineBytes != nil {
		c.MaxLineBytes = *f.MaxLineBytes
	}
	if f.StreamIdleTimeoutMs != nil {
		if *f.StreamIdleTimeoutMs <= 0 {
			return bad("stream_idle_timeout_ms", "must be positive")
		}
		c.StreamIdleTimeout = time.Duration(*f.StreamIdleTimeoutMs) * time.Millisecond
	}
	if f.RequestMaxRetries != nil {
		c.RequestMaxRetries = *f.RequestMaxRetries
	}
	if err := c.mergeCaps(f.fileCaps, bad, may); err != nil {
		return err
	}
	if err := c.mergeCompaction(f.fileCompaction, bad); err != nil {
		return err
	}
	if f.DataDir != nil {
		// The database holds threads' settings and full-auto runs that
		// resume at start: a project's own database could run itself.
		if d := expandPath(*f.DataDir, dir); may("data_dir", *f.DataDir, d != c.DataDir) {
			c.DataDir = d
		}
	}
	if sb := f.SandboxSettings; sb != nil {
		if len(sb.WritableRoots) > 0 && may("sandbox_settings.writable_roots", sb.WritableRoots, true) {
			for _, r := range sb.WritableRoots {
				c.SandboxWritableRoots = append(c.SandboxWritableRoots, expandPath(r, dir))
			}
		}
		if len(sb.ReadableRoots) > 0 && may("sandbox_settings.readable_roots", sb.ReadableRoots, true) {
			for _, r := range sb.ReadableRoots {
				c.SandboxReadableRoots = append(c.SandboxReadableRoots, expandPath(r, dir))
			}
		}
		if sb.Network != nil && may("sandbox_settings.network", *sb.Network, *sb.Network && !c.SandboxNetwork) {
			c.SandboxNetwork = *sb.Network
		}
		if len(sb.PassEnv) > 0 && may("sandbox_settings.pass_env", sb.PassEnv, true) {
			for _, n := range sb.PassEnv {
				if !reEnvName.MatchString(n) {
					return bad("sandbox_settings.pass_env", "%q is not an environment variable name", n)
				}
				if !slices.Contains(c.SandboxPassEnv, n) {
					c.SandboxPassEnv = append(c.SandboxPassEnv, n)
				}
			}
		}
	}
	if f.RulesFile != nil {
		// The user's rules file replaced by one the project picks would
		// drop the user's rules.
		if p := expandPath(*f.RulesFile, dir); may("rules_file", *f.RulesFile, p != c.RulesFile) {
			c.RulesFile = p
		}
	}
	if f.ApplyPatchTool != nil {
		if !slices.Contains(ApplyPatchTools, *f.ApplyPatchTool) {
			return bad("apply_patch_tool", "%q is not one of %s", *f.ApplyPatchTool, quoteAll(ApplyPatchTools))
		}
		c.ApplyPatchTool = *f.ApplyPatchTool
	}

	if err := c.mergeFullAuto(f.MaxConcurrentModelCalls, f.FullAuto, bad, may); err != nil {
		return err
	}
	if err := c.mergeRuns(f.MaxParallelRuns, f.Runs, bad, may); err != nil {
		return err
	}
	if err := c.mergeCluster(f.Cluster, bad, may); err != nil {
		return err
	}
	if err := c.mergeManager(f.Manager, bad); err != nil {
		return err
	}
	if err := c.mergeGitHub(f.GitHub, bad, may); err != nil {
		return err
	}
	if err := c.mergeMCP(f.fileMCP, path, ws, bad); err != nil {
		return err
	}
	if err := c.mergeBrain(f.fileBrain, bad); err != nil {
		return err
	}

	for _, name := range sortedKeys(f.Providers) {
		fp := f.Providers[name]
		key := "providers." + name
		pc, exists := c.Providers[name]
		if dropped[name] {
			may(key, "(a new provider)", true)
			continue
		}
		// Where requests go and which key they carry: a project that could
		// set these could send the user's key, or the code, anywhere.
		if fp.BaseURL != nil && !may(key+".base_url", *fp.BaseURL, *fp.BaseURL != pc.BaseURL) {
			fp.BaseURL = nil
		}
		if fp.APIKey != nil && !may(key+".api_key", "(hidden)", *fp.APIKey != pc.APIKey) {
			fp.APIKey = nil
		}
		if fp.APIKeyEnv != nil && !may(key+".api_key_env", *fp.APIKeyEnv, *fp.APIKeyEnv != pc.APIKeyEnv) {
			fp.APIKeyEnv = nil
		}
		pc.Name = name
		setStr(&pc.BaseURL, fp.BaseURL)
		setStr(&pc.APIKey, fp.APIKey)
		setStr(&pc.APIKeyEnv, fp.APIKeyEnv)
		if fp.Wire != nil {
			if _, err := model.ParseWire(*fp.Wire); err != nil {
				return bad(key+".wire", "%v", err)
			}
			pc.Wire = *fp.Wire
		}
		if len(fp.Headers) > 0 {
			h := make(map[string]string, len(pc.Headers)+len(fp.Headers))
			for k, v := range pc.Headers {
				h[k] = v
			}
			for k, v := range fp.Headers {
				h[k] = v
			}
			pc.Headers = h
		}
		if fp.MaxRetries != nil {
			if *fp.MaxRetries < 0 {
				return bad(key+".max_retries", "must not be negative")
			}
			pc.MaxRetries = ptr(*fp.MaxRetries)
		}
		if fp.IdleTimeoutMs != nil {
			if *fp.IdleTimeoutMs <= 0 {
				return bad(key+".idle_timeout_ms", "must be positive")
			}
			pc.IdleTimeoutMs = ptr(*fp.IdleTimeoutMs)
		}
		if !exists && pc.BaseURL == "" {
			return bad(key, "a new provider needs base_url")
		}
		c.Providers[name] = pc
	}
	for name, fr := range f.Roles {
		r := c.Roles[name]
		setStr(&r.Model, fr.Model)
		if fr.Provider != nil && may("roles."+name+".provider", *fr.Provider, dropped[*fr.Provider]) {
			r.Provider = *fr.Provider
		}
		c.Roles[name] = r
	}

	for i, fm := range f.Models {
		if fm.ID == "" {
			return bad(fmt.Sprintf("models[%d]", i), "id is required")
		}
		if fm.Provider != "" && !may(fmt.Sprintf("models[%d].provider", i), fm.Provider, dropped[fm.Provider]) {
			fm.Provider = ""
		}
		mi := ModelInfo(fm)
		if j := slices.IndexFunc(c.Models, func(m ModelInfo) bool { return m.ID == fm.ID }); j >= 0 {
			c.Models[j] = mi
		} else {
			c.Models = append(c.Models, mi)
		}
	}

	for name, fp := range f.Prices {
		// Prices turn tokens into the cost a costUsd budget counts: a lower
		// price is a larger budget.
		p := c.Prices[name]
		key := "prices." + strconv.Quote(name)
		for _, x := range []struct {
			field    string
			dst, src *float64
		}{{"input_per_mtok", &p.InputPerMTok, fp.InputPerMTok}, {"cached_input_per_mtok", &p.CachedInputPerMTok, fp.CachedInputPerMTok}, {"output_per_mtok", &p.OutputPerMTok, fp.OutputPerMTok}} {
			if x.src != nil && may(key+"."+x.field, *x.src, *x.src < *x.dst) {
				*x.dst = *x.src
			}
		}
		c.Prices[name] = p
	}
	return nil
}

func (c *Config) defaultProvider() (ProviderConfig, bool) {
	pc, ok := c.Providers[c.Provider]
	return pc, ok
}

func (c *Config) setDefaultProvider(pc ProviderConfig) {
	c.Providers[c.Provider] = pc
}

func (c *Config) applyEnv(getenv func(string) string) error {
	if v := getenv(EnvModel); v != "" {
		c.Model = v
	}
	pc, ok := c.defaultProvider()
	if !ok {
		return nil // reported by Validate
	}
	if v := getenv(EnvOpenAIBaseURL); v != "" {
		pc.BaseURL = v
	}
	if v := getenv(EnvWire); v != "" {
		if _, err := model.ParseWire(v); err != nil {
			return fmt.Errorf("config: %s: %w", EnvWire, err)
		}
		pc.Wire = v
	}
	c.setDefaultProvider(pc)
	return nil
}

func (c *Config) applyOverrides(o Overrides) error {
	setStr(&c.Model, o.Model)
	setStr(&c.ApprovalPolicy, o.ApprovalPolicy)
	setStr(&c.Sandbox, o.Sandbox)
	setStr(&c.Durability, o.Durability)
	setStr(&c.Instructions, o.Instructions)
	setStr(&c.DataDir, o.DataDir)
	if o.MaxLineBytes != nil {
		c.MaxLineBytes = *o.MaxLineBytes
	}
	if o.StreamIdleTimeout != nil {
		c.StreamIdleTimeout = *o.StreamIdleTimeout
	}
	if o.RequestMaxRetries != nil {
		c.RequestMaxRetries = *o.RequestMaxRetries
	}
	if o.BaseURL != nil || o.Wire != nil {
		pc, ok := c.defaultProvider()
		if !ok {
			return nil // reported by Validate
		}
		setStr(&pc.BaseURL, o.BaseURL)
		if o.Wire != nil {
			if _, err := model.ParseWire(*o.Wire); err != nil {
				return fmt.Errorf("config: --wire: %w", err)
			}
			pc.Wire = *o.Wire
		}
		c.setDefaultProvider(pc)
	}
	return nil
}

// resolveKeys reads each provider's api_key_env now, so that ResolveModel
// sees the environment Load was given. OPENAI_API_KEY also serves the
// default provider unless that provider names another variable.
func (c *Config) resolveKeys(getenv func(string) string) {
	for name, pc := range c.Providers {
		pc.envRead = true
		pc.envKey = ""
		if pc.APIKeyEnv != "" {
			pc.envKey = getenv(pc.APIKeyEnv)
		} else if name == c.Provider {
			pc.envKey = getenv(EnvOpenAIAPIKey)
		}
		c.Providers[name] = pc
	}
}

// Validate checks the merged configuration.
func (c Config) Validate() error {
	if _, ok := c.Providers[c.Provider]; !ok {
		return fmt.Errorf("config: default provider %q is not defined (known: %s)", c.Provider, quoteAll(sortedKeys(c.Providers)))
	}
	for _, name := range sortedKeys(c.Providers) {
		pc := c.Providers[name]
		if _, err := model.ParseWire(pc.Wire); err != nil {
			return fmt.Errorf("config: provider %q: %w", name, err)
		}
		if pc.BaseURL == "" {
			return fmt.Errorf("config: provider %q has no base_url", name)
		}
		if err := model.CheckBaseURL(pc.BaseURL); err != nil {
			return fmt.Errorf("config: providers.%s.base_url: %w", name, err)
		}
	}
	for _, name := range sortedKeys(c.Roles) {
		if p := c.Roles[name].Provider; p != "" {
			if _, ok := c.Providers[p]; !ok {
				return fmt.Errorf("config: role %q uses unknown provider %q", name, p)
			}
		}
	}
	for _, m := range c.Models {
		if m.Provider != "" {
			if _, ok := c.Providers[m.Provider]; !ok {
				return fmt.Errorf("config: model %q uses unknown provider %q", m.ID, m.Provider)
			}
		}
	}
	if !slices.Contains(ApprovalPolicies, c.ApprovalPolicy) {
		return fmt.Errorf("config: approval_policy %q is not one of %s", c.ApprovalPolicy, quoteAll(ApprovalPolicies))
	}
	if !slices.Contains(Sandboxes, c.Sandbox) {
		return fmt.Errorf("config: sandbox %q is not one of %s", c.Sandbox, quoteAll(Sandboxes))
	}
	if !slices.Contains(Durabilities, c.Durability) {
		return fmt.Errorf("config: durability %q is not one of %s", c.Durability, quoteAll(Durabilities))
	}
	if c.MaxLineBytes <= 0 {
		return fmt.Errorf("config: max_line_bytes must be positive, not %d", c.MaxLineBytes)
	}
	if c.StreamIdleTimeout <= 0 {
		return fmt.Errorf("config: stream idle timeout must be positive, not %s", c.StreamIdleTimeout)
	}
	if c.RequestMaxRetries < 0 {
		return fmt.Errorf("config: request_max_retries must not be negative")
	}
	if c.DataDir == "" {
		return fmt.Errorf("config: data_dir is empty")
	}
	own := c.OwnSecretEnv()
	for _, n := range c.SandboxPassEnv {
		if why, ok := own[n]; ok {
			return fmt.Errorf("config: sandbox_settings.pass_env: %s holds a secret of apserver's (%s), which no command gets", n, why)
		}
	}
	return nil
}

// expandPath resolves "~/" against the home directory and a relative path
// against dir (the directory of the file that set it).
func expandPath(p, dir string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			p = filepath.Join(h, p[1:])
		}
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	return p
}

func setStr(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}

func ptr[T any](v T) *T { return &v }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}
