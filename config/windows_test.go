package config

import "testing"

// TestContextWindowOrder: a [[models]] entry, then model_context_window,
// then the built-in window of a well-known model; unknown models have
// none, so they compact only when the provider refuses a request.
func TestContextWindowOrder(t *testing.T) {
	c := Config{Models: []ModelInfo{{ID: "gpt-5.5", ContextWindow: 50000}, {ID: "local"}}}
	for _, tc := range []struct {
		model  string
		global int64
		want   int64
	}{
		{"gpt-5.5", 0, 50000},        // the catalog entry
		{"gpt-5.5", 9000, 50000},     // still the catalog entry
		{"local", 9000, 9000},        // an entry without a window: the global key
		{"local", 0, 0},              // unknown
		{"gpt-6.1-terra", 0, 500000}, // built in (Codex's catalog)
		{"gpt-6.1-terra", 8000, 8000},
		{"openai/gpt-5.5", 0, 272000}, // OpenRouter's id
		{"GPT-4.1-mini", 0, 1047576},
		{"gpt-4o-2024-08-06", 0, 128000},
		{"o4-mini", 0, 200000},
		{"qwen2.5-coder:32b", 0, 0},
	} {
		c.ModelContextWindow = tc.global
		if got := c.ContextWindow(tc.model); got != tc.want {
			t.Errorf("ContextWindow(%q) with model_context_window %d = %d, want %d", tc.model, tc.global, got, tc.want)
		}
	}
	c.ModelContextWindow = 0
	if got := c.AutoCompactLimit("gpt-5.6-sol"); got != 244800 {
		t.Errorf("AutoCompactLimit(gpt-5.6-sol) = %d, want 90%% of 272000", got)
	}
}
