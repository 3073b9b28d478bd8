package store

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestFullAutoLog: a run's log keeps its base and events in order; a
// fresh log replaces the earlier run's; deleting it, or the thread,
// forgets it.
func TestFullAutoLog(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "a"})
	if _, err := s.GetFullAutoLog(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetFullAutoLog with no log = %v, want ErrNotFound", err)
	}
	ev := func(n string) json.RawMessage { return json.RawMessage(`{"type":"` + n + `"}`) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.AppendFullAutoEvent(ctx, "a", 1, ev("start"), true, json.RawMessage(`{"turnId":"c1"}`)))
	must(s.AppendFullAutoEvent(ctx, "a", 2, ev("turnStarted"), false, nil))
	must(s.AppendFullAutoEvent(ctx, "a", 3, ev("turnEnded"), false, nil))
	lg, err := s.GetFullAutoLog(ctx, "a")
	if err != nil || string(lg.Base) != `{"turnId":"c1"}` || join(lg.Entries) != "start turnStarted turnEnded" {
		t.Fatalf("GetFullAutoLog = %s %s, %v; want base c1 and start turnStarted turnEnded", lg.Base, join(lg.Entries), err)
	}
	must(s.AppendFullAutoEvent(ctx, "a", 4, ev("setGoal"), true, json.RawMessage(`{}`)))
	if lg, err := s.GetFullAutoLog(ctx, "a"); err != nil || string(lg.Base) != `{}` || join(lg.Entries) != "setGoal" {
		t.Errorf("after a fresh log: %s %s, %v; want {} and setGoal alone", lg.Base, join(lg.Entries), err)
	}
	if err := s.AppendFullAutoEvent(ctx, "a", 5, json.RawMessage(`{`), false, nil); err == nil {
		t.Errorf("appending invalid JSON: no error")
	}
	must(s.DeleteFullAutoLog(ctx, "a"))
	if _, err := s.GetFullAutoLog(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetFullAutoLog after DeleteFullAutoLog = %v, want ErrNotFound", err)
	}
	if err := s.AppendFullAutoEvent(ctx, "nope", 1, ev("start"), true, json.RawMessage(`{}`)); !errors.Is(err, ErrNotFound) {
		t.Errorf("AppendFullAutoEvent on a missing thread = %v, want ErrNotFound", err)
	}
}

func join(es []json.RawMessage) string {
	var out []string
	for _, e := range es {
		var w struct{ Type string }
		_ = json.Unmarshal(e, &w)
		out = append(out, w.Type)
	}
	return strings.Join(out, " ")
}

// BenchmarkAppendFullAutoEvent: the cost of storing one event of a
// drive's log (a write transaction), what full auto adds per event.
func BenchmarkAppendFullAutoEvent(b *testing.B) {
	s := openTest(b, "")
	mkThread(b, s, Thread{ID: "a"})
	entry := json.RawMessage(`{"atMs":1,"type":"responseDone","data":{"turnId":"t1","usage":{"Input":1200,"Cached":200,"Output":300}}}`)
	if err := s.AppendFullAutoEvent(ctx, "a", 1, entry, true, json.RawMessage(`{}`)); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.AppendFullAutoEvent(ctx, "a", int64(i), entry, false, nil); err != nil {
			b.Fatal(err)
		}
	}
}
