package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

func TestManagerStore(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, filepath.Join(t.TempDir(), "m.db"))
	if _, ok, err := s.ProjectSettings(ctx, "/ws"); ok || err != nil {
		t.Fatalf("ProjectSettings of a new workspace = %v, %v", ok, err)
	}
	for _, v := range []string{`{"mode":"off"}`, `{"mode":"full_auto"}`} {
		if err := s.SaveProjectSettings(ctx, "/ws", json.RawMessage(v)); err != nil {
			t.Fatal(err)
		}
	}
	if b, ok, err := s.ProjectSettings(ctx, "/ws"); !ok || err != nil || string(b) != `{"mode":"full_auto"}` {
		t.Fatalf("ProjectSettings = %s, %v, %v", b, ok, err)
	}
	for i := 0; i < 3; i++ {
		tk, err := s.AppendManagerTick(ctx, ManagerTick{Cwd: "/ws", Input: json.RawMessage(`{}`), Decision: json.RawMessage(`{"result":"idle"}`), Result: "idle"})
		if err != nil || tk.Seq != int64(i+1) {
			t.Fatalf("AppendManagerTick = %+v, %v", tk, err)
		}
	}
	ticks, err := s.ManagerTicks(ctx, "/ws", 2)
	if err != nil || len(ticks) != 2 || ticks[0].Seq != 2 || ticks[1].Seq != 3 {
		t.Fatalf("ManagerTicks = %+v, %v", ticks, err)
	}
	if err := s.ClaimTask(ctx, ManagerClaim{BlueprintID: "bp", TaskID: "t1", Cwd: "/ws"}); err != nil {
		t.Fatal(err)
	}
	if err := s.ClaimTask(ctx, ManagerClaim{BlueprintID: "bp", TaskID: "t1", Cwd: "/ws"}); !errors.Is(err, ErrClaimed) {
		t.Fatalf("claiming twice: %v, want ErrClaimed", err)
	}
	if err := s.SetClaimRun(ctx, "bp", "t1", "r1"); err != nil {
		t.Fatal(err)
	}
	cs, err := s.ManagerClaims(ctx, "/ws")
	if err != nil || len(cs) != 1 || cs[0].RunID != "r1" {
		t.Fatalf("ManagerClaims = %+v, %v", cs, err)
	}
}
