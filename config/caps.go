package config

import "time"

// Default caps on one turn: room for many responses and tool runs, but not
// for an unbounded amount of model output or time. The caps on one
// response default to model.DefaultMaxOutputBytes and
// model.DefaultMaxResponseTime.
const (
	DefaultTurnMaxOutputBytes = 16 << 20
	DefaultTurnMaxTime        = 2 * time.Hour
)

// fileCaps are the cap keys of a config file; 0 means no cap.
type fileCaps struct {
	ResponseMaxOutputBytes *int64 `toml:"response_max_output_bytes"`
	ResponseMaxTimeMs      *int64 `toml:"response_max_time_ms"`
	TurnMaxOutputBytes     *int64 `toml:"turn_max_output_bytes"`
	TurnMaxTimeMs          *int64 `toml:"turn_max_time_ms"`
}

// mergeCaps applies the cap keys. From an untrusted workspace file a cap
// may only get tighter (a lower non-zero value): a larger cap, or 0 for
// none, lets a runaway turn go on longer.
func (c *Config) mergeCaps(f fileCaps, bad func(key, format string, args ...any) error, may func(key string, value any, loosens bool) bool) error {
	for _, cp := range []struct {
		key  string
		v    *int64
		dst  *int64
		unit int64
	}{
		{"response_max_output_bytes", f.ResponseMaxOutputBytes, &c.ResponseMaxOutputBytes, 1},
		{"response_max_time_ms", f.ResponseMaxTimeMs, (*int64)(&c.ResponseMaxTime), int64(time.Millisecond)},
		{"turn_max_output_bytes", f.TurnMaxOutputBytes, &c.TurnMaxOutputBytes, 1},
		{"turn_max_time_ms", f.TurnMaxTimeMs, (*int64)(&c.TurnMaxTime), int64(time.Millisecond)},
	} {
		if cp.v == nil {
			continue
		}
		if *cp.v < 0 {
			return bad(cp.key, "must not be negative (0 means no cap)")
		}
		v := *cp.v * cp.unit
		if may(cp.key, *cp.v, v == 0 || (*cp.dst != 0 && v > *cp.dst)) {
			*cp.dst = v
		}
	}
	return nil
}

// capToModel maps a configured cap (0 = none) to a model.Provider cap
// (0 = the default, negative = none).
func capToModel(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}
