package agenttools

import (
	"path/filepath"
	"time"
)

// Dir is where the command runs: workdir, absolute or relative to cwd;
// cwd without one.
func (a *ExecArgs) Dir(cwd string) string {
	switch {
	case a.Workdir == "":
		return cwd
	case filepath.IsAbs(a.Workdir):
		return filepath.Clean(a.Workdir)
	}
	return filepath.Join(cwd, a.Workdir)
}

// Timeout is the command's timeout: timeout_ms held to at most max, def
// without one.
func (a *ExecArgs) Timeout(def, max time.Duration) time.Duration {
	if a.TimeoutMs > 0 {
		return min(time.Duration(a.TimeoutMs)*time.Millisecond, max)
	}
	return def
}
