package session

import (
	"context"
	"encoding/json"
	"slices"
	"sort"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/threadwire"
)

// ListLoadedThreads implements thread/loaded/list: the ids of the threads
// in memory, sorted, in pages.
func (m *Manager) ListLoadedThreads(_ context.Context, p protocol.PageParams, reply Reply) {
	m.mu.Lock()
	ids := make([]string, 0, len(m.threads))
	for id := range m.threads {
		ids = append(ids, id)
	}
	m.mu.Unlock()
	sort.Strings(ids)
	reply(threadwire.Page(ids, p.Cursor, p.Limit, func(id string) string { return id }))
}

// Loaded reports whether a thread is in memory.
func (m *Manager) Loaded(id string) bool { return m.loaded(id) != nil }

// ListBackgroundTerminals implements thread/backgroundTerminals/list:
// apserver's commands end with their tool call, so none runs in the
// background.
func (m *Manager) ListBackgroundTerminals(ctx context.Context, p protocol.ThreadTurnsListParams, reply Reply) {
	if _, _, err := m.storedThread(ctx, p.ThreadID); err != nil && m.loaded(p.ThreadID) == nil {
		reply(nil, err)
		return
	}
	reply(protocol.PageResult[any]{Data: []any{}}, nil)
}

// ListTurns implements thread/turns/list: the thread's turns with their
// items, newest first unless sortDirection is "asc".
func (m *Manager) ListTurns(ctx context.Context, p protocol.ThreadTurnsListParams, reply Reply) {
	go func() {
		turns, err := m.turnsOf(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		if p.SortDirection == nil || *p.SortDirection == "desc" {
			slices.Reverse(turns)
		}
		reply(threadwire.Page(turns, p.Cursor, p.Limit, func(t protocol.Turn) string { return t.ID }))
	}()
}

// ListItems implements thread/items/list: the items of the thread (of one
// turn with turnId), oldest first unless sortDirection is "desc".
func (m *Manager) ListItems(ctx context.Context, p protocol.ThreadItemsListParams, reply Reply) {
	go func() {
		turns, err := m.turnsOf(ctx, p.ThreadID)
		if err != nil {
			reply(nil, err)
			return
		}
		items, ok := threadwire.ItemEntries(turns, p.TurnID)
		if !ok {
			reply(nil, protocol.Errorf(protocol.ErrInvalidRequest, "turn not found: %s", *p.TurnID))
			return
		}
		if p.SortDirection != nil && *p.SortDirection == "desc" {
			slices.Reverse(items)
		}
		after, _ := p.CursorItem() // checked by Validate
		var cursor *string
		if after != "" {
			cursor = &after
		}
		reply(threadwire.Page(items, cursor, p.Limit, func(e protocol.ThreadItemEntry) string { return e.Item.ItemID() }))
	}()
}

// turnsOf returns a thread's turns, oldest first: from the thread itself
// when it is loaded (an ephemeral thread is nowhere else), else the store.
func (m *Manager) turnsOf(ctx context.Context, id string) ([]protocol.Turn, error) {
	if t := m.loaded(id); t != nil && t.meta.Ephemeral {
		done := make(chan []protocol.Turn, 1)
		t.post(func() { done <- t.wire(true).Turns })
		select {
		case ts := <-done:
			return ts, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	db, meta, err := m.storedThread(ctx, id)
	if err != nil {
		return nil, err
	}
	return threadwire.LoadTurns(ctx, db, meta.ID)
}

// ReleaseEphemeral unloads an ephemeral thread that no client follows any
// more, if no turn is running on it: nothing could ever read it again (it
// is not stored), so keeping it would only grow memory. The server calls
// it when the last subscriber of a thread unsubscribes or disconnects;
// Codex's TUI makes one such thread per prompt, for the title.
func (m *Manager) ReleaseEphemeral(id string) {
	t := m.loaded(id)
	if t == nil || !t.meta.Ephemeral { // meta.Ephemeral never changes after creation
		return
	}
	idle := make(chan bool, 1)
	t.post(func() { idle <- t.turn == nil })
	select {
	case ok := <-idle:
		if ok {
			t.unload()
		}
	case <-t.done:
	}
}

// ListRealtime implements thread/realtime/list: apserver has no realtime
// (voice) sessions, so a known thread's list is empty and its coverage
// "unsupported"; an unknown thread is the usual thread-not-found error.
func (m *Manager) ListRealtime(ctx context.Context, p protocol.ThreadRealtimeListParams, reply Reply) {
	if t := m.loaded(p.ThreadID); t != nil {
		reply(emptyRealtime(), nil)
		return
	}
	go func() {
		if _, _, err := m.storedThread(ctx, p.ThreadID); err != nil {
			reply(nil, err)
			return
		}
		reply(emptyRealtime(), nil)
	}()
}

func emptyRealtime() protocol.ThreadRealtimeListResult {
	return protocol.ThreadRealtimeListResult{Coverage: "unsupported", Data: []json.RawMessage{}}
}
