package session

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apserver/apserver/protocol"
)

// Checks of request params that decoding cannot make because they need the
// configuration or the file system. server/ runs them before the methods,
// on the read loop (they only stat a path), so a refused request changes
// nothing. Each error wraps protocol.ErrInvalidParams and names the field.

// ReasoningEfforts are the efforts accepted for a model whose catalog entry
// lists none (the values OpenAI's models take).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// ReasoningSummaries are the values of turn/start's summary (Codex's
// ReasoningSummary).
var ReasoningSummaries = []string{"auto", "concise", "detailed", "none"}

func invalidParams(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: "+format, args...)
}

// ValidateThreadSettings checks the overrides of thread/start, thread/resume
// and thread/fork: cwd must be an existing directory, modelProvider a
// configured provider, and model one the catalog lists when there is one.
func (m *Manager) ValidateThreadSettings(s protocol.ThreadSettings) error {
	if s.Cwd != nil && *s.Cwd != "" {
		if err := checkCwd(*s.Cwd); err != nil {
			return err
		}
	}
	if s.ModelProvider != nil && *s.ModelProvider != "" {
		c := m.opts.Config
		if _, ok := c.Providers[*s.ModelProvider]; !ok {
			names := make([]string, 0, len(c.Providers))
			for n := range c.Providers {
				names = append(names, n)
			}
			slices.Sort(names)
			return invalidParams("unknown modelProvider `%s`, expected one of %s", *s.ModelProvider, strings.Join(names, ", "))
		}
	}
	if s.Model != nil && *s.Model != "" {
		return m.checkModel(*s.Model)
	}
	return nil
}

// ValidateTurnStart checks turn/start's cwd, model, effort, summary and
// outputSchema.
func (m *Manager) ValidateTurnStart(p protocol.TurnStartParams) error {
	if p.Cwd != nil && *p.Cwd != "" {
		if err := checkCwd(*p.Cwd); err != nil {
			return err
		}
	}
	model := ""
	if p.Model != nil && *p.Model != "" {
		model = *p.Model
		if err := m.checkModel(model); err != nil {
			return err
		}
	}
	if p.Effort != nil {
		allowed := ReasoningEfforts
		if mi, ok := m.opts.Config.ModelInfo(model); ok && model != "" && len(mi.ReasoningEfforts) > 0 {
			allowed = mi.ReasoningEfforts
		}
		if !slices.Contains(allowed, *p.Effort) {
			return invalidParams("unknown effort `%s`, expected one of %s", *p.Effort, strings.Join(allowed, ", "))
		}
	}
	if p.Summary != nil && !slices.Contains(ReasoningSummaries, *p.Summary) {
		return invalidParams("unknown summary `%s`, expected one of %s", *p.Summary, strings.Join(ReasoningSummaries, ", "))
	}
	if err := checkImages(p.Input); err != nil {
		return err
	}
	if raw := strings.TrimSpace(string(p.OutputSchema)); raw != "" && raw != "null" {
		var schema any
		if err := json.Unmarshal(p.OutputSchema, &schema); err != nil {
			return invalidParams("outputSchema: %v", err)
		}
		if err := checkSchema(schema, "outputSchema"); err != nil {
			return err
		}
	}
	return nil
}

// checkCwd requires an absolute path to an existing directory.
func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return invalidParams("cwd must be an absolute path: %s", cwd)
	}
	fi, err := os.Stat(cwd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalidParams("cwd does not exist: %s", cwd)
	case err != nil:
		return invalidParams("cwd cannot be used: %v", err)
	case !fi.IsDir():
		return invalidParams("cwd is not a directory: %s", cwd)
	}
	return nil
}

// checkModel accepts any model when no catalog is configured (a local
// server may serve anything); with one, the model must be in it (hidden
// entries count), be the default model or a role's model.
func (m *Manager) checkModel(id string) error {
	c := m.opts.Config
	if len(c.Models) == 0 || id == c.Model {
		return nil
	}
	if _, ok := c.ModelInfo(id); ok {
		return nil
	}
	for _, r := range c.Roles {
		if r.Model == id {
			return nil
		}
	}
	return invalidParams("unknown model `%s`: it is not in the model catalog (see model/list)", id)
}

// jsonTypes are the values of a JSON Schema "type".
var jsonTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// checkSchema makes sure v is a JSON Schema object whose keywords that
// structured output relies on have the right shape; at names where it is.
func checkSchema(v any, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return invalidParams("%s must be a JSON Schema object, not %s", at, jsonKind(v))
	}
	if t, ok := obj["type"]; ok {
		types, isList := t.([]any)
		if !isList {
			types = []any{t}
		}
		for _, t := range types {
			if s, _ := t.(string); !slices.Contains(jsonTypes, s) {
				return invalidParams("%s.type: %v is not a JSON type (%s)", at, t, strings.Join(jsonTypes, ", "))
			}
		}
	}
	if p, ok := obj["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return invalidParams("%s.properties must be an object, not %s", at, jsonKind(p))
		}
		for name, sub := range props {
			if _, isBool := sub.(bool); isBool {
				continue
			}
			if err := checkSchema(sub, at+".properties."+name); err != nil {
				return err
			}
		}
	}
	if it, ok := obj["items"]; ok {
		if _, isBool := it.(bool); !isBool {
			if err := checkSchema(it, at+".items"); err != nil {
				return err
			}
		}
	}
	if r, ok := obj["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return invalidParams("%s.required must be an array of strings", at)
		}
		for _, x := range list {
			if _, ok := x.(string); !ok {
				return invalidParams("%s.required must be an array of strings", at)
			}
		}
	}
	return nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "a value"
}
