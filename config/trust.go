package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Trust levels of a [projects."PATH"] table in the user file.
const (
	TrustTrusted   = "trusted"
	TrustUntrusted = "untrusted"
)

// TrustLevels are the valid values of projects.PATH.trust_level.
var TrustLevels = []string{TrustTrusted, TrustUntrusted}

// SafetyKeys are the workspace-file keys that decide how much an agent may do
// on its own. An untrusted workspace file may set one only to a value at
// least as strict as the one already in effect; a looser value is skipped
// with a warning. Every other key may be set freely.
var SafetyKeys = []string{
	"approval_policy",                   // untrusted < on-request = on-failure < never
	"sandbox",                           // read-only < workspace-write < danger-full-access
	"sandbox_settings.writable_roots",   // any root widens the sandbox
	"sandbox_settings.readable_roots",   // any root widens the sandbox
	"sandbox_settings.network",          // only false
	"rules_file",                        // would replace the user's rules
	"data_dir",                          // a project's own database could resume runs in it
	"providers.*.base_url",              // where requests, code and keys go
	"providers.*.api_key",               // which key is sent
	"providers.*.api_key_env",           // which secret variable is read
	"providers.* (a new provider)",      // needs a base_url
	"max_concurrent_model_calls",        // only lower
	"full_auto.on_restart",              // only "paused"
	"full_auto.error_backoff_ms",        // only longer
	"full_auto.question_min_confidence", // only higher
	"prices.*",                          // only higher: a lower price is a larger costUsd budget
	"projects",                          // user file only
	"response_max_output_bytes",         // only lower, never 0 (no cap)
	"response_max_time_ms",              // only lower, never 0
	"turn_max_output_bytes",             // only lower, never 0
	"turn_max_time_ms",                  // only lower, never 0
	// MCP servers (mcp.go): no new stdio server, no command, args, env,
	// env_vars, cwd, bearer_token_env_var or env_http_headers, no new url
	// for a known server, no enabled = true over false, approval modes
	// only stricter, enabled_tools only narrower, disabled_tools only added.
	"mcp_servers.*",
}

// fileProject is one [projects."PATH"] table.
type fileProject struct {
	TrustLevel *string `toml:"trust_level"`
}

// workspaceLayer describes the workspace file being merged.
type workspaceLayer struct {
	dir      string // the workspace
	trusted  bool   // the user trusts it (ProjectTrusted)
	userFile string // the user file, for the advice; "" when there is none
}

// ignored is the warning for a loosening key an untrusted workspace file
// set: the file, the key, and how to apply it anyway.
func (ws *workspaceLayer) ignored(path, key string, value any) string {
	where := "your user config file"
	if ws.userFile != "" {
		where = ws.userFile
	}
	return fmt.Sprintf("config: %s: ignored %s = %s: an untrusted workspace file may only tighten safety settings; "+
		"if you trust this project, add [projects.%q] trust_level = %q to %s",
		path, key, showValue(value), ws.dir, TrustTrusted, where)
}

func showValue(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case []string:
		return "[" + quoteAll(v) + "]"
	}
	return fmt.Sprint(v)
}

// approvalRank orders approval policies from strict to loose; on-failure
// asks no less than on-request (both run sandboxed and ask to escalate).
var approvalRank = map[string]int{"untrusted": 0, "on-request": 1, "on-failure": 1, "never": 2}

// looser reports whether v gives more autonomy than cur. rank orders the
// values; nil means their order in values. An unknown value is not
// looser here: Validate refuses it.
func looser(values []string, rank map[string]int, v, cur string) bool {
	if !slices.Contains(values, v) || !slices.Contains(values, cur) {
		return false
	}
	if rank == nil {
		return slices.Index(values, v) > slices.Index(values, cur)
	}
	return rank[v] > rank[cur]
}

// mergeProjects reads the [projects] tables of the user file.
func (c *Config) mergeProjects(ps map[string]fileProject, dir string, bad func(key, format string, args ...any) error) error {
	if c.Projects == nil {
		c.Projects = map[string]string{}
	}
	for _, p := range sortedKeys(ps) {
		key := fmt.Sprintf("projects.%q", p)
		lvl := ps[p].TrustLevel
		if lvl == nil {
			return bad(key, "trust_level is required (%s)", quoteAll(TrustLevels))
		}
		if !slices.Contains(TrustLevels, *lvl) {
			return bad(key+".trust_level", "%q is not one of %s", *lvl, quoteAll(TrustLevels))
		}
		if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
			return bad(key, "the path must be absolute")
		}
		c.Projects[canonicalPath(expandPath(p, dir))] = *lvl
	}
	return nil
}

// canonicalPath cleans p and resolves its symbolic links, as far as they
// exist.
func canonicalPath(p string) string {
	p = filepath.Clean(p)
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	// Resolve the longest existing parent, so that a path not created yet
	// still compares equal under a symlinked parent.
	parent, base := filepath.Dir(p), filepath.Base(p)
	if parent == p {
		return p
	}
	return filepath.Join(canonicalPath(parent), base)
}

// ProjectTrusted reports whether the user trusts the project at path: the
// nearest of path and its parents named in the user file's [projects]
// tables says trust_level = "trusted". Paths compare after cleaning and
// resolving symbolic links, so a trusted directory covers everything under
// it, and an "untrusted" entry below it takes that back for its subtree.
// Only the user file (and no workspace file) sets trust.
func (c *Config) ProjectTrusted(path string) bool {
	if len(c.Projects) == 0 || path == "" {
		return false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	for p := canonicalPath(path); ; {
		if lvl, ok := c.Projects[p]; ok {
			return lvl == TrustTrusted
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}
