package store

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
)

func TestReceipts(t *testing.T) {
	s := openTest(t, "")
	mkThread(t, s, Thread{ID: "a"})
	mkThread(t, s, Thread{ID: "b"})
	if got, err := s.Receipts(ctx, "a"); err != nil || len(got) != 0 {
		t.Fatalf("Receipts(a) on a new thread = %v, %v; want none", got, err)
	}
	if _, err := s.Receipts(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Receipts(nope) = %v, want ErrNotFound", err)
	}
	in := json.RawMessage(`{"turn":{"turnId":"t1"}}`)
	out := json.RawMessage(`{"action":"continue"}`)
	for i, r := range []Receipt{{ID: "r1", Override: "userTurn"}, {ID: "r2", Executed: true}} {
		id := r.ID
		r.ThreadID, r.Kind, r.TurnID, r.Input, r.Output, r.PolicyHash = "a", ReceiptDecision, "t1", in, out, "h"
		r, err := s.AppendReceipt(ctx, r)
		if err != nil {
			t.Fatalf("AppendReceipt(%s): %v", id, err)
		}
		if r.Seq != i+1 || r.CreatedAt == 0 {
			t.Errorf("AppendReceipt(%s) = seq %d created %d, want seq %d and a time", id, r.Seq, r.CreatedAt, i+1)
		}
	}
	if r, err := s.AppendReceipt(ctx, Receipt{ThreadID: "b", ID: "r3", Kind: ReceiptApproval, Input: in, Output: out}); err != nil || r.Seq != 1 {
		t.Errorf("AppendReceipt(b/r3) = seq %d, %v; want seq 1 (per thread)", r.Seq, err)
	}
	tests := []struct {
		name string
		r    Receipt
		want error
	}{
		{"duplicate id", Receipt{ThreadID: "a", ID: "r1", Kind: ReceiptDecision, Input: in, Output: out}, ErrDuplicate},
		{"missing thread", Receipt{ThreadID: "zz", ID: "r9", Kind: ReceiptDecision, Input: in, Output: out}, ErrNotFound},
	}
	for _, tc := range tests {
		if _, err := s.AppendReceipt(ctx, tc.r); !errors.Is(err, tc.want) {
			t.Errorf("%s: AppendReceipt = %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := s.AppendReceipt(ctx, Receipt{ThreadID: "a", ID: "r8", Kind: ReceiptDecision, Input: json.RawMessage(`{`), Output: out}); err == nil {
		t.Error("AppendReceipt with invalid JSON input succeeded")
	}
	got, err := s.Receipts(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "r1" || got[1].ID != "r2" {
		t.Fatalf("Receipts(a) = %+v, want r1, r2", got)
	}
	if got[0].Executed || got[0].Override != "userTurn" || !got[1].Executed || got[1].PolicyHash != "h" {
		t.Errorf("Receipts(a) outcomes = %+v", got)
	}
	if string(got[0].Input) != string(in) || string(got[0].Output) != string(out) || got[0].Kind != ReceiptDecision || got[0].TurnID != "t1" {
		t.Errorf("Receipts(a)[0] = %+v, want the stored input and output", got[0])
	}
}

func TestRunsAndPendingRequests(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	mkThread(t, s, Thread{ID: "a"})
	mkThread(t, s, Thread{ID: "b"})
	if _, err := s.GetDrive(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetDrive(a) = %v, want ErrNotFound", err)
	}
	if err := s.PutDrive(ctx, Drive{ThreadID: "a", State: "running", Data: json.RawMessage(`{"n":1}`), UpdatedAt: 5}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDrive(ctx, Drive{ThreadID: "a", State: "paused", Data: json.RawMessage(`{"n":2}`), UpdatedAt: 6}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDrive(ctx, Drive{ThreadID: "b", State: "stopped", Data: json.RawMessage(`{}`), UpdatedAt: 7}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutDrive(ctx, Drive{ThreadID: "zz", State: "running", Data: json.RawMessage(`{}`)}); !errors.Is(err, ErrNotFound) {
		t.Errorf("PutDrive(zz) = %v, want ErrNotFound", err)
	}
	if r, err := s.GetDrive(ctx, "a"); err != nil || r.State != "paused" || string(r.Data) != `{"n":2}` || r.UpdatedAt != 6 {
		t.Errorf("GetDrive(a) = %+v, %v; want the replaced run", r, err)
	}
	if rs, err := s.Drives(ctx, "running", "paused"); err != nil || len(rs) != 1 || rs[0].ThreadID != "a" {
		t.Errorf("Runs(running, paused) = %+v, %v; want a only", rs, err)
	}
	if rs, err := s.Drives(ctx); err != nil || len(rs) != 2 {
		t.Errorf("Runs() = %+v, %v; want both", rs, err)
	}

	p := PendingRequest{ThreadID: "a", RequestID: 3, Method: "item/commandExecution/requestApproval",
		Params: json.RawMessage(`{"itemId":"c1"}`), Resume: json.RawMessage(`{"command":"ls"}`)}
	if err := s.PutPendingRequest(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.PutPendingRequest(ctx, PendingRequest{ThreadID: "b", RequestID: 1, Method: "m", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutHiddenInput(ctx, "a", "t2", "continue please"); err != nil {
		t.Fatal(err)
	}
	s.Close()

	// Everything survives a reopen.
	s = openTest(t, path)
	ps, err := s.PendingRequests(ctx, "")
	if err != nil || len(ps) != 2 || ps[0].RequestID != 1 || ps[1].RequestID != 3 {
		t.Fatalf("PendingRequests() = %+v, %v; want ids 1, 3", ps, err)
	}
	if got := ps[1]; got.Method != p.Method || string(got.Params) != string(p.Params) || string(got.Resume) != string(p.Resume) || got.CreatedAt == 0 {
		t.Errorf("PendingRequests()[1] = %+v, want %+v", got, p)
	}
	if ps[0].Resume != nil {
		t.Errorf("pending request without resume data: Resume = %s, want nil", ps[0].Resume)
	}
	if err := s.DeletePendingRequest(ctx, "a", 3); err != nil {
		t.Fatal(err)
	}
	if ps, err := s.PendingRequests(ctx, "a"); err != nil || len(ps) != 0 {
		t.Errorf("PendingRequests(a) after delete = %+v, %v; want none", ps, err)
	}
	if h, err := s.HiddenInputs(ctx, "a"); err != nil || h["t2"] != "continue please" || len(h) != 1 {
		t.Errorf("HiddenInputs(a) = %v, %v", h, err)
	}
	if err := s.DeleteDrive(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetDrive(ctx, "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetDrive(a) after DeleteDrive = %v, want ErrNotFound", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	s := openTest(t, path)
	mkThread(t, s, Thread{ID: "a"})
	in := json.RawMessage(`{}`)
	if _, err := s.AppendReceipt(ctx, Receipt{ThreadID: "a", ID: "r1", Kind: ReceiptDecision, Input: in, Output: in}); err != nil {
		t.Fatal(err)
	}
	// Read-only while the writer is still open, as apserver replay is.
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if rs, err := ro.Receipts(ctx, "a"); err != nil || len(rs) != 1 || rs[0].ID != "r1" {
		t.Errorf("Receipts through the read-only store = %+v, %v", rs, err)
	}
	if _, err := ro.AppendReceipt(ctx, Receipt{ThreadID: "a", ID: "r2", Kind: ReceiptDecision, Input: in, Output: in}); err == nil {
		t.Error("AppendReceipt through the read-only store succeeded")
	}
	if _, err := OpenReadOnly(filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("OpenReadOnly of a missing file succeeded")
	}
}

// A fork copies the hidden inputs of the turns it copies, and only those.
func TestForkCopiesHiddenInputs(t *testing.T) {
	s := openTest(t, filepath.Join(t.TempDir(), FileName))
	mkThread(t, s, Thread{ID: "src"})
	for _, id := range []string{"t1", "t2"} {
		if _, err := s.StartTurn(ctx, Turn{ThreadID: "src", ID: id, Status: "inProgress", StartedAt: 1}); err != nil {
			t.Fatal(err)
		}
		if err := s.FinishTurn(ctx, Turn{ThreadID: "src", ID: id, Status: "completed", StartedAt: 1, CompletedAt: 2}); err != nil {
			t.Fatal(err)
		}
		if err := s.PutHiddenInput(ctx, "src", id, "continue "+id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Fork(ctx, "src", Thread{ID: "dst", CreatedAt: 3, UpdatedAt: 3}, "t1"); err != nil {
		t.Fatal(err)
	}
	if h, err := s.HiddenInputs(ctx, "dst"); err != nil || len(h) != 1 || h["t1"] != "continue t1" {
		t.Errorf("HiddenInputs(dst) = %v, %v; want t1's only", h, err)
	}
}
