package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model"
)

// TestCaps: the cap keys load, reach the provider, 0 turns a cap off and a
// negative value is refused naming the key.
func TestCaps(t *testing.T) {
	dir := t.TempDir()
	c, err := Load(LoadOptions{Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c.ResponseMaxOutputBytes != model.DefaultMaxOutputBytes || c.ResponseMaxTime != model.DefaultMaxResponseTime ||
		c.TurnMaxOutputBytes != DefaultTurnMaxOutputBytes || c.TurnMaxTime != DefaultTurnMaxTime {
		t.Errorf("default caps: %d %s %d %s", c.ResponseMaxOutputBytes, c.ResponseMaxTime, c.TurnMaxOutputBytes, c.TurnMaxTime)
	}
	path := writeFile(t, filepath.Join(dir, "user.toml"),
		"response_max_output_bytes = 4096\nresponse_max_time_ms = 1500\nturn_max_output_bytes = 0\nturn_max_time_ms = 60000\n")
	c, err = Load(LoadOptions{UserFile: path, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	if c.ResponseMaxOutputBytes != 4096 || c.ResponseMaxTime != 1500*time.Millisecond || c.TurnMaxOutputBytes != 0 || c.TurnMaxTime != time.Minute {
		t.Errorf("loaded caps: %d %s %d %s", c.ResponseMaxOutputBytes, c.ResponseMaxTime, c.TurnMaxOutputBytes, c.TurnMaxTime)
	}
	_, p, err := c.ResolveModel("", "")
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxOutputBytes != 4096 || p.MaxResponseTime != 1500*time.Millisecond {
		t.Errorf("provider caps: %d %s", p.MaxOutputBytes, p.MaxResponseTime)
	}
	c.ResponseMaxOutputBytes, c.ResponseMaxTime = 0, 0
	if _, p, _ = c.ResolveModel("", ""); p.MaxOutputBytes >= 0 || p.MaxResponseTime >= 0 {
		t.Errorf("caps of 0: provider %d %s, want none (negative)", p.MaxOutputBytes, p.MaxResponseTime)
	}
	bad := writeFile(t, filepath.Join(dir, "bad.toml"), "turn_max_time_ms = -1\n")
	if _, err := Load(LoadOptions{UserFile: bad, Getenv: env(t)}); err == nil || !strings.Contains(err.Error(), "turn_max_time_ms") {
		t.Errorf("negative cap: err %v, want one naming turn_max_time_ms", err)
	}
}
