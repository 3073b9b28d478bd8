package config

import "time"

// ManagerConfig is the [manager] table (docs/manager.md#the-heartbeat):
// how often the manager's heartbeat ticks the projects.
type ManagerConfig struct {
	// HeartbeatInterval is the heartbeat's interval while ticks start or
	// advance runs; 0 turns the heartbeat off (manager/tick still works).
	HeartbeatInterval time.Duration
	// HeartbeatMax is where the interval stops doubling while nothing
	// moves, and how often it looks when no project's mode is on.
	HeartbeatMax time.Duration
}

// Heartbeat defaults.
const (
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultHeartbeatMax      = 5 * time.Minute
)

func defaultManager() ManagerConfig {
	return ManagerConfig{HeartbeatInterval: DefaultHeartbeatInterval, HeartbeatMax: DefaultHeartbeatMax}
}

// fileManager mirrors [manager].
type fileManager struct {
	HeartbeatIntervalMs *int64 `toml:"heartbeat_interval_ms"`
	HeartbeatMaxMs      *int64 `toml:"heartbeat_max_ms"`
}

// mergeManager applies [manager] from a file.
func (c *Config) mergeManager(f *fileManager, bad func(key, format string, args ...any) error) error {
	if f == nil {
		return nil
	}
	if v := f.HeartbeatIntervalMs; v != nil {
		if *v < 0 {
			return bad("manager.heartbeat_interval_ms", "%d is negative", *v)
		}
		c.Manager.HeartbeatInterval = time.Duration(*v) * time.Millisecond
	}
	if v := f.HeartbeatMaxMs; v != nil {
		if *v <= 0 {
			return bad("manager.heartbeat_max_ms", "%d is not positive", *v)
		}
		c.Manager.HeartbeatMax = time.Duration(*v) * time.Millisecond
	}
	return nil
}
