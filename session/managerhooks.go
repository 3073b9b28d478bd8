package session

import "github.com/apserver/apserver/protocol"

// The manager's hooks (docs/manager.md#suggest): a project's pending
// proposal is an item of the attention summary until it is approved or
// withdrawn.

func projectAttnKey(cwd string) attnKey { return attnKey{thread: "project:" + cwd, kind: "project"} }

// SetProjectAttention puts (or replaces) the item of the project of cwd
// in the attention summary.
func (m *Manager) SetProjectAttention(cwd string, it protocol.AttentionItem) {
	it.Cwd = cwd
	m.fa.attn.set(projectAttnKey(cwd), it)
}

// ClearProjectAttention takes the project's item out of the summary.
func (m *Manager) ClearProjectAttention(cwd string) {
	m.fa.attn.clear(projectAttnKey(cwd))
}
