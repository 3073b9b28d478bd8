package config

import (
	"maps"
	"slices"
)

// BrainRoles are the roles a [brain] budgets table may name: the stages of
// a run and a plain thread (docs/brain.md).
var BrainRoles = []string{"planner", "implementer", "reviewer", "fixer", "thread"}

// The bounds of a role's context budget, in tokens.
const (
	MinBrainBudget = 500
	MaxBrainBudget = 200000
)

// BrainConfig is the project brain's part of the configuration
// (docs/brain.md, docs/configuration.md).
type BrainConfig struct {
	// ProjectContext (project_context) gives a plain thread whose
	// workspace is a project (it keeps decisions or a blueprint) the
	// project's context block in its instructions, as run stages get it.
	ProjectContext bool
	// Budgets are the context block's token budgets by role ([brain]
	// budgets); a role without one gets the default (8,000).
	Budgets map[string]int
}

// fileBrainTable mirrors [brain].
type fileBrainTable struct {
	Budgets map[string]int `toml:"budgets"`
}

// fileBrain are the brain's keys of a config file.
type fileBrain struct {
	ProjectContext *bool           `toml:"project_context"`
	Brain          *fileBrainTable `toml:"brain"`
}

func (c *Config) mergeBrain(f fileBrain, bad func(key, format string, args ...any) error) error {
	if f.ProjectContext != nil {
		c.Brain.ProjectContext = *f.ProjectContext
	}
	if f.Brain == nil {
		return nil
	}
	budgets := maps.Clone(c.Brain.Budgets) // a copy: Configs never share it
	if budgets == nil {
		budgets = map[string]int{}
	}
	for _, role := range slices.Sorted(maps.Keys(f.Brain.Budgets)) {
		n := f.Brain.Budgets[role]
		if !slices.Contains(BrainRoles, role) {
			return bad("brain.budgets."+role, "unknown role; the roles are %s", quoteAll(BrainRoles))
		}
		if n < MinBrainBudget || n > MaxBrainBudget {
			return bad("brain.budgets."+role, "must be between %d and %d tokens, got %d", MinBrainBudget, MaxBrainBudget, n)
		}
		budgets[role] = n
	}
	if len(budgets) > 0 {
		c.Brain.Budgets = budgets
	}
	return nil
}
