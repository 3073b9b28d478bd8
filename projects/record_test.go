package projects

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/manager"
	"github.com/apserver/apserver/store"
)

// TestTickInputStoredOnce: a tick deciding on the same input as the tick
// before stores a reference to that tick's input (its seq and SHA-256),
// not the input again; replay follows the reference and decides the same;
// a reference to a tick that is not stored, or whose input is not the one
// referred to, is a replay error naming the tick.
func TestTickInputStoredOnce(t *testing.T) {
	var order []string
	for i := range 200 {
		order = append(order, fmt.Sprintf("task-%03d", i))
	}
	f := newFake(map[string][]string{}, order)
	s, db := newService(t, f, time.Now)
	ctx := context.Background()
	ws := t.TempDir()
	abs, _ := filepath.Abs(ws)
	if _, err := s.UpdateSettings(ctx, ws, fullAuto(1)); err != nil {
		t.Fatal(err)
	}
	want := []manager.Result{manager.ResultStartedRun, manager.ResultNothingToDo, manager.ResultNothingToDo, manager.ResultNothingToDo}
	for i, w := range want {
		if d, err := s.Tick(ctx, ws); err != nil || d.Result != w {
			t.Fatalf("tick %d = %+v, %v; want %s", i+1, d, err, w)
		}
	}
	f.finish()
	if d, err := s.Tick(ctx, ws); err != nil || d.Result != manager.ResultStartedRun {
		t.Fatalf("tick after a run finished = %+v, %v", d, err)
	}
	ticks, err := db.ManagerTicks(ctx, abs, 0)
	if err != nil || len(ticks) != 5 {
		t.Fatalf("%d ticks stored, %v", len(ticks), err)
	}
	full := func(i int) bool { return strings.Contains(string(ticks[i].Input), `"ready"`) }
	for i, wantFull := range []bool{true, true, false, false, true} {
		if full(i) != wantFull {
			t.Errorf("tick %d stored input %.80s…; want it in full: %v", ticks[i].Seq, ticks[i].Input, wantFull)
		}
	}
	for _, i := range []int{2, 3} {
		if n, m := len(ticks[i].Input), len(ticks[1].Input); n*20 > m {
			t.Errorf("tick %d stores %d bytes of input, the tick it repeats %d", ticks[i].Seq, n, m)
		}
		if !strings.Contains(string(ticks[i].Input), fmt.Sprintf(`"seq":%d`, ticks[1].Seq)) {
			t.Errorf("tick %d input %s does not refer to tick %d", ticks[i].Seq, ticks[i].Input, ticks[1].Seq)
		}
	}
	if n, diffs, err := s.Replay(ctx, ws); err != nil || n != 5 || len(diffs) != 0 {
		t.Fatalf("Replay = %d, %v, %v; want 5 ticks, no diff", n, diffs, err)
	}

	// A reference that does not hold.
	var ref storedInput
	if err := json.Unmarshal(ticks[2].Input, &ref); err != nil || ref.Ref == nil {
		t.Fatalf("tick 3 input %s: %v", ticks[2].Input, err)
	}
	// Replay refuses a reference to an input that is not the one stored.
	in, _ := json.Marshal(storedInput{Ref: &inputRef{Seq: ticks[0].Seq, SHA256: ref.Ref.SHA256}})
	bad, err := db.AppendManagerTick(ctx, store.ManagerTick{Cwd: abs, Input: in, Decision: ticks[2].Decision, Result: ticks[2].Result})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err = s.Replay(ctx, ws); err == nil || !strings.Contains(err.Error(), "another SHA-256") || !strings.Contains(err.Error(), fmt.Sprintf("tick %d", bad.Seq)) {
		t.Errorf("Replay with a reference to tick 1's input with tick 2's SHA-256: %v; want an error naming tick %d", err, bad.Seq)
	}
	// And one to a tick that is not stored, or not before it.
	bySeq := map[int64]store.ManagerTick{}
	for _, x := range ticks {
		bySeq[x.Seq] = x
	}
	for _, seq := range []int64{999, ticks[2].Seq} {
		in, _ := json.Marshal(storedInput{Ref: &inputRef{Seq: seq, SHA256: ref.Ref.SHA256}})
		if _, err := tickInput(store.ManagerTick{Seq: ticks[2].Seq, Input: in}, bySeq); err == nil || !strings.Contains(err.Error(), "not stored") {
			t.Errorf("input of tick %d referring to tick %d: %v; want not stored", ticks[2].Seq, seq, err)
		}
	}
}

// TestSameInput: two inputs are the same (the second stored as a
// reference to the first) only when every field is, the ready list and
// the dependencies included (nil and empty differ: they are stored
// differently).
func TestSameInput(t *testing.T) {
	base := func() manager.State {
		return manager.State{Settings: manager.Settings{Mode: manager.ModeFullAuto, BlueprintID: "bp", DonePhases: []string{"p0"}}, Phase: "p1",
			Ready: []string{"a", "b"}, Deps: map[string][]string{"b": {"x"}}, Open: 3,
			Runs: []manager.Run{{ID: "r1", TaskIDs: []string{"x"}, Status: "running"}}, Spend: manager.Spend{Tokens: 10}}
	}
	if !sameInput(base(), base()) {
		t.Fatal("equal inputs differ")
	}
	for name, change := range map[string]func(*manager.State){
		"ready order":    func(s *manager.State) { s.Ready = []string{"b", "a"} },
		"ready nil":      func(s *manager.State) { s.Ready = nil },
		"ready empty":    func(s *manager.State) { s.Ready = s.Ready[:0] },
		"a dependency":   func(s *manager.State) { s.Deps["b"] = []string{"y"} },
		"deps nil":       func(s *manager.State) { s.Deps = nil },
		"another dep":    func(s *manager.State) { s.Deps["a"] = []string{"x"} },
		"a run's status": func(s *manager.State) { s.Runs[0].Status = "completed" },
		"spend":          func(s *manager.State) { s.Spend.Tokens++ },
		"settings":       func(s *manager.State) { s.Settings.DonePhases = append(s.Settings.DonePhases, "p1") },
		"open":           func(s *manager.State) { s.Open-- },
		"phase done":     func(s *manager.State) { s.PhaseDone = true },
		"phase":          func(s *manager.State) { s.Phase = "p2" },
	} {
		b := base()
		change(&b)
		if sameInput(base(), b) || sameInput(b, base()) {
			t.Errorf("%s changed: still the same input", name)
		}
	}
	if sameInput(manager.State{}, manager.State{Ready: []string{}}) || sameInput(manager.State{}, manager.State{Deps: map[string][]string{}}) {
		t.Error("nil and empty: the same input")
	}
}
