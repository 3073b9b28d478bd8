package agenttools

import (
	"testing"
	"time"
)

func TestExecArgsDirAndTimeout(t *testing.T) {
	dirs := []struct{ workdir, want string }{
		{"", "/ws"},
		{"sub/dir", "/ws/sub/dir"},
		{"../up", "/up"},
		{"/abs/./x/", "/abs/x"},
	}
	for _, tc := range dirs {
		a := ExecArgs{Workdir: tc.workdir}
		if got := a.Dir("/ws"); got != tc.want {
			t.Errorf("ExecArgs{Workdir: %q}.Dir(/ws) = %q, want %q", tc.workdir, got, tc.want)
		}
	}
	timeouts := []struct {
		ms   int64
		want time.Duration
	}{
		{0, time.Minute},
		{-5, time.Minute},
		{1500, 1500 * time.Millisecond},
		{int64(time.Hour / time.Millisecond), 10 * time.Minute},
	}
	for _, tc := range timeouts {
		a := ExecArgs{TimeoutMs: tc.ms}
		if got := a.Timeout(time.Minute, 10*time.Minute); got != tc.want {
			t.Errorf("ExecArgs{TimeoutMs: %d}.Timeout(1m, 10m) = %v, want %v", tc.ms, got, tc.want)
		}
	}
}
