package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hugeItem returns an item and a history of sideMin bytes or more, each
// ending in a word found nowhere else.
func hugePair(id string) (json.RawMessage, json.RawMessage) {
	text := strings.Repeat("long answer é ", sideMin/15+1)
	item := json.RawMessage(`{"id":"` + id + `","type":"agentMessage","text":"` + text + ` needle-` + id + `"}`)
	hist := json.RawMessage(`[{"kind":"assistant","text":"` + text + `"}]`)
	return item, hist
}

func rowLen(t *testing.T, s *Store, threadID, id string) (item, hist int) {
	t.Helper()
	if err := s.r.QueryRowContext(ctx, `SELECT length(item), coalesce(length(history), 0) FROM items WHERE thread_id = ? AND id = ?`,
		threadID, id).Scan(&item, &hist); err != nil {
		t.Fatal(err)
	}
	return item, hist
}

func finish(t *testing.T, s *Store, threadID, turnID string) {
	t.Helper()
	if err := s.FinishTurn(ctx, Turn{ThreadID: threadID, ID: turnID, Status: StatusCompleted, CompletedAt: 8}); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestHugeItemSideFile: an item of sideMin bytes or more is kept out of
// its row, in a side file, and every read path gives it back whole: Items,
// WireItems, WireTurns, PromptSource, MessageItems, a fork (which outlives
// its source), a read-only open; rolling back its turn and deleting its
// thread remove its files.
func TestHugeItemSideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "tu1", 1)
	appendItem(t, s, "th", "tu1", "a")
	item, hist := hugePair("b")
	wantItem, wantHist := bytes.Clone(item), bytes.Clone(hist)
	if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu1", ID: "b", Type: "agentMessage", Item: item, History: hist, CompletedAt: 6}); err != nil {
		t.Fatal(err)
	}
	for i := range item {
		item[i] = 'X'
	}
	finish(t, s, "th", "tu1")
	startTurn(t, s, "th", "tu2", 7)
	appendItem(t, s, "th", "tu2", "c")
	finish(t, s, "th", "tu2")

	if n, h := rowLen(t, s, "th", "b"); n >= 1024 || h >= 1024 {
		t.Errorf("the huge item's row holds %d bytes of item and %d of history, want a marker", n, h)
	}
	if !exists(s.sidePath("th", "b", "item")) || !exists(s.sidePath("th", "b", "history")) {
		t.Fatalf("no side files for the huge item")
	}
	check := func(what string, got []byte, want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, want %d (%.40q)", what, len(got), len(want), got)
		}
	}

	items, err := s.Items(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(itemIDs(items), ",") != "a,b,c" {
		t.Fatalf("items %v", itemIDs(items))
	}
	check("Items item", items[1].Item, wantItem)
	check("Items history", items[1].History, wantHist)
	check("Items small item", items[2].Item, []byte(`{"id":"c","type":"agentMessage","text":"hi"}`))

	wire, err := s.WireItems(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	check("WireItems", wire[1].Item, wantItem)

	var walked [][]byte
	if err := s.WireTurns(ctx, "th", func(Turn) error { return nil }, func(b json.RawMessage) error {
		walked = append(walked, bytes.Clone(b))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(walked) != 3 {
		t.Fatalf("WireTurns walked %d items", len(walked))
	}
	check("WireTurns", walked[1], wantItem)

	src, err := s.PromptSource(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	check("PromptSource", src.Items[1].History, wantHist)

	found, err := s.MessageItems(ctx, "th", "NEEDLE-B")
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].ID != "b" {
		t.Errorf("MessageItems found %v, want b", itemIDs(found))
	}
	if found, _ := s.MessageItems(ctx, "th", "hi"); strings.Join(itemIDs(found), ",") != "a,c" {
		t.Errorf("MessageItems(hi) found %v, want a,c", itemIDs(found))
	}

	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	roItems, err := ro.Items(ctx, "th")
	ro.r.Close()
	if err != nil {
		t.Fatal(err)
	}
	check("read-only Items", roItems[1].Item, wantItem)

	if err := s.Fork(ctx, "th", Thread{ID: "fk", CreatedAt: 2000, UpdatedAt: 2000}, "tu1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Fork(ctx, "th", Thread{ID: "fk2", CreatedAt: 2000, UpdatedAt: 2000}, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteThread(ctx, "th"); err != nil {
		t.Fatal(err)
	}
	if exists(s.threadSideDir("th")) {
		t.Errorf("the deleted thread's side files remain")
	}
	fk, err := s.Items(ctx, "fk")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(itemIDs(fk), ",") != "a,b" {
		t.Fatalf("fork items %v", itemIDs(fk))
	}
	check("fork item", fk[1].Item, wantItem)
	check("fork history", fk[1].History, wantHist)

	// Rolling back the fork's turn drops its files, not the other fork's.
	if err := s.DropTurnsFrom(ctx, "fk", "tu1"); err != nil {
		t.Fatal(err)
	}
	if exists(s.sidePath("fk", "b", "item")) || exists(s.sidePath("fk", "b", "history")) {
		t.Errorf("the rolled back item's side files remain")
	}
	fk2, err := s.Items(ctx, "fk2")
	if err != nil {
		t.Fatal(err)
	}
	check("second fork item", fk2[1].Item, wantItem)

	// The same id appended again after the rollback is stored anew.
	startTurn(t, s, "fk", "tu3", 9)
	item2, _ := hugePair("b")
	if _, err := s.AppendItem(ctx, Item{ThreadID: "fk", TurnID: "tu3", ID: "b", Type: "agentMessage", Item: item2, CompletedAt: 9}); err != nil {
		t.Fatal(err)
	}
	fk, err = s.Items(ctx, "fk")
	if err != nil {
		t.Fatal(err)
	}
	check("re-appended item", fk[0].Item, wantItem)
	if fk[0].History != nil {
		t.Errorf("re-appended item has a history of %d bytes", len(fk[0].History))
	}
}

// TestHugeItemCrashBetweenFileAndRow: a crash after an item's side file is
// named but before its row commits (the hook's error stands for it), and
// temporary files and a directory of a thread that no longer exists, are
// removed when the store is opened again; committed side files stay.
func TestHugeItemCrashBetweenFileAndRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "tu", 1)
	kept, _ := hugePair("k")
	if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu", ID: "k", Type: "agentMessage", Item: bytes.Clone(kept), CompletedAt: 2}); err != nil {
		t.Fatal(err)
	}

	crash := errors.New("crash")
	sideHook = func() error { return crash }
	lost, _ := hugePair("l")
	_, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu", ID: "l", Type: "agentMessage", Item: lost, CompletedAt: 3})
	sideHook = nil
	if !errors.Is(err, crash) {
		t.Fatalf("AppendItem: %v, want the crash", err)
	}
	orphan := s.sidePath("th", "l", "item")
	if !exists(orphan) {
		t.Fatalf("no file left where the crash happened: the test does not test the sweep")
	}
	tmp := filepath.Join(s.threadSideDir("th"), ".tmp-123")
	gone := s.threadSideDir("nosuchthread")
	if err := os.WriteFile(tmp, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(gone, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(gone, "6b.item"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTest(t, path)
	for _, p := range []string{orphan, tmp, gone} {
		if exists(p) {
			t.Errorf("%s survived the reopening", filepath.Base(p))
		}
	}
	items, err := s.Items(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || !bytes.Equal(items[0].Item, kept) {
		t.Fatalf("after the crash: %v, want the committed huge item whole", itemIDs(items))
	}
}

// TestHugeItemEncoding: an item given as an Encoding is written straight
// into its side file when huge, into its row when not, and read back as
// written; the caller's Item is returned as given.
func TestHugeItemEncoding(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "tu", 1)
	huge, _ := hugePair("h")
	small := json.RawMessage(`{"id":"s","type":"agentMessage","text":"small"}`)
	for _, c := range []struct {
		id   string
		body json.RawMessage
	}{{"h", huge}, {"s", small}} {
		enc := &countingEncoding{b: c.body}
		got, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "tu", ID: c.id, Type: "agentMessage", Encoding: enc, CompletedAt: 2})
		if err != nil {
			t.Fatal(err)
		}
		if enc.writes != 1 {
			t.Errorf("%s: encoding written %d times, want once", c.id, enc.writes)
		}
		if len(got.Item) > len(c.body) || (len(got.Item) > 0 && !bytes.Equal(got.Item, c.body)) {
			t.Errorf("%s: AppendItem returned an item of %d bytes", c.id, len(got.Item))
		}
	}
	if n, _ := rowLen(t, s, "th", "h"); n >= 1024 {
		t.Errorf("the huge encoded item's row holds %d bytes", n)
	}
	if n, _ := rowLen(t, s, "th", "s"); n != len(small) {
		t.Errorf("the small encoded item's row holds %d bytes, want %d", n, len(small))
	}
	items, err := s.WireItems(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(items[0].Item, huge) || !bytes.Equal(items[1].Item, small) {
		t.Errorf("read back %d and %q", len(items[0].Item), items[1].Item)
	}
}

// countingEncoding writes b in small pieces, as protocol.Large does.
type countingEncoding struct {
	b      []byte
	writes int
}

func (e *countingEncoding) Len() int { return len(e.b) }

func (e *countingEncoding) WriteTo(w io.Writer) (int64, error) {
	e.writes++
	var n int64
	for rest := e.b; len(rest) > 0; {
		k := min(len(rest), 1000)
		m, err := w.Write(rest[:k])
		n += int64(m)
		if err != nil {
			return n, err
		}
		rest = rest[k:]
	}
	return n, nil
}
