package session

import (
	"context"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Hooks for runs (package runner), which drive threads as a client would
// and need only these two things the protocol has no method for.

// runAttnKey is the attention key of a run: one item per run.
func runAttnKey(runID string) attnKey { return attnKey{thread: "run:" + runID, kind: "run"} }

// SetRunAttention puts (or replaces) a run's item in the attention
// summary, which is re-sent if it changed. The item keeps the time it was
// first set while it stays.
func (m *Manager) SetRunAttention(runID string, it protocol.AttentionItem) {
	it.RunID = runID
	m.fa.attn.set(runAttnKey(runID), it)
}

// ClearRunAttention takes a run's item out of the attention summary.
func (m *Manager) ClearRunAttention(runID string) {
	m.fa.attn.clear(runAttnKey(runID))
}

// SetRelayAttention, ClearRelayAttention: the item of a request relayed from a cluster worker's thread (cluster/relay.go), the thread's own.
func (m *Manager) SetRelayAttention(id int64, it protocol.AttentionItem) {
	m.fa.attn.set(attnKey{thread: it.ThreadID, kind: "relayed", req: id}, it)
}
func (m *Manager) ClearRelayAttention(id int64, threadID string) {
	m.fa.attn.clear(attnKey{thread: threadID, kind: "relayed", req: id})
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
