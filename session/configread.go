package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"

	"github.com/apserver/apserver/protocol"
)

// ConfigSources name what config/read reports as layers, lowest
// precedence first: the user file, the workspace file, and the settings
// given on the command line (apserver's keys).
type ConfigSources struct {
	UserFile      string
	WorkspaceFile string
	Flags         map[string]any
}

// codexKeys maps apserver's top-level config keys to Codex's.
var codexKeys = map[string]string{
	"model":           "model",
	"provider":        "model_provider",
	"approval_policy": "approval_policy",
	"sandbox":         "sandbox_mode",
	"instructions":    "developer_instructions",
}

// ReadConfig implements config/read: the settings new threads get, in
// Codex's keys; origins names the layer that set each (a key set by none
// is a built-in default or from the environment, and has no origin); with
// includeLayers, every layer with the keys it sets, lowest precedence
// first.
func (m *Manager) ReadConfig(_ context.Context, p protocol.ConfigReadParams, reply Reply) {
	s := m.defaultSettings()
	cfg := map[string]any{
		"model":           nilIfEmpty(s.Model),
		"model_provider":  nilIfEmpty(s.Provider),
		"approval_policy": s.ApprovalPolicy,
		"sandbox_mode":    s.Sandbox,
	}
	if m.opts.Config.Instructions != "" {
		cfg["developer_instructions"] = m.opts.Config.Instructions
	}
	res := protocol.ConfigReadResult{Config: cfg, Origins: map[string]protocol.ConfigLayerMetadata{}}
	src := m.opts.ConfigSources
	add := func(name protocol.ConfigLayerSource, raw map[string]any, version string) {
		mapped := map[string]any{}
		for k, v := range raw {
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
		add(protocol.ConfigLayerSource{Type: "user", File: src.UserFile}, raw, v)
	}
	if src.WorkspaceFile != "" {
		if raw, v := readTOML(src.WorkspaceFile); raw != nil {
			add(protocol.ConfigLayerSource{Type: "project", DotCodexFolder: filepath.Dir(src.WorkspaceFile)}, raw, v)
		}
	}
	if len(src.Flags) > 0 {
		add(protocol.ConfigLayerSource{Type: "sessionFlags"}, src.Flags, "")
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
