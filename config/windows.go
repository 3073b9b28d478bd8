package config

import "strings"

// Context windows of well-known models, for when neither a [[models]]
// entry nor model_context_window gives one, so that a thread on a stock
// OpenAI model compacts before the model refuses it. The exact slugs are
// Codex 0.169's bundled model catalog (its context_window); the prefixes
// are the published windows of the older families. Provider-prefixed ids
// (OpenRouter's "openai/gpt-5.5") are looked up by their last part.
var knownWindows = map[string]int64{
	"gpt-5.5":                  272000,
	"gpt-5.6-sol":              272000,
	"gpt-5.6-terra":            272000,
	"gpt-5.6-luna":             272000,
	"gpt-6-astra":              272000,
	"gpt-6-sol":                272000,
	"gpt-6-luna":               272000,
	"gpt-6.1-sol":              272000,
	"gpt-6.1-terra":            500000,
	"gpt-daybreak-blue-latest": 272000,
	"gpt-daybreak-red-latest":  372000,
	"codex-auto-review":        272000,
}

// knownFamilies are matched by prefix (no two overlap).
var knownFamilies = []struct {
	prefix string
	window int64
}{
	{"gpt-4.1", 1047576},
	{"gpt-4o", 128000},
	{"codex-mini", 200000},
	{"o4-mini", 200000},
	{"o3", 200000},
	{"gpt-6", 272000},
	{"gpt-5", 272000},
}

// KnownContextWindow is the built-in context window of model, 0 when it
// is not a model apserver knows.
func KnownContextWindow(model string) int64 {
	id := strings.ToLower(model)
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	if w, ok := knownWindows[id]; ok {
		return w
	}
	for _, f := range knownFamilies {
		if strings.HasPrefix(id, f.prefix) {
			return f.window
		}
	}
	return 0
}
