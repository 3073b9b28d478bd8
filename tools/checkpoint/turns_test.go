package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

func TestPlanRevert(t *testing.T) {
	ids := []string{"t1", "t2", "t3", "t4"}
	for _, tc := range []struct {
		name string
		recs map[string]Turn
		from int
		want RevertPlan
	}{
		{"no tools ran", map[string]Turn{}, 1, RevertPlan{}},
		{"first tool turn's start, latest end", map[string]Turn{"t1": {Start: "s1", End: "e1"}, "t3": {Start: "s3", End: "e3"}, "t4": {Start: "s4"}}, 1,
			RevertPlan{Target: "s3", LastEnd: "e3"}},
		{"the turn itself", map[string]Turn{"t2": {Start: "s2", End: "e2"}, "t4": {Start: "s4", End: "e4"}}, 1, RevertPlan{Target: "s2", LastEnd: "e4"}},
		{"missing before a snapshot", map[string]Turn{"t2": {Missing: true}, "t3": {Start: "s3"}}, 1, RevertPlan{Missing: "t2"}},
		{"missing after the target", map[string]Turn{"t2": {Start: "s2", End: "e2"}, "t3": {Missing: true}}, 1, RevertPlan{Target: "s2", LastEnd: "e2"}},
		{"turns before from are not read", map[string]Turn{"t1": {Start: "s1", End: "e1"}}, 1, RevertPlan{}},
	} {
		got := PlanRevert(ids, tc.from, func(id string) (Turn, bool) { r, ok := tc.recs[id]; return r, ok })
		if got != tc.want {
			t.Errorf("%s: PlanRevert = %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestRevertRefusesOutsideChanges: a file changed since the agent's last
// snapshot stops the revert, with the file named, and nothing is
// restored; force restores anyway.
func TestRevertRefusesOutsideChanges(t *testing.T) {
	ws := t.TempDir()
	write(t, ws, "a.txt", "one")
	s := open(t, ws, Options{})
	start := snapshot(t, s, "start")
	write(t, ws, "a.txt", "agent")
	end := snapshot(t, s, "end")
	write(t, ws, "b.txt", "user")
	plan := RevertPlan{Target: start.ID, LastEnd: end.ID}
	_, err := s.Revert(context.Background(), plan, false)
	var outside *ChangedOutsideError
	if !errors.As(err, &outside) || !reflect.DeepEqual(outside.Paths, []string{"b.txt"}) {
		t.Fatalf("Revert over an outside change = %v, want ChangedOutsideError naming b.txt", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "agent" {
		t.Fatalf("a refused revert changed a.txt to %q", b)
	}
	paths, err := s.Revert(context.Background(), plan, true)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(paths, []string{"a.txt", "b.txt"}) {
		t.Errorf("forced Revert restored %v, want [a.txt b.txt]", paths)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(b) != "one" {
		t.Errorf("after the forced revert a.txt = %q, want one", b)
	}
}

// TestStoresOpenOnce: concurrent opens of one workspace share one store;
// without a data dir every open fails.
func TestStoresOpenOnce(t *testing.T) {
	ws := t.TempDir()
	ss := NewStores(context.Background(), t.TempDir(), Options{})
	var wg sync.WaitGroup
	got := make([]*Store, 4)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := ss.Open(context.Background(), ws)
			if err != nil {
				t.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	for _, s := range got[1:] {
		if s == nil || s != got[0] {
			t.Fatalf("opens of one workspace gave %v, want one store", got)
		}
	}
	if _, err := NewStores(context.Background(), "", Options{}).Open(context.Background(), ws); err == nil {
		t.Error("Open without a data dir succeeded")
	}
}
