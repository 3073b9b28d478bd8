package configread

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
)

// Service answers config/read. Any goroutine may use it.
type Service struct {
	// Defaults are the settings of a new thread (session.Manager.Defaults).
	Defaults func() port.Defaults
	// Config is the loaded configuration (its instructions and the
	// warnings of what it skipped).
	Config config.Config
	// Sources are the files and flags it was loaded from.
	Sources config.Sources
}

// codexKeys maps apserver's top-level config keys to Codex's.
var codexKeys = map[string]string{
	"model":           "model",
	"provider":        "model_provider",
	"approval_policy": "approval_policy",
	"sandbox":         "sandbox_mode",
	"instructions":    "developer_instructions",
}

// envKeys are the environment variables config.Load reads that set a key
// config/read reports, with that key (apserver's name).
var envKeys = map[string]string{config.EnvModel: "model"}

// skippedKey reports whether config.Load skipped key of the workspace file
// at path (an untrusted workspace may only tighten): its warning, in
// warnings, names the file and the key.
func skippedKey(warnings []string, path, key string) bool {
	prefix := fmt.Sprintf("config: %s: ignored %s = ", path, key)
	for _, w := range warnings {
		if strings.HasPrefix(w, prefix) {
			return true
		}
	}
	return false
}

// Read implements config/read: the settings new threads get, in
// Codex's keys; origins names the layer that set each (a key set by none
// is a built-in default and has no origin); with includeLayers, every
// layer with the keys it sets, lowest precedence first. A workspace key
// that config.Load skipped (an untrusted workspace may only tighten) is in
// no layer; keys set by environment variables are in the session layer.
func (c *Service) Read(_ context.Context, p protocol.ConfigReadParams, reply port.Reply) {
	s := c.Defaults()
	cfg := map[string]any{
		"model":           nilIfEmpty(s.Model),
		"model_provider":  nilIfEmpty(s.Provider),
		"approval_policy": s.ApprovalPolicy,
		"sandbox_mode":    s.Sandbox,
	}
	if c.Config.Instructions != "" {
		cfg["developer_instructions"] = c.Config.Instructions
	}
	res := protocol.ConfigReadResult{Config: cfg, Origins: map[string]protocol.ConfigLayerMetadata{}}
	src := c.Sources
	add := func(name protocol.ConfigLayerSource, raw map[string]any, version string, skipped func(key string) bool) {
		mapped := map[string]any{}
		for k, v := range raw {
			if skipped != nil && skipped(k) {
				continue // config.Load did not apply it
			}
			if ck, ok := codexKeys[k]; ok {
				mapped[ck] = v
				res.Origins[ck] = protocol.ConfigLayerMetadata{Name: name, Version: version}
			}
		}
		if p.IncludeLayers {
			res.Layers = append(res.Layers, protocol.ConfigLayer{Name: name, Version: version, Config: mapped})
		}
	}
	if src.UserFile != "" {
		raw, v := readTOML(src.UserFile)
		add(protocol.ConfigLayerSource{Type: "user", File: src.UserFile}, raw, v, nil)
	}
	if src.WorkspaceFile != "" {
		if raw, v := readTOML(src.WorkspaceFile); raw != nil {
			ws := src.WorkspaceFile
			add(protocol.ConfigLayerSource{Type: "project", DotCodexFolder: filepath.Dir(ws)}, raw, v, func(key string) bool {
				return skippedKey(c.Config.Warnings, ws, key)
			})
		}
	}
	// Codex has no environment layer: what apserver's environment
	// variables set is reported with the flags, as this session's own
	// settings (a flag wins over the variable, as in config.Load).
	session := map[string]any{}
	for env, key := range envKeys {
		if v := os.Getenv(env); v != "" {
			session[key] = v
		}
	}
	maps.Copy(session, src.Flags)
	if len(session) > 0 {
		add(protocol.ConfigLayerSource{Type: "sessionFlags"}, session, "", nil)
	}
	if p.IncludeLayers && res.Layers == nil {
		res.Layers = []protocol.ConfigLayer{}
	}
	reply(res, nil)
}

// readTOML reads a config file's top-level keys and a version (a hash of
// its bytes); a missing or unreadable file has none.
func readTOML(path string) (map[string]any, string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ""
	}
	var raw map[string]any
	if _, err := toml.Decode(string(b), &raw); err != nil {
		return nil, ""
	}
	sum := sha256.Sum256(b)
	return raw, "sha256:" + hex.EncodeToString(sum[:8])
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
