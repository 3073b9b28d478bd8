package config

import "github.com/apserver/apserver/compaction"

// fileCompaction are the context-compaction keys of a config file (named
// as Codex names them).
type fileCompaction struct {
	ModelContextWindow         *int64 `toml:"model_context_window"`
	ModelAutoCompactTokenLimit *int64 `toml:"model_auto_compact_token_limit"`
}

// CompactionRole is the role whose model writes compaction summaries;
// without a [roles.compaction] table the thread's own model does.
const CompactionRole = "compaction"

func (c *Config) mergeCompaction(f fileCompaction, bad func(key, format string, args ...any) error) error {
	if v := f.ModelContextWindow; v != nil {
		if *v < 0 {
			return bad("model_context_window", "must not be negative, got %d", *v)
		}
		c.ModelContextWindow = *v
	}
	if v := f.ModelAutoCompactTokenLimit; v != nil {
		if *v < 0 {
			return bad("model_auto_compact_token_limit", "must not be negative, got %d", *v)
		}
		c.ModelAutoCompactTokenLimit = *v
	}
	return nil
}

// ContextWindow is the context window of model in tokens: its [[models]]
// catalog entry's context_window, else model_context_window, else the
// built-in window of a well-known model (KnownContextWindow); 0 when
// unknown.
func (c Config) ContextWindow(model string) int64 {
	if mi, ok := c.ModelInfo(model); ok && mi.ContextWindow > 0 {
		return mi.ContextWindow
	}
	if c.ModelContextWindow > 0 {
		return c.ModelContextWindow
	}
	return KnownContextWindow(model)
}

// AutoCompactLimit is the prompt size in tokens at which a turn compacts
// its context, as Codex computes it: 90% of the context window, or
// model_auto_compact_token_limit when that is lower (or the window is
// unknown). 0: never automatically.
func (c Config) AutoCompactLimit(model string) int64 {
	return c.CompactTrigger(c.ContextWindow(model))
}

// CompactTrigger is AutoCompactLimit for a context window of window tokens
// (0 unknown), wherever the window came from (compaction.Trigger).
func (c Config) CompactTrigger(window int64) int64 {
	return compaction.Trigger(window, c.ModelAutoCompactTokenLimit)
}

// HasRole reports whether a [roles.NAME] table configures role.
func (c Config) HasRole(role string) bool {
	_, ok := c.Roles[role]
	return ok
}
