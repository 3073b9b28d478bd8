package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManagerHeartbeat(t *testing.T) {
	tests := []struct {
		file       string
		every, max time.Duration
		err        string
	}{
		{"", DefaultHeartbeatInterval, DefaultHeartbeatMax, ""},
		{"[manager]\nheartbeat_interval_ms = 2000\nheartbeat_max_ms = 60000\n", 2 * time.Second, time.Minute, ""},
		{"[manager]\nheartbeat_interval_ms = 0\n", 0, DefaultHeartbeatMax, ""},
		{"[manager]\nheartbeat_interval_ms = -1\n", 0, 0, "manager.heartbeat_interval_ms"},
		{"[manager]\nheartbeat_max_ms = 0\n", 0, 0, "manager.heartbeat_max_ms"},
	}
	for _, tt := range tests {
		path := writeFile(t, filepath.Join(t.TempDir(), "config.toml"), tt.file)
		c, err := Load(LoadOptions{UserFile: path, Getenv: env(t)})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err = %v, want %q", tt.file, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.file, err)
			continue
		}
		if c.Manager.HeartbeatInterval != tt.every || c.Manager.HeartbeatMax != tt.max {
			t.Errorf("%q: heartbeat %v, max %v; want %v, %v", tt.file, c.Manager.HeartbeatInterval, c.Manager.HeartbeatMax, tt.every, tt.max)
		}
	}
}
