package config

import (
	"slices"
	"time"
)

// DefaultMaxConcurrentModelCalls is the default cap on model requests in
// flight across all threads.
const DefaultMaxConcurrentModelCalls = 4

// What a full-auto run that was running when apserver stopped does at the
// next start.
const (
	OnRestartRunning = "running" // it goes on
	OnRestartPaused  = "paused"  // it waits for fullAuto/resume
)

// OnRestartModes are the valid values of full_auto.on_restart.
var OnRestartModes = []string{OnRestartRunning, OnRestartPaused}

// FullAutoConfig is the [full_auto] table.
type FullAutoConfig struct {
	// OnRestart is OnRestartRunning or OnRestartPaused.
	OnRestart string
	// ApprovalTimeout is the default time an approval or question waits for
	// a human before it is declined (fullAuto/start's approvalTimeoutMs
	// overrides it); 0 waits forever.
	ApprovalTimeout time.Duration
	// ErrorBackoff is the cooldown before the turn that follows a failed
	// one; it doubles with each failure in a row, up to MaxErrorBackoff.
	ErrorBackoff time.Duration
	// QuestionMinConfidence: the decision model answers a question for the
	// user only when it is at least this confident; else the question goes
	// to the editor.
	QuestionMinConfidence float64
}

// MaxErrorBackoff caps the cooldown after failed turns.
const MaxErrorBackoff = time.Minute

func defaultFullAuto() FullAutoConfig {
	return FullAutoConfig{
		OnRestart:             OnRestartRunning,
		ApprovalTimeout:       10 * time.Minute,
		ErrorBackoff:          time.Second,
		QuestionMinConfidence: 0.8,
	}
}

// fileFullAuto mirrors [full_auto].
type fileFullAuto struct {
	OnRestart             *string  `toml:"on_restart"`
	ApprovalTimeoutMs     *int64   `toml:"approval_timeout_ms"`
	ErrorBackoffMs        *int64   `toml:"error_backoff_ms"`
	QuestionMinConfidence *float64 `toml:"question_min_confidence"`
}

// mergeFullAuto applies max_concurrent_model_calls and [full_auto] from a
// file. may (see mergeFile) guards the keys where a larger or smaller value
// means more autonomy: more model calls at once, resuming runs by
// themselves, retrying failed turns sooner, trusting the decision model at
// lower confidence.
func (c *Config) mergeFullAuto(maxCalls *int, f *fileFullAuto, bad func(key, format string, args ...any) error, may func(key string, value any, loosens bool) bool) error {
	if maxCalls != nil {
		if *maxCalls <= 0 {
			return bad("max_concurrent_model_calls", "must be positive")
		}
		if may("max_concurrent_model_calls", *maxCalls, *maxCalls > c.MaxConcurrentModelCalls) {
			c.MaxConcurrentModelCalls = *maxCalls
		}
	}
	if f == nil {
		return nil
	}
	if f.OnRestart != nil {
		if !slices.Contains(OnRestartModes, *f.OnRestart) {
			return bad("full_auto.on_restart", "%q is not one of %s", *f.OnRestart, quoteAll(OnRestartModes))
		}
		if may("full_auto.on_restart", *f.OnRestart, *f.OnRestart == OnRestartRunning && c.FullAuto.OnRestart != OnRestartRunning) {
			c.FullAuto.OnRestart = *f.OnRestart
		}
	}
	if f.ApprovalTimeoutMs != nil {
		if *f.ApprovalTimeoutMs < 0 {
			return bad("full_auto.approval_timeout_ms", "must not be negative")
		}
		c.FullAuto.ApprovalTimeout = time.Duration(*f.ApprovalTimeoutMs) * time.Millisecond
	}
	if f.ErrorBackoffMs != nil {
		if *f.ErrorBackoffMs < 0 {
			return bad("full_auto.error_backoff_ms", "must not be negative")
		}
		if d := time.Duration(*f.ErrorBackoffMs) * time.Millisecond; may("full_auto.error_backoff_ms", *f.ErrorBackoffMs, d < c.FullAuto.ErrorBackoff) {
			c.FullAuto.ErrorBackoff = d
		}
	}
	if q := f.QuestionMinConfidence; q != nil {
		if *q < 0 || *q > 1 {
			return bad("full_auto.question_min_confidence", "must be between 0 and 1")
		}
		if may("full_auto.question_min_confidence", *q, *q < c.FullAuto.QuestionMinConfidence) {
			c.FullAuto.QuestionMinConfidence = *q
		}
	}
	return nil
}
