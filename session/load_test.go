package session

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/apserver/apserver/model/scripted"
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// TestResumeUnreadableHistoryFails stores an item whose model history does
// not decode, then resumes the thread in a new Manager: the resume fails
// with an error naming the thread, the thread stays unloaded (so no turn can
// run without its context), and the stored thread is left as it was.
func TestResumeUnreadableHistoryFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t, scripted.Script{Default: []scripted.Step{{Text: "ok."}}}, true)
	id := h.startThread(t, protocol.ThreadStartParams{}).Thread.ID
	turn := h.startTurn(t, id, "first")
	h.turnCompleted(t, id)
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}

	db, err := store.Open(h.dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Valid JSON (the store accepts it), but not a list of history entries.
	if _, err := db.AppendItem(ctx, store.Item{ThreadID: id, TurnID: turn.ID, ID: "bad-item", Type: "agentMessage",
		Item: json.RawMessage(`{"type":"agentMessage","id":"bad-item","text":"x"}`), History: json.RawMessage(`{"not":"a list"}`)}); err != nil {
		t.Fatal(err)
	}
	before, err := db.GetThread(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	h.open(t, true)
	other := "other-model"
	_, err = call[protocol.ThreadResumeResult](t, h, "thread/resume", func(r Reply) {
		h.m.ResumeThread(ctx, protocol.ThreadResumeParams{ThreadID: id, ThreadSettings: protocol.ThreadSettings{Model: &other}}, r)
	})
	if err == nil || !strings.Contains(err.Error(), id) || !strings.Contains(err.Error(), "bad-item") {
		t.Fatalf("thread/resume with an undecodable item: err = %v, want an error naming the thread and the item", err)
	}
	if errors.Is(err, protocol.ErrInvalidRequest) || errors.Is(err, protocol.ErrInvalidParams) {
		t.Errorf("thread/resume error %v is a client error; the store is at fault (internal error)", err)
	}
	if _, err := call[protocol.TurnResult](t, h, "turn/start", func(r Reply) {
		h.m.StartTurn(ctx, protocol.TurnStartParams{ThreadID: id, Input: []protocol.UserInput{protocol.TextInput("go on")}}, r)
	}); err == nil {
		t.Errorf("turn/start on a thread that failed to load succeeded")
	}
	if n := len(h.srv.Requests()); n != 1 {
		t.Errorf("model saw %d requests, want 1 (the first turn only)", n)
	}
	rd := mustCall[protocol.ThreadResult](t, h, "thread/read", func(r Reply) {
		h.m.ReadThread(ctx, protocol.ThreadReadParams{ThreadID: id}, r)
	})
	if rd.Thread.Status.Type != protocol.StatusNotLoaded {
		t.Errorf("status after the failed resume = %s, want notLoaded", rd.Thread.Status.Type)
	}
	if err := h.m.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = store.Open(h.dbPath, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after, err := db.GetThread(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if after.Model != before.Model || string(after.Settings) != string(before.Settings) || after.UpdatedAt != before.UpdatedAt {
		t.Errorf("the failed resume changed the thread row: %+v, was %+v", after, before)
	}
}
