package store

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var ctx = context.Background()

func openTest(t testing.TB, path string) *Store {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), FileName)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func mkThread(t testing.TB, s *Store, th Thread) Thread {
	t.Helper()
	if th.CreatedAt == 0 {
		th.CreatedAt = 1000
	}
	if th.UpdatedAt == 0 {
		th.UpdatedAt = th.CreatedAt
	}
	if err := s.CreateThread(ctx, th); err != nil {
		t.Fatalf("CreateThread(%s): %v", th.ID, err)
	}
	return th
}

func startTurn(t testing.TB, s *Store, threadID, turnID string, at int64) Turn {
	t.Helper()
	tu, err := s.StartTurn(ctx, Turn{ThreadID: threadID, ID: turnID, StartedAt: at})
	if err != nil {
		t.Fatalf("StartTurn(%s/%s): %v", threadID, turnID, err)
	}
	return tu
}

func appendItem(t testing.TB, s *Store, threadID, turnID, id string) Item {
	t.Helper()
	it, err := s.AppendItem(ctx, Item{ThreadID: threadID, TurnID: turnID, ID: id, Type: "agentMessage",
		Item: json.RawMessage(`{"id":"` + id + `","type":"agentMessage","text":"hi"}`), CompletedAt: 5})
	if err != nil {
		t.Fatalf("AppendItem(%s): %v", id, err)
	}
	return it
}

func itemIDs(items []Item) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func checkGapless(t *testing.T, s *Store, threadID string) []Event {
	t.Helper()
	evs, err := s.events(ctx, threadID, 0)
	if err != nil {
		t.Fatalf("events(%s): %v", threadID, err)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("thread %s: event %d has seq %d, want %d", threadID, i, e.Seq, i+1)
		}
		if len(e.Payload) > 0 && !json.Valid(e.Payload) {
			t.Fatalf("thread %s: event %d payload not JSON: %s", threadID, e.Seq, e.Payload)
		}
	}
	return evs
}

func kinds(evs []Event) []string {
	var k []string
	for _, e := range evs {
		k = append(k, e.Kind)
	}
	return k
}

func TestOpen(t *testing.T) {
	tests := []struct {
		name     string
		sync     string
		wantSync int
		wantErr  bool
	}{
		{"default", "", 1, false},
		{"normal", "NORMAL", 1, false},
		{"full", "full", 2, false},
		{"bad", "OFF", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "a", "b")
			path := filepath.Join(dir, FileName)
			s, err := Open(path, Options{Synchronous: tc.sync})
			if tc.wantErr {
				if err == nil {
					s.Close()
					t.Fatal("Open succeeded, want error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var mode string
			var syncv int
			if err := s.w.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
				t.Fatalf("journal_mode = %q, %v", mode, err)
			}
			if err := s.w.QueryRow("PRAGMA synchronous").Scan(&syncv); err != nil || syncv != tc.wantSync {
				t.Fatalf("synchronous = %d, %v; want %d", syncv, err, tc.wantSync)
			}
			var fk int
			if err := s.w.QueryRow("PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
				t.Fatalf("foreign_keys = %d, %v", fk, err)
			}
			if v, err := s.SchemaVersion(ctx); err != nil || v != numMigrations(t) {
				t.Fatalf("SchemaVersion = %d, %v", v, err)
			}
			if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
				t.Fatalf("dir mode %v, %v", fi.Mode(), err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("file mode %v, %v", fi.Mode(), err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			// Reopening an up-to-date file is a no-op migration.
			s2, err := Open(path, Options{Synchronous: tc.sync})
			if err != nil {
				t.Fatal(err)
			}
			s2.Close()
		})
	}
}

// numMigrations is the schema version a fresh file migrates to.
func numMigrations(t *testing.T) int {
	t.Helper()
	entries, err := fs.ReadDir(migrationFS, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

func TestOpenNewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	if _, err := s.w.Exec("PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s2, err := Open(path, Options{}); err == nil {
		s2.Close()
		t.Fatal("Open of a newer schema succeeded")
	}
}

func TestOpenOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "we?ird #dir%20", FileName)
	s := openTest(t, path)
	mkThread(t, s, Thread{ID: "t"})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("db not at %q: %v", path, err)
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_DATA_HOME", "/x/data")
	if d, err := DefaultDir(); err != nil || d != filepath.Join("/x/data", "apserver") {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
	t.Setenv("XDG_DATA_HOME", "")
	home, err := os.UserHomeDir()
	if err != nil {
		t.Skip("no home dir")
	}
	if d, err := DefaultDir(); err != nil || d != filepath.Join(home, ".local", "share", "apserver") {
		t.Fatalf("DefaultDir = %q, %v", d, err)
	}
}

func TestThreadCRUD(t *testing.T) {
	s := openTest(t, "")
	th := Thread{ID: "th1", Name: "first", Preview: "hello", Cwd: "/w", Model: "m", ModelProvider: "p",
		ApprovalPolicy: "never", Sandbox: "read-only", Ephemeral: true, CreatedAt: 100, UpdatedAt: 100,
		Settings: json.RawMessage(`{"effort":"high"}`)}
	if err := s.CreateThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetThread(ctx, "th1")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(th) {
		t.Fatalf("GetThread = %+v\nwant %+v", got, th)
	}
	if err := s.CreateThread(ctx, th); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("duplicate CreateThread: %v", err)
	}

	up := th
	up.Name, up.Archived, up.UpdatedAt, up.Settings, up.CreatedAt, up.ForkedFromID = "renamed", true, 200, nil, 999, "zzz"
	if err := s.UpdateThread(ctx, up); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetThread(ctx, "th1")
	want := up
	want.CreatedAt, want.ForkedFromID = th.CreatedAt, th.ForkedFromID // immutable
	if fmt.Sprint(got) != fmt.Sprint(want) || got.Settings != nil {
		t.Fatalf("after update = %+v\nwant %+v", got, want)
	}

	for _, tc := range []struct {
		name string
		err  error
	}{
		{"update missing", s.UpdateThread(ctx, Thread{ID: "nope"})},
		{"get missing", func() error { _, err := s.GetThread(ctx, "nope"); return err }()},
		{"events missing", func() error { _, err := s.events(ctx, "nope", 0); return err }()},
		{"turns missing", func() error { _, err := s.Turns(ctx, "nope"); return err }()},
		{"items missing", func() error { _, err := s.Items(ctx, "nope"); return err }()},
	} {
		if !errors.Is(tc.err, ErrNotFound) {
			t.Errorf("%s: err = %v, want ErrNotFound", tc.name, tc.err)
		}
	}
	if err := s.CreateThread(ctx, Thread{ID: "bad", Settings: json.RawMessage(`{`)}); err == nil {
		t.Error("CreateThread with invalid settings JSON succeeded")
	}

	evs := checkGapless(t, s, "th1")
	if k := kinds(evs); !slices.Equal(k, []string{EventThreadCreated, EventThreadUpdated}) {
		t.Fatalf("events = %v", k)
	}
	if evs[0].At != 100 || evs[1].At != 200 {
		t.Fatalf("event times = %d, %d", evs[0].At, evs[1].At)
	}
}

func listAll(t *testing.T, s *Store, o ListOptions) (ids []string, pages int) {
	t.Helper()
	seen := map[string]bool{}
	for {
		th, next, err := s.ListThreads(ctx, o)
		if err != nil {
			t.Fatalf("ListThreads(%+v): %v", o, err)
		}
		pages++
		for _, x := range th {
			if seen[x.ID] {
				t.Fatalf("duplicate %s across pages", x.ID)
			}
			seen[x.ID] = true
			ids = append(ids, x.ID)
		}
		if next == "" {
			return ids, pages
		}
		if pages > 100 {
			t.Fatal("paging does not terminate")
		}
		o.Cursor = next
	}
}

func TestListThreads(t *testing.T) {
	s := openTest(t, "")
	// 7 threads; created_at has ties (resolved by id), updated_at runs in
	// a different order.
	type row struct {
		id, name, preview, cwd, prov string
		created, updated             int64
		archived                     bool
	}
	rows := []row{
		{"a", "Fix the Build", "", "/w1", "openai", 10, 70, false},
		{"b", "other", "about BUILD scripts", "/w2", "local", 20, 60, false},
		{"c", "Über thing", "", "/w1", "openai", 20, 50, false},
		{"d", "", "", "/w3", "openai", 30, 40, false},
		{"e", "e", "", "/w1", "local", 40, 30, false},
		{"f", "f", "", "/w2", "openai", 40, 20, false},
		{"g", "g", "", "/w1", "openai", 50, 10, false},
		{"x", "archived build", "", "/w1", "openai", 5, 5, true},
		{"y", "archived 2", "", "/w2", "openai", 6, 6, true},
	}
	for _, r := range rows {
		mkThread(t, s, Thread{ID: r.id, Name: r.name, Preview: r.preview, Cwd: r.cwd, ModelProvider: r.prov,
			CreatedAt: r.created, UpdatedAt: r.updated, Archived: r.archived})
	}
	expect := func(key string, asc, archived bool, keep func(row) bool) []string {
		var rs []row
		for _, r := range rows {
			if r.archived == archived && (keep == nil || keep(r)) {
				rs = append(rs, r)
			}
		}
		sort.Slice(rs, func(i, j int) bool {
			ki, kj := rs[i].created, rs[j].created
			if key == "updated_at" {
				ki, kj = rs[i].updated, rs[j].updated
			}
			less := ki < kj || (ki == kj && rs[i].id < rs[j].id)
			if asc {
				return less
			}
			return !less
		})
		var ids []string
		for _, r := range rs {
			ids = append(ids, r.id)
		}
		return ids
	}

	for _, key := range []string{"", "created_at", "updated_at"} {
		for _, asc := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/asc=%v", key, asc), func(t *testing.T) {
				ekey := key
				if ekey == "" {
					ekey = "created_at"
				}
				ids, pages := listAll(t, s, ListOptions{Limit: 3, SortKey: key, Ascending: asc})
				if want := expect(ekey, asc, false, nil); !slices.Equal(ids, want) {
					t.Fatalf("ids = %v, want %v", ids, want)
				}
				if pages != 3 {
					t.Fatalf("pages = %d, want 3", pages)
				}
			})
		}
	}

	filters := []struct {
		name string
		o    ListOptions
		keep func(row) bool
		arch bool
	}{
		{"archived", ListOptions{Archived: true}, nil, true},
		{"cwd", ListOptions{Cwds: []string{"/w1"}}, func(r row) bool { return r.cwd == "/w1" }, false},
		{"cwds", ListOptions{Cwds: []string{"/w2", "/w3"}}, func(r row) bool { return r.cwd != "/w1" }, false},
		{"provider", ListOptions{ModelProviders: []string{"local"}}, func(r row) bool { return r.prov == "local" }, false},
		{"search name+preview", ListOptions{SearchTerm: "bUiLd"}, func(r row) bool { return r.id == "a" || r.id == "b" }, false},
		{"search unicode", ListOptions{SearchTerm: "üBER"}, func(r row) bool { return r.id == "c" }, false},
		{"search archived", ListOptions{SearchTerm: "build", Archived: true}, func(r row) bool { return r.id == "x" }, true},
		{"search none", ListOptions{SearchTerm: "zzz"}, func(row) bool { return false }, false},
		{"combined", ListOptions{Cwds: []string{"/w1"}, ModelProviders: []string{"openai"}, SearchTerm: "g"},
			func(r row) bool { return r.id == "g" || r.id == "c" }, false}, // "Über thing" has a g
	}
	for _, f := range filters {
		t.Run(f.name, func(t *testing.T) {
			o := f.o
			o.Limit = 2
			ids, _ := listAll(t, s, o)
			if want := expect("created_at", false, f.arch, f.keep); !slices.Equal(ids, want) {
				t.Fatalf("ids = %v, want %v", ids, want)
			}
		})
	}

	t.Run("limits", func(t *testing.T) {
		th, next, err := s.ListThreads(ctx, ListOptions{})
		if err != nil || len(th) != 7 || next != "" {
			t.Fatalf("default limit: %d threads, next %q, %v", len(th), next, err)
		}
		th, _, err = s.ListThreads(ctx, ListOptions{Limit: 100000})
		if err != nil || len(th) != 7 {
			t.Fatalf("huge limit: %d, %v", len(th), err)
		}
		if _, _, err := s.ListThreads(ctx, ListOptions{SortKey: "name"}); err == nil {
			t.Fatal("bad sort key accepted")
		}
	})

	t.Run("bad cursor", func(t *testing.T) {
		_, next, err := s.ListThreads(ctx, ListOptions{Limit: 2})
		if err != nil || next == "" {
			t.Fatal(err)
		}
		for _, c := range []struct{ name, cursor string }{
			{"not base64", "!!!"},
			{"not json", "bm90IGpzb24"},
			{"empty object", encodeB64(`{}`)},
			{"unknown field", encodeB64(`{"k":"created_at","v":1,"i":"a","zz":1}`)},
		} {
			if _, _, err := s.ListThreads(ctx, ListOptions{Cursor: c.cursor}); !errors.Is(err, ErrBadCursor) {
				t.Errorf("%s: err = %v, want ErrBadCursor", c.name, err)
			}
		}
		// A cursor is bound to its sort order.
		if _, _, err := s.ListThreads(ctx, ListOptions{Cursor: next, SortKey: "updated_at"}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("other sort key: %v", err)
		}
		if _, _, err := s.ListThreads(ctx, ListOptions{Cursor: next, Ascending: true}); !errors.Is(err, ErrBadCursor) {
			t.Errorf("other direction: %v", err)
		}
	})

	t.Run("stable under inserts", func(t *testing.T) {
		s := openTest(t, "")
		for i := range 7 {
			mkThread(t, s, Thread{ID: fmt.Sprintf("t%d", i), CreatedAt: int64(100 + i)})
		}
		page, next, err := s.ListThreads(ctx, ListOptions{Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		got := itemIDsOfThreads(page)
		// Newer threads arrive between pages; they must not shift the pages.
		mkThread(t, s, Thread{ID: "new1", CreatedAt: 500})
		mkThread(t, s, Thread{ID: "new2", CreatedAt: 501})
		rest, _ := listAll(t, s, ListOptions{Limit: 3, Cursor: next})
		got = append(got, rest...)
		if want := []string{"t6", "t5", "t4", "t3", "t2", "t1", "t0"}; !slices.Equal(got, want) {
			t.Fatalf("ids = %v, want %v", got, want)
		}
	})
}

func encodeB64(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

func itemIDsOfThreads(th []Thread) []string {
	var ids []string
	for _, x := range th {
		ids = append(ids, x.ID)
	}
	return ids
}

func TestTurnsAndItems(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "th", CreatedAt: 10})
	mkThread(t, s, Thread{ID: "other", CreatedAt: 10})

	t1 := startTurn(t, s, "th", "turn1", 100)
	if t1.Seq != 1 || t1.Status != StatusInProgress {
		t.Fatalf("turn1 = %+v", t1)
	}
	appendItem(t, s, "th", "turn1", "i1")
	appendItem(t, s, "th", "turn1", "i2")
	if err := s.FinishTurn(ctx, Turn{ThreadID: "th", ID: "turn1", Status: StatusCompleted, CompletedAt: 150, DurationMs: 50}); err != nil {
		t.Fatal(err)
	}
	t2 := startTurn(t, s, "th", "turn2", 200)
	if t2.Seq != 2 {
		t.Fatalf("turn2 seq = %d", t2.Seq)
	}
	it3 := appendItem(t, s, "th", "turn2", "i3")
	if it3.Seq != 3 {
		t.Fatalf("i3 seq = %d", it3.Seq)
	}
	// Same item id in another thread is fine.
	startTurn(t, s, "other", "turn1", 300)
	if it := appendItem(t, s, "other", "turn1", "i1"); it.Seq != 1 {
		t.Fatalf("other/i1 seq = %d", it.Seq)
	}
	terr := json.RawMessage(`{"message":"boom"}`)
	if err := s.FinishTurn(ctx, Turn{ThreadID: "th", ID: "turn2", Status: StatusFailed, Error: terr, CompletedAt: 260, DurationMs: 60}); err != nil {
		t.Fatal(err)
	}

	errCases := []struct {
		name string
		err  error
		want error
	}{
		{"duplicate item", func() error {
			_, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn2", ID: "i1", Item: json.RawMessage(`{}`)})
			return err
		}(), ErrDuplicate},
		{"item for missing turn", func() error {
			_, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "nope", ID: "i9", Item: json.RawMessage(`{}`)})
			return err
		}(), ErrNotFound},
		{"turn for missing thread", func() error { _, err := s.StartTurn(ctx, Turn{ThreadID: "nope", ID: "x"}); return err }(), ErrNotFound},
		{"duplicate turn", func() error { _, err := s.StartTurn(ctx, Turn{ThreadID: "th", ID: "turn1"}); return err }(), ErrDuplicate},
		{"finish missing turn", s.FinishTurn(ctx, Turn{ThreadID: "th", ID: "nope", Status: StatusCompleted}), ErrNotFound},
	}
	for _, c := range errCases {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, c.err, c.want)
		}
	}
	for _, c := range []struct {
		name string
		err  error
	}{
		{"invalid item json", func() error {
			_, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn2", ID: "bad", Item: json.RawMessage(`{x`)})
			return err
		}()},
		{"empty item", func() error {
			_, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn2", ID: "bad"})
			return err
		}()},
		{"finish with inProgress", s.FinishTurn(ctx, Turn{ThreadID: "th", ID: "turn2", Status: StatusInProgress})},
	} {
		if c.err == nil {
			t.Errorf("%s: succeeded", c.name)
		}
	}

	turns, err := s.Turns(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	want := []Turn{
		{ThreadID: "th", ID: "turn1", Seq: 1, Status: StatusCompleted, StartedAt: 100, CompletedAt: 150, DurationMs: 50},
		{ThreadID: "th", ID: "turn2", Seq: 2, Status: StatusFailed, Error: terr, StartedAt: 200, CompletedAt: 260, DurationMs: 60},
	}
	if fmt.Sprint(turns) != fmt.Sprint(want) {
		t.Fatalf("Turns = %+v\nwant %+v", turns, want)
	}

	items, err := s.Items(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if ids := itemIDs(items); !slices.Equal(ids, []string{"i1", "i2", "i3"}) {
		t.Fatalf("Items = %v", ids)
	}
	for i, it := range items {
		if it.Seq != i+1 || it.Type != "agentMessage" || !json.Valid(it.Item) || it.History != nil || it.CompletedAt != 5 {
			t.Fatalf("item %d = %+v", i, it)
		}
	}
	if items[0].TurnID != "turn1" || items[1].TurnID != "turn1" || items[2].TurnID != "turn2" {
		t.Fatalf("Items turns = %+v", items)
	}
	withHist, err := s.AppendItem(ctx, Item{ThreadID: "other", TurnID: "turn1", ID: "h", Type: "userMessage",
		Item: json.RawMessage(`{"id":"h"}`), History: json.RawMessage(`[{"role":"user"}]`)})
	if err != nil {
		t.Fatal(err)
	}
	ti, _ := s.Items(ctx, "other")
	if len(ti) != 2 || string(ti[1].History) != `[{"role":"user"}]` || ti[1].Seq != withHist.Seq {
		t.Fatalf("history round trip: %+v", ti)
	}

	th, _ := s.GetThread(ctx, "th")
	if th.UpdatedAt != 200 {
		t.Fatalf("thread updated_at = %d, want bumped to 200", th.UpdatedAt)
	}

	evs := checkGapless(t, s, "th")
	wantKinds := []string{EventThreadCreated, EventTurnStarted, EventItemCompleted, EventItemCompleted,
		EventTurnCompleted, EventTurnStarted, EventItemCompleted, EventTurnCompleted}
	if k := kinds(evs); !slices.Equal(k, wantKinds) {
		t.Fatalf("event kinds = %v\nwant %v", k, wantKinds)
	}
	if e := evs[2]; e.TurnID != "turn1" || e.ItemID != "i1" || string(e.Payload) != `{"type":"agentMessage","seq":1}` {
		t.Fatalf("item event = %+v (%s)", e, e.Payload)
	}
	after, err := s.events(ctx, "th", 6)
	if err != nil || len(after) != 2 || after[0].Seq != 7 {
		t.Fatalf("events after 6 = %+v, %v", after, err)
	}
}

func TestAppendItemVisibleFromSecondStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	a := openTest(t, path)
	mkThread(t, a, Thread{ID: "th"})
	startTurn(t, a, "th", "turn1", 1)
	appendItem(t, a, "th", "turn1", "i1")

	b := openTest(t, path) // a is still open
	items, err := b.Items(ctx, "th")
	if err != nil || !slices.Equal(itemIDs(items), []string{"i1"}) {
		t.Fatalf("second store sees %v, %v", itemIDs(items), err)
	}
	// And the other way round, while both are open.
	mkThread(t, b, Thread{ID: "th2"})
	startTurn(t, b, "th2", "turn1", 1)
	appendItem(t, b, "th2", "turn1", "j1")
	items, err = a.Items(ctx, "th2")
	if err != nil || !slices.Equal(itemIDs(items), []string{"j1"}) {
		t.Fatalf("first store sees %v, %v", itemIDs(items), err)
	}
}

func TestRecovery(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Recovered()) != 0 {
		t.Fatalf("fresh Recovered = %v", s.Recovered())
	}
	mkThread(t, s, Thread{ID: "th"})
	mkThread(t, s, Thread{ID: "done"})
	startTurn(t, s, "done", "turn1", 1)
	if err := s.FinishTurn(ctx, Turn{ThreadID: "done", ID: "turn1", Status: StatusCompleted, CompletedAt: 2}); err != nil {
		t.Fatal(err)
	}
	startTurn(t, s, "th", "turn1", 1000)
	appendItem(t, s, "th", "turn1", "i1")
	if err := s.Close(); err != nil { // without finishing the turn
		t.Fatal(err)
	}

	before := time.Now().UnixMilli()
	s = openTest(t, path)
	if got := s.Recovered(); !slices.Equal(got, []TurnRef{{"th", "turn1"}}) {
		t.Fatalf("Recovered = %v", got)
	}
	turns, err := s.Turns(ctx, "th")
	if err != nil || len(turns) != 1 {
		t.Fatal(turns, err)
	}
	if tu := turns[0]; tu.Status != StatusInterrupted || tu.CompletedAt < before || tu.DurationMs != tu.CompletedAt-1000 {
		t.Fatalf("turn after recovery = %+v", tu)
	}
	if items, _ := s.Items(ctx, "th"); !slices.Equal(itemIDs(items), []string{"i1"}) {
		t.Fatalf("items after recovery = %v", itemIDs(items))
	}
	evs := checkGapless(t, s, "th")
	if last := evs[len(evs)-1]; last.Kind != EventTurnInterrupted || last.TurnID != "turn1" {
		t.Fatalf("last event = %+v", last)
	}
	if dt, _ := s.Turns(ctx, "done"); dt[0].Status != StatusCompleted {
		t.Fatalf("finished turn touched: %+v", dt[0])
	}
	s.Close()
	s = openTest(t, path)
	if got := s.Recovered(); len(got) != 0 {
		t.Fatalf("second reopen Recovered = %v", got)
	}
}

const crashEnv = "APSERVER_STORE_CRASH_CHILD"

// TestCrashChild is the child half of TestCrashSubprocess: it appends items
// forever, printing each id once AppendItem has returned, until it is killed.
func TestCrashChild(t *testing.T) {
	spec := os.Getenv(crashEnv)
	if spec == "" {
		t.Skip("helper for TestCrashSubprocess")
	}
	path, syncMode, _ := strings.Cut(spec, "|")
	s, err := Open(path, Options{Synchronous: syncMode})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	if err := s.CreateThread(ctx, Thread{ID: "th", CreatedAt: 1, UpdatedAt: 1}); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	if _, err := s.StartTurn(ctx, Turn{ThreadID: "th", ID: "turn1", StartedAt: 1}); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	payload := json.RawMessage(`{"type":"commandExecution","aggregatedOutput":"` + strings.Repeat("x", 2000) + `"}`)
	for i := 0; ; i++ {
		id := "item" + strconv.Itoa(i)
		if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn1", ID: id, Type: "commandExecution",
			Item: payload, CompletedAt: int64(i)}); err != nil {
			fmt.Println("error", err)
			os.Exit(3)
		}
		os.Stdout.WriteString("committed " + id + "\n") // unbuffered write(2)
	}
}

func TestCrashSubprocess(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in child")
	}
	for _, syncMode := range []string{"NORMAL", "FULL"} {
		t.Run(syncMode, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), FileName)
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashEnv+"="+path+"|"+syncMode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			var committed []string
			sc := bufio.NewScanner(out)
			killed := false
			for sc.Scan() {
				line := sc.Text()
				if id, ok := strings.CutPrefix(line, "committed "); ok {
					committed = append(committed, id)
				} else if strings.HasPrefix(line, "error") {
					t.Errorf("child: %s", line)
				}
				if len(committed) == 150 && !killed {
					cmd.Process.Kill() // SIGKILL mid-run; keep draining what it already wrote
					killed = true
				}
			}
			werr := cmd.Wait()
			if !killed {
				t.Fatalf("child ended before it was killed: %v", werr)
			}
			t.Logf("child reported %d commits before SIGKILL (%v)", len(committed), werr)

			s := openTest(t, path)
			items, err := s.Items(ctx, "th")
			if err != nil {
				t.Fatal(err)
			}
			have := map[string]bool{}
			for i, it := range items {
				have[it.ID] = true
				if it.Seq != i+1 {
					t.Fatalf("item seq %d at index %d", it.Seq, i)
				}
			}
			for _, id := range committed {
				if !have[id] {
					t.Fatalf("item %s reported committed but missing after crash (have %d items)", id, len(items))
				}
			}
			if got := s.Recovered(); !slices.Equal(got, []TurnRef{{"th", "turn1"}}) {
				t.Fatalf("Recovered = %v", got)
			}
			evs := checkGapless(t, s, "th")
			if n := len(evs); n != len(items)+3 { // created, started, items..., interrupted
				t.Fatalf("%d events for %d items", n, len(items))
			}
		})
	}
}

func TestEventSeqGaplessConcurrent(t *testing.T) {
	s := openTest(t, "")
	threads := []string{"a", "b", "c"}
	for _, id := range threads {
		mkThread(t, s, Thread{ID: id})
		startTurn(t, s, id, "turn1", 1)
	}
	const workers, per = 8, 40
	var wg sync.WaitGroup
	errc := make(chan error, workers*per)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				// Every worker hits "a" (same thread); others spread over b and c.
				th := "a"
				if i%2 == 1 {
					th = threads[1+w%2]
				}
				var err error
				if i%3 == 0 {
					_, err = s.StartTurn(ctx, Turn{ThreadID: th, ID: fmt.Sprintf("t-w%d-%d", w, i), StartedAt: 1})
				} else {
					_, err = s.AppendItem(ctx, Item{ThreadID: th, TurnID: "turn1", ID: fmt.Sprintf("w%d-%d", w, i),
						Type: "t", Item: json.RawMessage(`{}`), CompletedAt: 1})
				}
				if err != nil {
					errc <- err
				}
				// Concurrent readers too.
				if _, err := s.events(ctx, th, 0); err != nil {
					errc <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	total := 0
	for _, th := range threads {
		evs := checkGapless(t, s, th)
		total += len(evs) - 2 // minus thread.created, turn.started
		items, _ := s.Items(ctx, th)
		for i, it := range items {
			if it.Seq != i+1 {
				t.Fatalf("thread %s: item seq %d at %d", th, it.Seq, i)
			}
		}
	}
	if total != workers*per {
		t.Fatalf("total events %d, want %d", total, workers*per)
	}
}

func TestFork(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "src", Name: "source", CreatedAt: 1})
	for i, tid := range []string{"t1", "t2", "t3"} {
		startTurn(t, s, "src", tid, int64(10*(i+1)))
		appendItem(t, s, "src", tid, tid+"-a")
		appendItem(t, s, "src", tid, tid+"-b")
		if err := s.FinishTurn(ctx, Turn{ThreadID: "src", ID: tid, Status: StatusCompleted, CompletedAt: int64(10*(i+1) + 5)}); err != nil {
			t.Fatal(err)
		}
	}
	startTurn(t, s, "src", "t4", 100) // still running: never copied
	appendItem(t, s, "src", "t4", "t4-a")

	tests := []struct {
		name      string
		through   string
		wantTurns []string
		wantItems []string
		wantErr   error
	}{
		{"through t2", "t2", []string{"t1", "t2"}, []string{"t1-a", "t1-b", "t2-a", "t2-b"}, nil},
		{"through t1", "t1", []string{"t1"}, []string{"t1-a", "t1-b"}, nil},
		{"all", "", []string{"t1", "t2", "t3"}, []string{"t1-a", "t1-b", "t2-a", "t2-b", "t3-a", "t3-b"}, nil},
		{"through running t4", "t4", []string{"t1", "t2", "t3"}, []string{"t1-a", "t1-b", "t2-a", "t2-b", "t3-a", "t3-b"}, nil},
		{"missing turn", "nope", nil, nil, ErrNotFound},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dst := Thread{ID: fmt.Sprintf("dst%d", i), Name: "fork", CreatedAt: 500, UpdatedAt: 500}
			err := s.Fork(ctx, "src", dst, tc.through)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				if _, err := s.GetThread(ctx, dst.ID); !errors.Is(err, ErrNotFound) {
					t.Fatalf("failed fork left thread behind: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetThread(ctx, dst.ID)
			if got.ForkedFromID != "src" || got.Name != "fork" {
				t.Fatalf("dst thread = %+v", got)
			}
			turns, _ := s.Turns(ctx, dst.ID)
			var tids []string
			for i, tu := range turns {
				tids = append(tids, tu.ID)
				if tu.Seq != i+1 || tu.Status != StatusCompleted {
					t.Fatalf("copied turn %+v", tu)
				}
			}
			if !slices.Equal(tids, tc.wantTurns) {
				t.Fatalf("turns = %v, want %v", tids, tc.wantTurns)
			}
			items, _ := s.Items(ctx, dst.ID)
			if !slices.Equal(itemIDs(items), tc.wantItems) {
				t.Fatalf("items = %v, want %v", itemIDs(items), tc.wantItems)
			}
			for i, it := range items {
				if it.Seq != i+1 || it.ThreadID != dst.ID {
					t.Fatalf("copied item %+v", it)
				}
			}
			evs := checkGapless(t, s, dst.ID)
			if len(evs) != 1 || evs[0].Kind != EventThreadForked || evs[0].At != 500 {
				t.Fatalf("dst events = %+v", evs)
			}
			// The fork continues independently.
			if tu := startTurn(t, s, dst.ID, "new", 600); tu.Seq != len(tc.wantTurns)+1 {
				t.Fatalf("next turn seq = %d", tu.Seq)
			}
			if it := appendItem(t, s, dst.ID, "new", "t1-a-again"); it.Seq != len(tc.wantItems)+1 {
				t.Fatalf("next item seq = %d", it.Seq)
			}
		})
	}
	if err := s.Fork(ctx, "nope", Thread{ID: "d9"}, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("fork of missing source: %v", err)
	}
	if err := s.Fork(ctx, "src", Thread{ID: "src"}, ""); !errors.Is(err, ErrDuplicate) {
		t.Fatalf("fork onto existing id: %v", err)
	}
	if items, _ := s.Items(ctx, "src"); len(items) != 7 {
		t.Fatalf("source changed: %d items", len(items))
	}
}

func TestDropTurnsFrom(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "th"})
	mkThread(t, s, Thread{ID: "keep"})
	startTurn(t, s, "keep", "t2", 1)
	appendItem(t, s, "keep", "t2", "k")
	for _, tid := range []string{"t1", "t2", "t3"} {
		startTurn(t, s, "th", tid, 1)
		appendItem(t, s, "th", tid, tid+"-a")
		appendItem(t, s, "th", tid, tid+"-b")
	}
	if err := s.DropTurnsFrom(ctx, "th", "t2"); err != nil {
		t.Fatal(err)
	}
	turns, _ := s.Turns(ctx, "th")
	if len(turns) != 1 || turns[0].ID != "t1" {
		t.Fatalf("turns after drop = %+v", turns)
	}
	items, _ := s.Items(ctx, "th")
	if !slices.Equal(itemIDs(items), []string{"t1-a", "t1-b"}) {
		t.Fatalf("items after drop = %v", itemIDs(items))
	}
	if items, _ := s.Items(ctx, "keep"); len(items) != 1 {
		t.Fatal("other thread touched")
	}
	evs := checkGapless(t, s, "th")
	last := evs[len(evs)-1]
	var p struct {
		From  string   `json:"fromTurnId"`
		Turns []string `json:"turnIds"`
		Items int      `json:"items"`
	}
	if err := json.Unmarshal(last.Payload, &p); err != nil || last.Kind != EventTurnsDropped ||
		p.From != "t2" || !slices.Equal(p.Turns, []string{"t2", "t3"}) || p.Items != 4 {
		t.Fatalf("drop event = %+v %s (%v)", last, last.Payload, err)
	}
	// Seqs continue from what is left; a dropped item id may be reused.
	if tu := startTurn(t, s, "th", "t2", 2); tu.Seq != 2 {
		t.Fatalf("new turn seq = %d", tu.Seq)
	}
	if it := appendItem(t, s, "th", "t2", "t2-a"); it.Seq != 3 {
		t.Fatalf("new item seq = %d", it.Seq)
	}
	if err := s.DropTurnsFrom(ctx, "th", "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("drop missing turn: %v", err)
	}
	if err := s.DropTurnsFrom(ctx, "th", "t1"); err != nil {
		t.Fatal(err)
	}
	if turns, err := s.Turns(ctx, "th"); err != nil || len(turns) != 0 {
		t.Fatalf("after dropping all: %v, %v", turns, err)
	}
}

func TestState(t *testing.T) {
	s := openTest(t, "")
	puts := []struct{ k, v string }{
		{"auto/run1", `{"n":1}`},
		{"auto/run2", `{"n":2}`},
		{"auto/run1", `{"n":3}`}, // overwrite
		{"autox", `"x"`},
		{"other", `[1,2]`},
	}
	for _, p := range puts {
		if err := s.PutState(ctx, p.k, json.RawMessage(p.v)); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := s.GetState(ctx, "auto/run1"); err != nil || string(v) != `{"n":3}` {
		t.Fatalf("GetState = %s, %v", v, err)
	}
	if _, err := s.GetState(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetState missing: %v", err)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"auto/", []string{"auto/run1", "auto/run2"}},
		{"auto", []string{"auto/run1", "auto/run2", "autox"}},
		{"", []string{"auto/run1", "auto/run2", "autox", "other"}},
		{"zzz", nil},
	} {
		m, err := s.ListState(ctx, tc.prefix)
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, tc.want) {
			t.Errorf("ListState(%q) = %v, want %v", tc.prefix, keys, tc.want)
		}
	}
	if err := s.DeleteState(ctx, "auto/run1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetState(ctx, "auto/run1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if err := s.DeleteState(ctx, "auto/run1"); err != nil {
		t.Fatalf("delete missing: %v", err)
	}
	if err := s.PutState(ctx, "bad", json.RawMessage(`{`)); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, "back\\slash", "nl\n", "ünï", "<&>", "\xff"} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> %s: %v", s, b, err)
		}
		if want, _ := json.Marshal(s); string(b) != string(want) {
			t.Fatalf("%q -> %s, want %s", s, b, want)
		}
	}
}

func BenchmarkAppendItem(b *testing.B) {
	for _, syncMode := range []string{"NORMAL", "FULL"} {
		b.Run(syncMode, func(b *testing.B) {
			s, err := Open(filepath.Join(b.TempDir(), FileName), Options{Synchronous: syncMode})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			mkThread(b, s, Thread{ID: "th"})
			startTurn(b, s, "th", "turn1", 1)
			payload := json.RawMessage(`{"type":"agentMessage","id":"x","text":"` + strings.Repeat("lorem ipsum ", 40) + `"}`)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn1", ID: strconv.Itoa(i),
					Type: "agentMessage", Item: payload, CompletedAt: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCheckpointRewindsWAL(t *testing.T) {
	s := openTest(t, "")
	// Stop the background checkpointer so the WAL only grows, then run its
	// round by hand.
	close(s.ckStop)
	<-s.ckDone
	s.ckStop = nil
	mkThread(t, s, Thread{ID: "th"})
	startTurn(t, s, "th", "turn1", 1)
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", 20000) + `"}`) // several pages per item
	for i := range 300 {
		if _, err := s.AppendItem(ctx, Item{ThreadID: "th", TurnID: "turn1", ID: "big" + strconv.Itoa(i), Type: "x", Item: big}); err != nil {
			t.Fatal(err)
		}
	}
	if !s.checkpointOnce() {
		t.Fatal("checkpoint did not complete")
	}
	appendItem(t, s, "th", "turn1", "after") // this write rewinds the WAL
	if frames, ok := s.checkpoint(); !ok || frames >= 100 {
		t.Fatalf("WAL not rewound: %d frames (complete %v)", frames, ok)
	}
	if items, err := s.Items(ctx, "th"); err != nil || len(items) != 301 || items[300].ID != "after" {
		t.Fatalf("items after checkpoint: %d, %v", len(items), err)
	}
	if fi, err := os.Stat(s.path + "-wal"); err != nil || fi.Size() > walSizeLimit {
		t.Fatalf("WAL file: %v, %v", fi, err)
	}
}

// Event is one row of a thread's append-only event log.
type Event struct {
	ThreadID       string
	Seq            int64 // gapless 1,2,3... per thread
	Kind           string
	TurnID, ItemID string
	Payload        json.RawMessage
	At             int64 // unix ms
}

// events returns the thread's events with Seq > afterSeq, in order, as
// the tests read the event log. A missing thread wraps ErrNotFound.
func (s *Store) events(ctx context.Context, threadID string, afterSeq int64) ([]Event, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT thread_id, seq, kind, turn_id, item_id, payload, at
		FROM events WHERE thread_id = ? AND seq > ? ORDER BY seq`, threadID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var p []byte
		if err := rows.Scan(&e.ThreadID, &e.Seq, &e.Kind, &e.TurnID, &e.ItemID, &p, &e.At); err != nil {
			return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
		}
		e.Payload = rawOrNil(p)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: events of %q: %w", threadID, err)
	}
	if len(out) == 0 {
		if err := s.threadExists(ctx, threadID); err != nil {
			return nil, err
		}
	}
	return out, nil
}
