package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManagerHeartbeat(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, "config.toml"), "[manager]\nheartbeat_ms = 200\nheartbeat_max_ms = 1500\n")
	c, err := Load(LoadOptions{UserFile: path, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c.Manager.Heartbeat != 200*time.Millisecond || c.Manager.HeartbeatMax != 1500*time.Millisecond {
		t.Errorf("manager: %+v", c.Manager)
	}
	bad := writeFile(t, filepath.Join(dir, "bad.toml"), "[manager]\nheartbeat_ms = 0\n")
	if _, err := Load(LoadOptions{UserFile: bad, Getenv: env(t)}); err == nil || !strings.Contains(err.Error(), "manager.heartbeat_ms") {
		t.Errorf("heartbeat_ms = 0: %v", err)
	}
}
