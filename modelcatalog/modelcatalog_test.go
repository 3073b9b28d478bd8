package modelcatalog

import (
	"testing"

	"github.com/apserver/apserver/config"
)

func TestDefaults(t *testing.T) {
	c := config.Default()
	c.Provider, c.Model = "openai", "gpt-5.5"
	c.Models = []config.ModelInfo{{ID: "llama3", Provider: "ollama"}, {ID: "qwen", Provider: "ollama"}}
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name            string
		chosen          *string
		provider, model string
	}{
		{"none chosen", nil, "openai", "gpt-5.5"},
		{"the configured one", str("openai"), "openai", "gpt-5.5"},
		{"another, its first model", str("ollama"), "ollama", "llama3"},
		{"another the catalog does not list", str("vllm"), "vllm", "gpt-5.5"},
	} {
		if p, m := Defaults(c, tc.chosen); p != tc.provider || m != tc.model {
			t.Errorf("%s: Defaults = %s, %s; want %s, %s", tc.name, p, m, tc.provider, tc.model)
		}
	}
}
