package config

import "time"

// ManagerConfig is the [manager] table (docs/manager.md#the-heartbeat):
// how often the manager's heartbeat ticks the projects.
type ManagerConfig struct {
	// Heartbeat is the interval while ticks start or advance runs (0: the
	// default, 15 s); HeartbeatMax the longest it backs off to while idle
	// (0: the default, 5 min).
	Heartbeat    time.Duration
	HeartbeatMax time.Duration
}

// fileManager mirrors [manager].
type fileManager struct {
	HeartbeatMs    *int64 `toml:"heartbeat_ms"`
	HeartbeatMaxMs *int64 `toml:"heartbeat_max_ms"`
}

func (c *Config) mergeManager(f *fileManager, bad func(key, format string, args ...any) error) error {
	if f == nil {
		return nil
	}
	if v := f.HeartbeatMs; v != nil {
		if *v <= 0 {
			return bad("manager.heartbeat_ms", "%d is not a positive number of milliseconds", *v)
		}
		c.Manager.Heartbeat = time.Duration(*v) * time.Millisecond
	}
	if v := f.HeartbeatMaxMs; v != nil {
		if *v <= 0 {
			return bad("manager.heartbeat_max_ms", "%d is not a positive number of milliseconds", *v)
		}
		c.Manager.HeartbeatMax = time.Duration(*v) * time.Millisecond
	}
	return nil
}
