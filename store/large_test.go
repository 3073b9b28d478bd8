package store

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestAppendItemLarge: an item past bigItem (inserted by a statement of
// its own, its bytes passed without a copy) and the small items around it
// (the prepared statement) are stored whole, in order, as TEXT, and what
// the caller does with its buffers afterwards changes nothing stored.
func TestAppendItemLarge(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "tu", 1)
	text := strings.Repeat("long answer é ", bigItem/14+1)
	big := json.RawMessage(`{"id":"b","type":"agentMessage","text":"` + text + `"}`)
	hist := json.RawMessage(`[{"kind":"assistant","text":"` + text + `"}]`)
	wantBig, wantHist := bytes.Clone(big), bytes.Clone(hist)

	appendItem(t, s, "th", "tu", "a")
	it, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu", ID: "b", Type: "agentMessage", Item: big, History: hist, CompletedAt: 6})
	if err != nil {
		t.Fatal(err)
	}
	if it.Seq != 2 {
		t.Errorf("big item seq %d, want 2", it.Seq)
	}
	for i := range big {
		big[i] = 'X'
	}
	for i := range hist {
		hist[i] = 'X'
	}
	appendItem(t, s, "th", "tu", "c")

	items, err := s.Items(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(items); strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("items %v, want a,b,c", got)
	}
	for i, it := range items {
		if it.Seq != i+1 {
			t.Errorf("item %s seq %d, want %d", it.ID, it.Seq, i+1)
		}
	}
	if !bytes.Equal(items[1].Item, wantBig) || !bytes.Equal(items[1].History, wantHist) {
		t.Errorf("big item read back as %d bytes (history %d), want %d (%d)", len(items[1].Item), len(items[1].History), len(wantBig), len(wantHist))
	}
	if string(items[2].Item) != `{"id":"c","type":"agentMessage","text":"hi"}` || items[2].History != nil {
		t.Errorf("item after the big one: %s, history %s", items[2].Item, items[2].History)
	}
	var typ, htyp string
	if err := s.r.QueryRowContext(ctx, `SELECT typeof(item), typeof(history) FROM items WHERE id = 'b'`).Scan(&typ, &htyp); err != nil {
		t.Fatal(err)
	}
	if typ != "text" || htyp != "text" {
		t.Errorf("big item stored as %s (history %s), want text", typ, htyp)
	}
}

// TestAppendItemHugeFreesHeapFirst: an item of hugeItem bytes or more
// (item and history together) is stored after the heap's unused memory is
// handed back (freeHeap), so that SQLite's copies of it do not come on top
// of garbage; smaller items are stored without that collection.
func TestAppendItemHugeFreesHeapFirst(t *testing.T) {
	calls := 0
	defer func(f func()) { freeHeap = f }(freeHeap)
	freeHeap = func() { calls++ }
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "tu", 1)
	appendItem(t, s, "th", "tu", "small")
	if calls != 0 {
		t.Fatalf("freeHeap called %d times for a small item", calls)
	}
	half := strings.Repeat("x", hugeItem/2)
	big := json.RawMessage(`{"id":"h","type":"agentMessage","text":"` + half + `"}`)
	hist := json.RawMessage(`[{"Kind":2,"Text":"` + half + `"}]`)
	if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu", ID: "h", Type: "agentMessage", Item: big, History: hist, CompletedAt: 7}); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("freeHeap called %d times for an item of %d bytes, want 1", calls, len(big)+len(hist))
	}
	items, err := s.Items(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || !bytes.Equal(items[1].Item, big) || !bytes.Equal(items[1].History, hist) {
		t.Fatalf("huge item not stored whole: %d items", len(items))
	}
}
