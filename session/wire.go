package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// wireThread renders a store row as a protocol Thread (turns empty).
func (m *Manager) wireThread(meta store.Thread, status protocol.ThreadStatus) protocol.Thread {
	th := protocol.Thread{
		ID:            meta.ID,
		SessionID:     meta.ID,
		Preview:       meta.Preview,
		Ephemeral:     meta.Ephemeral,
		ModelProvider: meta.ModelProvider,
		CreatedAt:     meta.CreatedAt / 1000,
		UpdatedAt:     meta.UpdatedAt / 1000,
		Status:        status,
		Cwd:           meta.Cwd,
		CLIVersion:    m.opts.Version,
		Source:        "appServer",
		HistoryMode:   "legacy",
		Turns:         []protocol.Turn{},
	}
	if meta.ForkedFromID != "" {
		f := meta.ForkedFromID
		th.ForkedFromID = &f
	}
	if meta.Model != "" {
		mod := meta.Model
		th.Model = &mod
	}
	if meta.Name != "" {
		n := meta.Name
		th.Name = &n
	}
	r := meta.UpdatedAt / 1000
	th.RecencyAt = &r
	return th
}

// loadTurns reads a thread's turns with all their items (itemsView full).
func loadTurns(ctx context.Context, db *store.Store, threadID string) ([]protocol.Turn, error) {
	turns, err := db.Turns(ctx, threadID)
	if err != nil {
		return nil, err
	}
	items, err := db.WireItems(ctx, threadID)
	if err != nil {
		return nil, err
	}
	// The stored item is the wire item: it is passed on as it is, never
	// decoded and encoded again (a long thread's answer costs its bytes).
	byTurn := map[string][]protocol.ThreadItem{}
	for _, it := range items {
		if !json.Valid(it.Item) {
			continue
		}
		byTurn[it.TurnID] = append(byTurn[it.TurnID], protocol.RawItem{ID: it.ID, Type: it.Type, Raw: it.Item})
	}
	out := make([]protocol.Turn, 0, len(turns))
	for _, tr := range turns {
		out = append(out, storedTurnToWire(tr, byTurn[tr.ID]))
	}
	return out, nil
}

func storedTurnToWire(tr store.Turn, items []protocol.ThreadItem) protocol.Turn {
	if items == nil {
		items = []protocol.ThreadItem{}
	}
	w := protocol.Turn{ID: tr.ID, Items: items, ItemsView: protocol.ItemsFull, Status: protocol.TurnStatus(tr.Status)}
	if tr.StartedAt > 0 {
		s := tr.StartedAt / 1000
		w.StartedAt = &s
	}
	if tr.CompletedAt > 0 {
		c := tr.CompletedAt / 1000
		w.CompletedAt = &c
		d := tr.DurationMs
		w.DurationMs = &d
	}
	if len(tr.Error) > 0 && string(tr.Error) != "null" {
		var te protocol.TurnError
		if json.Unmarshal(tr.Error, &te) == nil {
			w.Error = &te
		}
	}
	return w
}

// instructionSources lists the instruction files loaded for a workspace.
func instructionSources(cwd string) []string {
	p := filepath.Join(cwd, "AGENTS.md")
	if _, err := os.Stat(p); err == nil {
		return []string{p}
	}
	return []string{}
}
