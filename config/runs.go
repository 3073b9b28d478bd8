package config

import (
	"slices"
	"strings"
)

// DefaultMaxParallelRuns is the default cap on runs working at once.
const DefaultMaxParallelRuns = 2

// Trust values, autonomy modes and merge modes of [runs] (the wire's, in
// package protocol, with the same spelling).
var (
	RunTrusts     = []string{"auto", "manual"}
	RunAutonomies = []string{"off", "suggest", "semi_auto", "full_auto"}
	RunMerges     = []string{"ff", "squash"}
)

// RunsConfig is the [runs] table (docs/runs.md): the defaults of run/start
// and how a fresh worktree is set up.
type RunsConfig struct {
	// MaxParallel caps the runs working at once (max_parallel_runs); a run
	// waiting on a human keeps its slot.
	MaxParallel int
	// TrustPlanning, TrustImplementation and TrustFixes are "auto" or
	// "manual".
	TrustPlanning       string
	TrustImplementation string
	TrustFixes          string
	// Autonomy is "off", "suggest", "semi_auto" or "full_auto".
	Autonomy string
	// Merge is "ff" or "squash".
	Merge             string
	MaxClarifications int
	// SetupCopy are untracked files (paths relative to the repository)
	// copied into a fresh worktree; SetupCommand runs there after (in the
	// sandbox), before the planner.
	SetupCopy    []string
	SetupCommand string
}

func defaultRuns() RunsConfig {
	return RunsConfig{MaxParallel: DefaultMaxParallelRuns, TrustPlanning: "manual", TrustImplementation: "auto",
		TrustFixes: "auto", Autonomy: "full_auto", Merge: "ff", MaxClarifications: 3}
}

// fileRuns mirrors [runs].
type fileRuns struct {
	TrustPlanning       *string  `toml:"trust_planning"`
	TrustImplementation *string  `toml:"trust_implementation"`
	TrustFixes          *string  `toml:"trust_fixes"`
	Autonomy            *string  `toml:"autonomy"`
	Merge               *string  `toml:"merge"`
	MaxClarifications   *int     `toml:"max_clarifications"`
	SetupCopy           []string `toml:"setup_copy"`
	SetupCommand        *string  `toml:"setup_command"`
}

// mergeRuns applies max_parallel_runs and [runs] from a file. may guards
// what gives a run more autonomy (auto trust, a freer autonomy mode, more
// runs at once) and the setup command, which runs a command.
func (c *Config) mergeRuns(maxParallel *int, f *fileRuns, bad func(key, format string, args ...any) error, may func(key string, value any, loosens bool) bool) error {
	if maxParallel != nil {
		if *maxParallel <= 0 {
			return bad("max_parallel_runs", "must be positive")
		}
		if may("max_parallel_runs", *maxParallel, *maxParallel > c.Runs.MaxParallel) {
			c.Runs.MaxParallel = *maxParallel
		}
	}
	if f == nil {
		return nil
	}
	for _, tr := range []struct {
		key string
		v   *string
		dst *string
	}{{"runs.trust_planning", f.TrustPlanning, &c.Runs.TrustPlanning}, {"runs.trust_implementation", f.TrustImplementation, &c.Runs.TrustImplementation}, {"runs.trust_fixes", f.TrustFixes, &c.Runs.TrustFixes}} {
		if tr.v == nil {
			continue
		}
		if !slices.Contains(RunTrusts, *tr.v) {
			return bad(tr.key, "%q is not one of %s", *tr.v, quoteAll(RunTrusts))
		}
		if may(tr.key, *tr.v, *tr.v == "auto" && *tr.dst != "auto") {
			*tr.dst = *tr.v
		}
	}
	if f.Autonomy != nil {
		if !slices.Contains(RunAutonomies, *f.Autonomy) {
			return bad("runs.autonomy", "%q is not one of %s", *f.Autonomy, quoteAll(RunAutonomies))
		}
		loosens := slices.Index(RunAutonomies, *f.Autonomy) > slices.Index(RunAutonomies, c.Runs.Autonomy)
		if may("runs.autonomy", *f.Autonomy, loosens) {
			c.Runs.Autonomy = *f.Autonomy
		}
	}
	if f.Merge != nil {
		if !slices.Contains(RunMerges, *f.Merge) {
			return bad("runs.merge", "%q is not one of %s", *f.Merge, quoteAll(RunMerges))
		}
		c.Runs.Merge = *f.Merge
	}
	if f.MaxClarifications != nil {
		if *f.MaxClarifications < 0 {
			return bad("runs.max_clarifications", "must not be negative")
		}
		c.Runs.MaxClarifications = *f.MaxClarifications
	}
	for _, p := range f.SetupCopy {
		if p == "" || strings.HasPrefix(p, "/") || slices.Contains(strings.Split(p, "/"), "..") {
			return bad("runs.setup_copy", "%q must be a relative path inside the repository", p)
		}
	}
	if f.SetupCopy != nil && may("runs.setup_copy", f.SetupCopy, true) {
		c.Runs.SetupCopy = slices.Clone(f.SetupCopy)
	}
	if f.SetupCommand != nil && may("runs.setup_command", *f.SetupCommand, true) {
		c.Runs.SetupCommand = *f.SetupCommand
	}
	return nil
}
