package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// faOptions configure a server for full-auto tests.
type faOptions struct {
	dataDir string
	config  string // TOML for the user config file
	args    []string
	env     []string // extra environment (KEY=VALUE), overriding the harness's
	// inProcess runs apserver in the test binary (options.inProcess).
	inProcess bool
}

// newFAClient spawns apserver with a user config file holding o.config
// and initializes the connection.
func newFAClient(t *testing.T, model *scripted.Server, o faOptions) *client {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(cfg, []byte(o.config), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"--config", cfg}, o.args...)
	c := newClient(t, model, options{dataDir: o.dataDir, args: args, env: o.env, inProcess: o.inProcess})
	t.Cleanup(func() {
		// With APSERVER_E2E_RACE the binary reports data races on stderr.
		if strings.Contains(c.stderr.String(), "DATA RACE") {
			t.Errorf("apserver reported a data race:\n%s", c.stderr.String())
		}
	})
	return c
}

// startFullAuto sends fullAuto/start for threadID with params (threadId is
// added) and returns the response.
func (c *client) startFullAuto(threadID string, params map[string]any) *message {
	c.t.Helper()
	p := map[string]any{"threadId": threadID}
	for k, v := range params {
		p[k] = v
	}
	return c.call("fullAuto/start", p)
}

// runEnded waits for the fullAuto/statusChanged that stops the run of
// threadID.
func (c *client) runEnded(threadID string) *message {
	c.t.Helper()
	return c.waitFor("fullAuto/statusChanged", func(m *message) bool {
		return m.str("threadId") == threadID && m.str("state") == "stopped"
	})
}

// runEndedStepwise is runEnded for a long run: each turn gets the usual
// wait, not the whole run, so a run that is slow but moving (many turns
// under the race detector beside other suites) is told from one that hangs.
func (c *client) runEndedStepwise(threadID string) *message {
	c.t.Helper()
	from := 0
	for {
		m := c.waitMsg("the next turn's end or the run's stop", from, func(m *message) bool {
			if m.str("threadId") != threadID {
				return false
			}
			return m.Method == "turn/completed" || (m.Method == "fullAuto/statusChanged" && m.str("state") == "stopped")
		})
		if m.Method == "fullAuto/statusChanged" {
			return m
		}
		from = m.Seq + 1
	}
}

// runState waits for the fullAuto/statusChanged of threadID into state.
func (c *client) runState(after *message, threadID, state string) *message {
	c.t.Helper()
	return c.waitAfter(after, "fullAuto/statusChanged", func(m *message) bool {
		return m.str("threadId") == threadID && m.str("state") == state
	})
}
