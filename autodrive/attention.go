package autodrive

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/apserver/apserver/protocol"
)

// AttnKey names one attention item: a thread's request (Req its id) or
// pause, a run's wait ("run:" and the run's id), a relayed request.
type AttnKey struct {
	Thread string
	Kind   protocol.AttentionKind
	Req    int64
}

// Attention is the one summary of everything waiting on a human, across
// threads. Any goroutine may change it; each change that alters the
// summary sends it (under mu, so summaries go out in order).
type Attention struct {
	notify func(method string, params any)

	mu    sync.Mutex
	items map[AttnKey]protocol.AttentionItem
	sent  string // JSON of the last summary sent; "" = the empty one
}

// NewAttention makes an empty summary whose changes go to notify.
func NewAttention(notify func(method string, params any)) *Attention {
	return &Attention{notify: notify}
}

// Set puts (or replaces) item k; it keeps the time it was first set
// while it stays.
func (a *Attention) Set(k AttnKey, it protocol.AttentionItem) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.items == nil {
		a.items = map[AttnKey]protocol.AttentionItem{}
	}
	if old, ok := a.items[k]; ok {
		it.SinceMs = old.SinceMs
	}
	a.items[k] = it
	a.sendLocked()
}

// Clear takes item k out.
func (a *Attention) Clear(k AttnKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.items[k]; !ok {
		return
	}
	delete(a.items, k)
	a.sendLocked()
}

// SetRun puts (or replaces) run runID's item, one per run; it keeps the
// time it was first set while it stays. A run waiting on a task thread
// that has an item of its own hides behind it (see summaryLocked).
func (a *Attention) SetRun(runID string, it protocol.AttentionItem) {
	it.RunID = runID
	a.Set(runKey(runID), it)
}

// ClearRun takes run runID's item out.
func (a *Attention) ClearRun(runID string) { a.Clear(runKey(runID)) }

func runKey(runID string) AttnKey { return AttnKey{Thread: "run:" + runID, Kind: "run"} }

// SetRelay puts the item of request id, relayed from a cluster worker's
// thread (the item's), in the summary; ClearRelay takes it out.
func (a *Attention) SetRelay(id int64, it protocol.AttentionItem) {
	a.Set(AttnKey{Thread: it.ThreadID, Kind: "relayed", Req: id}, it)
}

func (a *Attention) ClearRelay(id int64, threadID string) {
	a.Clear(AttnKey{Thread: threadID, Kind: "relayed", Req: id})
}

// Snapshot is the summary now.
func (a *Attention) Snapshot() protocol.AttentionNotification {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.summaryLocked()
}

// summaryLocked is the summary of the items. A run waiting on one of its
// task threads that itself waits (an approval, a question, a pause) is one
// wait, not two: the thread's own item stands for both, since the thread
// is where a human acts on it (a client opens an item's run when it has a
// runId, else its thread). The run's item shows while the thread has none.
func (a *Attention) summaryLocked() protocol.AttentionNotification {
	own := map[string]bool{} // threads with items of their own
	for k := range a.items {
		if !strings.HasPrefix(k.Thread, "run:") {
			own[k.Thread] = true
		}
	}
	n := protocol.AttentionNotification{Items: make([]protocol.AttentionItem, 0, len(a.items))}
	for k, it := range a.items {
		if strings.HasPrefix(k.Thread, "run:") && own[it.ThreadID] {
			continue
		}
		n.Items = append(n.Items, it)
	}
	sort.Slice(n.Items, func(i, j int) bool {
		x, y := n.Items[i], n.Items[j]
		if x.SinceMs != y.SinceMs {
			return x.SinceMs < y.SinceMs
		}
		if x.ThreadID != y.ThreadID {
			return x.ThreadID < y.ThreadID
		}
		return x.Kind < y.Kind
	})
	n.Count = len(n.Items)
	if n.Count > 0 {
		oldest := n.Items[0].SinceMs
		n.OldestSinceMs = &oldest
	}
	return n
}

func (a *Attention) sendLocked() {
	n := a.summaryLocked()
	b, _ := json.Marshal(n)
	s := string(b)
	if n.Count == 0 {
		s = ""
	}
	if s == a.sent {
		return
	}
	a.sent = s
	a.notify(protocol.NotifyAttention, n)
}
