package session

import (
	"context"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Hooks for runs (package runner), which drive threads as a client would
// and need only these two things the protocol has no method for.

// SetRunAttention puts (or replaces) a run's item in the attention
// summary (autodrive.Attention.SetRun).
func (m *Manager) SetRunAttention(runID string, it protocol.AttentionItem) {
	m.fa.attn.summary().SetRun(runID, it)
}

// ClearRunAttention takes a run's item out of the attention summary.
func (m *Manager) ClearRunAttention(runID string) { m.fa.attn.summary().ClearRun(runID) }

// SetRelayAttention, ClearRelayAttention: the item of a request relayed from a cluster worker's thread (cluster/relay.go), the thread's own.
func (m *Manager) SetRelayAttention(id int64, it protocol.AttentionItem) {
	m.fa.attn.summary().SetRelay(id, it)
}
func (m *Manager) ClearRelayAttention(id int64, threadID string) {
	m.fa.attn.summary().ClearRelay(id, threadID)
}

// Store waits for the store to be open and returns it: runs keep their
// event logs in the same database as threads.
func (m *Manager) Store() (*store.Store, error) { return m.store() }

// RestoreFullAutoOf brings back the full auto of one thread after a
// restart, as RestoreFullAuto does for every thread once a client has
// initialized: the runner's headless front end (apserver run --resume)
// has no such client, and takes up only its run's task thread. Bringing a
// thread's run back twice does nothing the second time.
func (m *Manager) RestoreFullAutoOf(ctx context.Context, threadID string) error {
	t, err := m.load(ctx, threadID)
	if err != nil {
		return err
	}
	t.post(t.restoreDrive)
	return nil
}
