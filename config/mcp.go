package config

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MCP servers: [mcp_servers.NAME] tables in Codex's format, so that a block
// copied from Codex's config.toml works unchanged (docs/mcp.md). A server
// runs a command (stdio) or is reached at a URL (streamable HTTP).

// Defaults of an MCP server.
const (
	DefaultMCPStartupTimeout = 10 * time.Second
	DefaultMCPToolTimeout    = 60 * time.Second
	// DefaultMCPToolOutputMaxBytes caps the text of one MCP tool result
	// the model sees; the rest is cut with a marker.
	DefaultMCPToolOutputMaxBytes = 256 << 10
)

// MCP tool approval modes (Codex's AppToolApproval).
const (
	MCPApprovalAuto    = "auto"    // ask according to the tool's annotations
	MCPApprovalPrompt  = "prompt"  // always ask
	MCPApprovalApprove = "approve" // never ask
)

// MCPApprovalModes are the valid approval modes, from the loosest.
var MCPApprovalModes = []string{MCPApprovalApprove, MCPApprovalAuto, MCPApprovalPrompt}

// MCPServer is one configured MCP server.
type MCPServer struct {
	Name string
	// stdio
	Command string
	Args    []string
	Env     map[string]string // literal variables
	EnvVars []string          // variables copied from apserver's environment
	Cwd     string
	// streamable HTTP
	URL               string
	BearerTokenEnvVar string            // variable holding the bearer token
	HTTPHeaders       map[string]string // literal headers
	EnvHTTPHeaders    map[string]string // header → variable holding its value

	StartupTimeout time.Duration
	ToolTimeout    time.Duration
	Enabled        bool
	Required       bool
	// EnabledTools, when not nil, is the allow-list of tools; DisabledTools
	// are removed after it.
	EnabledTools  []string
	DisabledTools []string
	// DefaultApprovalMode applies to tools without their own (Tools).
	DefaultApprovalMode string
	Tools               map[string]MCPToolConfig
	// SupportsParallelToolCalls: the server's tools may run concurrently.
	SupportsParallelToolCalls bool
	// Source is the file that defined the server.
	Source string
	// Untrusted: a workspace file the user does not trust added the
	// server, so its URL is the repository's choice and only a human
	// approves a call of its tools, whatever full auto's strategy.
	Untrusted bool
}

// MCPToolConfig is one [mcp_servers.NAME.tools.TOOL] table.
type MCPToolConfig struct {
	ApprovalMode string
}

// Stdio reports whether the server is a command.
func (s MCPServer) Stdio() bool { return s.Command != "" }

// ApprovalMode is the approval mode of a tool of the server.
func (s MCPServer) ApprovalMode(tool string) string {
	if t, ok := s.Tools[tool]; ok && t.ApprovalMode != "" {
		return t.ApprovalMode
	}
	if s.DefaultApprovalMode != "" {
		return s.DefaultApprovalMode
	}
	return MCPApprovalAuto
}

// ToolEnabled applies enabled_tools, then disabled_tools.
func (s MCPServer) ToolEnabled(tool string) bool {
	if s.EnabledTools != nil && !slices.Contains(s.EnabledTools, tool) {
		return false
	}
	return !slices.Contains(s.DisabledTools, tool)
}

// fileMCP are the MCP keys of a config file. The server tables are read
// by hand (mergeMCP): an unknown key inside one is a warning, as in Codex,
// not an error.
type fileMCP struct {
	MCPServers            map[string]map[string]any `toml:"mcp_servers"`
	MCPToolOutputMaxBytes *int64                    `toml:"mcp_tool_output_max_bytes"`
	// DynamicToolTimeoutSec bounds a client's answer to item/tool/call.
	DynamicToolTimeoutSec *float64 `toml:"dynamic_tool_timeout_sec"`
}

// DefaultDynamicToolTimeout is how long the client has to answer
// item/tool/call.
const DefaultDynamicToolTimeout = 5 * time.Minute

// mcpStdioKeys and mcpHTTPKeys belong to one transport only.
var (
	mcpStdioKeys = []string{"args", "env", "env_vars", "cwd"}
	mcpHTTPKeys  = []string{"bearer_token_env_var", "http_headers", "env_http_headers"}
	// mcpIgnoredKeys are Codex keys apserver reads but does not use.
	mcpIgnoredKeys = map[string]string{
		"name":                     "",
		"scopes":                   "OAuth login is not supported; ignored",
		"oauth":                    "OAuth login is not supported; ignored",
		"oauth_resource":           "OAuth login is not supported; ignored",
		"experimental_environment": "not supported; ignored",
	}
	mcpKnownKeys = []string{"command", "args", "env", "env_vars", "cwd", "url", "bearer_token", "bearer_token_env_var",
		"http_headers", "env_http_headers", "startup_timeout_sec", "startup_timeout_ms", "tool_timeout_sec",
		"enabled", "required", "enabled_tools", "disabled_tools", "default_tools_approval_mode", "tools",
		"supports_parallel_tool_calls"}
)

// mergeMCP applies the [mcp_servers] tables of one file, key by key over
// what earlier files defined. An untrusted workspace file (ws not trusted)
// cannot add a stdio server, change how a server is started or reached, make
// a server read a secret variable, or loosen an approval mode or the tool
// lists; such a key is skipped with a warning.
func (c *Config) mergeMCP(f fileMCP, path string, ws *workspaceLayer, bad func(key, format string, args ...any) error) error {
	if f.MCPToolOutputMaxBytes != nil {
		if *f.MCPToolOutputMaxBytes <= 0 {
			return bad("mcp_tool_output_max_bytes", "must be positive")
		}
		c.MCPToolOutputMaxBytes = *f.MCPToolOutputMaxBytes
	}
	if f.DynamicToolTimeoutSec != nil {
		if *f.DynamicToolTimeoutSec <= 0 {
			return bad("dynamic_tool_timeout_sec", "must be positive")
		}
		c.DynamicToolTimeout = time.Duration(*f.DynamicToolTimeoutSec * float64(time.Second))
	}
	untrusted := ws != nil && !ws.trusted
	warn := func(key, format string, args ...any) {
		c.Warnings = append(c.Warnings, fmt.Sprintf("config: %s: %s: %s", path, key, fmt.Sprintf(format, args...)))
	}
	for _, name := range sortedKeys(f.MCPServers) {
		tbl := f.MCPServers[name]
		key := "mcp_servers." + tomlKey(name)
		if name == "" || strings.ContainsAny(name, " \t") {
			return bad(key, "a server name must be non-empty and without spaces")
		}
		if _, ok := tbl["bearer_token"]; ok {
			return bad(key+".bearer_token", "a literal token is not supported: put the token in an environment variable and name it with bearer_token_env_var")
		}
		prev, exists := c.MCPServers[name]
		if untrusted && !exists {
			if _, ok := tbl["command"]; ok {
				c.Warnings = append(c.Warnings, ws.ignored(path, key, "(a new stdio server)"))
				continue
			}
		}
		s := prev
		if !exists {
			s = MCPServer{Name: name, Enabled: true, StartupTimeout: DefaultMCPStartupTimeout, ToolTimeout: DefaultMCPToolTimeout}
			if untrusted {
				// A server an untrusted repository adds is reached over
				// HTTP, at a URL of its choosing, and says of itself what
				// its tools do: every call asks a human, so nothing the
				// model read leaves for that URL unseen. (The file cannot
				// loosen this below: that is loosening an approval mode.)
				s.DefaultApprovalMode = MCPApprovalPrompt
				s.Untrusted = true
			}
		}
		s.Source = path
		skip := func(k string, v any) { c.Warnings = append(c.Warnings, ws.ignored(path, key+"."+k, v)) }
		for _, k := range sortedKeys(tbl) {
			v := tbl[k]
			kk := key + "." + k
			if msg, ok := mcpIgnoredKeys[k]; ok {
				if msg != "" {
					warn(kk, "%s", msg)
				}
				continue
			}
			if !slices.Contains(mcpKnownKeys, k) {
				warn(kk, "unknown key, ignored")
				continue
			}
			// Keys that say what runs, where requests go, or which secret
			// is read: only the user and trusted projects set them.
			switch k {
			case "command", "args", "env", "env_vars", "cwd", "bearer_token_env_var", "env_http_headers":
				if untrusted {
					skip(k, v)
					continue
				}
			case "url":
				if untrusted && exists && v != any(prev.URL) {
					skip(k, v)
					continue
				}
			}
			var err error
			switch k {
			case "command":
				s.Command, err = tomlString(v)
			case "args":
				s.Args, err = tomlStrings(v)
			case "env":
				s.Env, err = tomlStringMap(v)
			case "env_vars":
				s.EnvVars, err = mcpEnvVars(v)
			case "cwd":
				var d string
				if d, err = tomlString(v); err == nil {
					s.Cwd = expandPath(d, filepath.Dir(path))
				}
			case "url":
				s.URL, err = tomlString(v)
			case "bearer_token_env_var":
				s.BearerTokenEnvVar, err = tomlString(v)
			case "http_headers":
				s.HTTPHeaders, err = tomlStringMap(v)
			case "env_http_headers":
				s.EnvHTTPHeaders, err = tomlStringMap(v)
			case "startup_timeout_sec":
				var f float64
				if f, err = tomlNumber(v); err == nil {
					s.StartupTimeout = time.Duration(f * float64(time.Second))
				}
			case "startup_timeout_ms":
				if _, sec := tbl["startup_timeout_sec"]; sec {
					continue // startup_timeout_sec wins, as in Codex
				}
				var f float64
				if f, err = tomlNumber(v); err == nil {
					s.StartupTimeout = time.Duration(f * float64(time.Millisecond))
				}
			case "tool_timeout_sec":
				var f float64
				if f, err = tomlNumber(v); err == nil {
					s.ToolTimeout = time.Duration(f * float64(time.Second))
				}
			case "enabled":
				var b bool
				if b, err = tomlBool(v); err == nil {
					if untrusted && b && !s.Enabled {
						skip(k, v)
						continue
					}
					s.Enabled = b
				}
			case "required":
				s.Required, err = tomlBool(v)
			case "supports_parallel_tool_calls":
				s.SupportsParallelToolCalls, err = tomlBool(v)
			case "enabled_tools":
				var l []string
				if l, err = tomlStrings(v); err == nil {
					if untrusted && s.EnabledTools != nil && !subset(l, s.EnabledTools) {
						skip(k, v)
						continue
					}
					s.EnabledTools = l
				}
			case "disabled_tools":
				var l []string
				if l, err = tomlStrings(v); err == nil {
					if untrusted {
						// Only more tools off: the earlier list stays.
						for _, t := range l {
							if !slices.Contains(s.DisabledTools, t) {
								s.DisabledTools = append(s.DisabledTools, t)
							}
						}
					} else {
						s.DisabledTools = l
					}
				}
			case "default_tools_approval_mode":
				var m string
				if m, err = mcpApprovalMode(v); err == nil {
					if untrusted && mcpLooser(m, s.DefaultApprovalMode) {
						skip(k, v)
						continue
					}
					s.DefaultApprovalMode = m
				}
			case "tools":
				err = c.mergeMCPTools(&s, v, kk, untrusted, warn, skip, bad)
			}
			if err != nil {
				return bad(kk, "%v", err)
			}
		}
		if err := checkMCPServer(s, key, bad); err != nil {
			return err
		}
		if c.MCPServers == nil {
			c.MCPServers = map[string]MCPServer{}
		}
		c.MCPServers[name] = s
	}
	return nil
}

// mergeMCPTools applies a [mcp_servers.NAME.tools] table.
func (c *Config) mergeMCPTools(s *MCPServer, v any, key string, untrusted bool, warn func(string, string, ...any), skip func(string, any), bad func(string, string, ...any) error) error {
	tools, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("must be a table of tools")
	}
	next := make(map[string]MCPToolConfig, len(s.Tools)+len(tools))
	for k, t := range s.Tools {
		next[k] = t
	}
	for _, tool := range sortedKeys(tools) {
		tk := key + "." + tomlKey(tool)
		tt, ok := tools[tool].(map[string]any)
		if !ok {
			return bad(tk, "must be a table")
		}
		tc := next[tool]
		for _, k := range sortedKeys(tt) {
			if k != "approval_mode" {
				warn(tk+"."+k, "unknown key, ignored")
				continue
			}
			m, err := mcpApprovalMode(tt[k])
			if err != nil {
				return bad(tk+".approval_mode", "%v", err)
			}
			cur := s.ApprovalMode(tool)
			if untrusted && mcpLooser(m, cur) {
				skip("tools."+tomlKey(tool)+".approval_mode", m)
				continue
			}
			tc.ApprovalMode = m
		}
		next[tool] = tc
	}
	s.Tools = next
	return nil
}

// checkMCPServer refuses a server whose keys do not make one transport.
func checkMCPServer(s MCPServer, key string, bad func(key, format string, args ...any) error) error {
	switch {
	case s.Command != "" && s.URL != "":
		return bad(key+".url", "not supported for a stdio server (command is set)")
	case s.Command != "":
		for _, k := range mcpHTTPKeys {
			if mcpHas(s, k) {
				return bad(key+"."+k, "not supported for a stdio server (command is set)")
			}
		}
	case s.URL != "":
		for _, k := range mcpStdioKeys {
			if mcpHas(s, k) {
				return bad(key+"."+k, "not supported for a streamable HTTP server (url is set)")
			}
		}
		if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
			return bad(key+".url", "%q is not an http or https URL", s.URL)
		}
	default:
		return bad(key, "needs command (a stdio server) or url (a streamable HTTP server)")
	}
	if s.StartupTimeout <= 0 {
		return bad(key+".startup_timeout_sec", "must be positive")
	}
	if s.ToolTimeout <= 0 {
		return bad(key+".tool_timeout_sec", "must be positive")
	}
	return nil
}

func mcpHas(s MCPServer, k string) bool {
	switch k {
	case "args":
		return s.Args != nil
	case "env":
		return s.Env != nil
	case "env_vars":
		return s.EnvVars != nil
	case "cwd":
		return s.Cwd != ""
	case "bearer_token_env_var":
		return s.BearerTokenEnvVar != ""
	case "http_headers":
		return s.HTTPHeaders != nil
	case "env_http_headers":
		return s.EnvHTTPHeaders != nil
	}
	return false
}

// mcpLooser reports whether mode m asks less than cur ("" = auto).
func mcpLooser(m, cur string) bool {
	if cur == "" {
		cur = MCPApprovalAuto
	}
	return slices.Index(MCPApprovalModes, m) < slices.Index(MCPApprovalModes, cur)
}

func mcpApprovalMode(v any) (string, error) {
	s, err := tomlString(v)
	if err != nil {
		return "", err
	}
	if !slices.Contains(MCPApprovalModes, s) {
		return "", fmt.Errorf("%q is not one of %s", s, quoteAll([]string{MCPApprovalAuto, MCPApprovalPrompt, MCPApprovalApprove}))
	}
	return s, nil
}

// mcpEnvVars reads env_vars: names, or {name, source} tables whose source
// is "local" (the default).
func mcpEnvVars(v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be an array of variable names")
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		switch e := e.(type) {
		case string:
			out = append(out, e)
		case map[string]any:
			name, _ := e["name"].(string)
			if name == "" {
				return nil, fmt.Errorf("an entry needs a name")
			}
			if src, ok := e["source"]; ok && src != "local" {
				return nil, fmt.Errorf("source %v of %s is not supported (only \"local\")", src, name)
			}
			out = append(out, name)
		default:
			return nil, fmt.Errorf("must be an array of variable names")
		}
	}
	return out, nil
}

func tomlString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("must be a string")
	}
	return s, nil
}

func tomlBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("must be true or false")
	}
	return b, nil
}

func tomlNumber(v any) (float64, error) {
	var f float64
	switch n := v.(type) {
	case int64:
		f = float64(n)
	case float64:
		f = n
	default:
		return 0, fmt.Errorf("must be a number")
	}
	if f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, fmt.Errorf("must be positive")
	}
	return f, nil
}

func tomlStrings(v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("must be an array of strings")
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("must be an array of strings")
		}
		out = append(out, s)
	}
	return out, nil
}

func tomlStringMap(v any) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("must be a table of strings")
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, ok := e.(string)
		if !ok {
			return nil, fmt.Errorf("%s must be a string", k)
		}
		out[k] = s
	}
	return out, nil
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// tomlKey quotes a key that is not a bare TOML key.
func tomlKey(k string) string {
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}

// MCPServerNames lists the configured servers, sorted.
func (c Config) MCPServerNames() []string {
	names := make([]string, 0, len(c.MCPServers))
	for n := range c.MCPServers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
