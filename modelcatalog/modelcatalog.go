package modelcatalog

import (
	"sort"

	"github.com/apserver/apserver/config"
	"github.com/apserver/apserver/protocol"
)

// List is model/list's answer from the configured catalog c: its models
// and the default model, the default first, hidden ones only when asked,
// scoped to p's modelProvider or, when p names none, to defaultProvider
// (modelProvider/default/set's; nil when none was set).
func List(c *config.Config, p protocol.ModelListParams, defaultProvider *string) []protocol.Model {
	var out []protocol.Model
	seen := map[string]bool{}
	add := func(mi config.ModelInfo) {
		if seen[mi.ID] || (mi.Hidden && (p.IncludeHidden == nil || !*p.IncludeHidden)) {
			return
		}
		if p.ModelProvider != nil && *p.ModelProvider != "" && mi.Provider != "" && mi.Provider != *p.ModelProvider {
			return
		}
		if dp := defaultProvider; p.ModelProvider == nil && dp != nil && mi.Provider != "" && mi.Provider != *dp {
			return // unscoped: modelProvider/default/set's provider
		}
		seen[mi.ID] = true
		efforts := mi.ReasoningEfforts
		if len(efforts) == 0 {
			efforts = []string{"low", "medium", "high"}
		}
		def := mi.DefaultReasoningEffort
		if def == "" {
			def = "medium"
		}
		opts := make([]protocol.ReasoningEffortOption, 0, len(efforts))
		for _, e := range efforts {
			opts = append(opts, protocol.ReasoningEffortOption{ReasoningEffort: e, Description: e + " reasoning effort"})
		}
		name := mi.DisplayName
		if name == "" {
			name = mi.ID
		}
		out = append(out, protocol.Model{
			ID: mi.ID, Model: mi.ID, DisplayName: name, Description: mi.Description, Hidden: mi.Hidden,
			SupportedReasoningEfforts: opts, DefaultReasoningEffort: def,
			InputModalities: []string{"text"}, IsDefault: mi.ID == c.Model,
		})
	}
	for _, mi := range c.Models {
		add(mi)
	}
	if c.Model != "" {
		add(config.ModelInfo{ID: c.Model, Provider: c.Provider, Description: "Default model (from configuration)"})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].IsDefault && !out[j].IsDefault })
	if out == nil {
		out = []protocol.Model{}
	}
	return out
}

// Defaults are the provider and model of new threads: the configured ones,
// unless modelProvider/default/set chose another provider (chosen, nil
// when none was), whose model is then the first the catalog lists for it
// (the configured model when it lists none).
func Defaults(c config.Config, chosen *string) (provider, model string) {
	if chosen == nil || *chosen == c.Provider {
		return c.Provider, c.Model
	}
	for _, mi := range c.Models {
		if mi.Provider == *chosen {
			return *chosen, mi.ID
		}
	}
	return *chosen, c.Model
}
