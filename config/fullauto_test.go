package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFullAutoKeys(t *testing.T) {
	c := Default()
	if c.MaxConcurrentModelCalls != 4 || c.FullAuto.OnRestart != "running" || c.FullAuto.ApprovalTimeout != 10*time.Minute ||
		c.FullAuto.ErrorBackoff != time.Second || c.FullAuto.QuestionMinConfidence != 0.8 {
		t.Errorf("full-auto defaults: %d %+v", c.MaxConcurrentModelCalls, c.FullAuto)
	}
	dir := t.TempDir()
	user := writeFile(t, filepath.Join(dir, "user.toml"), `
max_concurrent_model_calls = 2
[full_auto]
on_restart = "paused"
approval_timeout_ms = 1500
error_backoff_ms = 0
question_min_confidence = 0.5
`)
	c, err := Load(LoadOptions{UserFile: user, Getenv: env(t)})
	if err != nil {
		t.Fatal(err)
	}
	want := FullAutoConfig{OnRestart: "paused", ApprovalTimeout: 1500 * time.Millisecond, QuestionMinConfidence: 0.5}
	if c.MaxConcurrentModelCalls != 2 || c.FullAuto != want {
		t.Errorf("Load = %d %+v, want 2 %+v", c.MaxConcurrentModelCalls, c.FullAuto, want)
	}
	for _, tc := range []struct{ text, key string }{
		{"max_concurrent_model_calls = 0", "max_concurrent_model_calls"},
		{"[full_auto]\non_restart = \"later\"", "full_auto.on_restart"},
		{"[full_auto]\napproval_timeout_ms = -1", "full_auto.approval_timeout_ms"},
		{"[full_auto]\nerror_backoff_ms = -5", "full_auto.error_backoff_ms"},
		{"[full_auto]\nquestion_min_confidence = 1.5", "full_auto.question_min_confidence"},
		{"[full_auto]\nbogus = 1", "full_auto.bogus"},
	} {
		p := writeFile(t, filepath.Join(dir, "bad.toml"), tc.text)
		if _, err := Load(LoadOptions{UserFile: p, Getenv: env(t)}); err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("Load(%q) = %v, want an error naming %s", tc.text, err, tc.key)
		}
	}
}
