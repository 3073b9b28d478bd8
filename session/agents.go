package session

import "github.com/apserver/apserver/instructions"

// readAgents reads the workspace's AGENTS.md as read_file could: through
// the thread's workspace, so a link is followed only into its roots.
func (t *thread) readAgents() instructions.Agents {
	ws, err := t.workspace()
	if err != nil {
		ws = nil // the workspace alone
	}
	return instructions.ReadAgents(ws, t.settings.Cwd)
}

// agents is AGENTS.md's text for a turn's prompt. When an AGENTS.md is
// there but not read, the user is told why, once for each reason: the
// model is not.
func (t *thread) agents() string {
	a := t.readAgents()
	if a.Skipped != "" && a.Skipped != t.agentsSkipped {
		t.judge().warn(a.Skipped)
	}
	t.agentsSkipped = a.Skipped
	return a.Text
}
