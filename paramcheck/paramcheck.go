package paramcheck

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/imageinput"
	"github.com/apserver/apserver/protocol"
)

// ReasoningEfforts are the efforts accepted for a model whose catalog entry
// lists none (the values OpenAI's models take).
var ReasoningEfforts = []string{"none", "minimal", "low", "medium", "high", "xhigh"}

// ReasoningSummaries are the values of turn/start's summary (Codex's
// ReasoningSummary).
var ReasoningSummaries = []string{"auto", "concise", "detailed", "none"}

// Invalid is an error wrapping protocol.ErrInvalidParams whose message
// starts "Invalid params: ".
func Invalid(format string, args ...any) error {
	return protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: "+format, args...)
}

// ThreadSettings checks, against c, the overrides of thread/start,
// thread/resume and thread/fork: cwd must be an existing directory,
// modelProvider a configured provider, and model one the catalog lists
// when there is one.
func ThreadSettings(c *config.Config, s protocol.ThreadSettings) error {
	if s.Cwd != nil && *s.Cwd != "" {
		if err := Cwd(*s.Cwd); err != nil {
			return err
		}
	}
	if s.ModelProvider != nil && *s.ModelProvider != "" {
		if _, ok := c.Providers[*s.ModelProvider]; !ok {
			names := make([]string, 0, len(c.Providers))
			for n := range c.Providers {
				names = append(names, n)
			}
			slices.Sort(names)
			return Invalid("unknown modelProvider `%s`, expected one of %s", *s.ModelProvider, strings.Join(names, ", "))
		}
	}
	if s.Model != nil && *s.Model != "" {
		return Model(c, *s.Model)
	}
	return nil
}

// TurnStart checks, against c, turn/start's cwd, model, effort, summary and
// outputSchema.
func TurnStart(c *config.Config, p protocol.TurnStartParams) error {
	if p.Cwd != nil && *p.Cwd != "" {
		if err := Cwd(*p.Cwd); err != nil {
			return err
		}
	}
	model := ""
	if p.Model != nil && *p.Model != "" {
		model = *p.Model
		if err := Model(c, model); err != nil {
			return err
		}
	}
	if p.Effort != nil {
		allowed := ReasoningEfforts
		if mi, ok := c.ModelInfo(model); ok && model != "" && len(mi.ReasoningEfforts) > 0 {
			allowed = mi.ReasoningEfforts
		}
		if !slices.Contains(allowed, *p.Effort) {
			return Invalid("unknown effort `%s`, expected one of %s", *p.Effort, strings.Join(allowed, ", "))
		}
	}
	if p.Summary != nil && !slices.Contains(ReasoningSummaries, *p.Summary) {
		return Invalid("unknown summary `%s`, expected one of %s", *p.Summary, strings.Join(ReasoningSummaries, ", "))
	}
	if err := imageinput.Check(p.Input); err != nil {
		return err
	}
	if raw := strings.TrimSpace(string(p.OutputSchema)); raw != "" && raw != "null" {
		var schema any
		if err := json.Unmarshal(p.OutputSchema, &schema); err != nil {
			return Invalid("outputSchema: %v", err)
		}
		if err := Schema(schema, "outputSchema"); err != nil {
			return err
		}
	}
	return nil
}

// Cwd requires an absolute path to an existing directory.
func Cwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return Invalid("cwd must be an absolute path: %s", cwd)
	}
	fi, err := os.Stat(cwd)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return Invalid("cwd does not exist: %s", cwd)
	case err != nil:
		return Invalid("cwd cannot be used: %v", err)
	case !fi.IsDir():
		return Invalid("cwd is not a directory: %s", cwd)
	}
	return nil
}

// Model accepts any model when no catalog is configured (a local
// server may serve anything); with one, the model must be in it (hidden
// entries count), be the default model or a role's model.
func Model(c *config.Config, id string) error {
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
	return Invalid("unknown model `%s`: it is not in the model catalog (see model/list)", id)
}

// jsonTypes are the values of a JSON Schema "type".
var jsonTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// Schema makes sure v is a JSON Schema object whose keywords that
// structured output relies on have the right shape; at names where it is.
func Schema(v any, at string) error {
	obj, ok := v.(map[string]any)
	if !ok {
		return Invalid("%s must be a JSON Schema object, not %s", at, jsonKind(v))
	}
	if t, ok := obj["type"]; ok {
		types, isList := t.([]any)
		if !isList {
			types = []any{t}
		}
		for _, t := range types {
			if s, _ := t.(string); !slices.Contains(jsonTypes, s) {
				return Invalid("%s.type: %v is not a JSON type (%s)", at, t, strings.Join(jsonTypes, ", "))
			}
		}
	}
	if p, ok := obj["properties"]; ok {
		props, ok := p.(map[string]any)
		if !ok {
			return Invalid("%s.properties must be an object, not %s", at, jsonKind(p))
		}
		for name, sub := range props {
			if _, isBool := sub.(bool); isBool {
				continue
			}
			if err := Schema(sub, at+".properties."+name); err != nil {
				return err
			}
		}
	}
	if it, ok := obj["items"]; ok {
		if _, isBool := it.(bool); !isBool {
			if err := Schema(it, at+".items"); err != nil {
				return err
			}
		}
	}
	if r, ok := obj["required"]; ok {
		list, ok := r.([]any)
		if !ok {
			return Invalid("%s.required must be an array of strings", at)
		}
		for _, x := range list {
			if _, ok := x.(string); !ok {
				return Invalid("%s.required must be an array of strings", at)
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
