package filechange

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apserver/apserver/tools/files"
)

// workspace is a workspace holding name → contents.
func workspace(t *testing.T, contents map[string]string) (*files.Workspace, string) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range contents {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ws, err := files.NewWorkspace(dir, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ws, dir
}

func TestFromPatch(t *testing.T) {
	ws, dir := workspace(t, map[string]string{"a.txt": "one\ntwo\n", "gone.txt": "bye\n", "old/name.txt": "x\n"})
	changes, err := FromPatch(ws, `*** Begin Patch
*** Add File: new.txt
+hello
*** Update File: a.txt
@@
 one
-two
+three
*** Delete File: gone.txt
*** Update File: old/name.txt
*** Move to: new/name.txt
@@
-x
+y
*** End Patch`)
	if err != nil {
		t.Fatalf("FromPatch: %v", err)
	}
	type change struct{ kind, path, moveTo, diff string }
	var got []change
	for _, c := range changes {
		got = append(got, change{c.Kind, c.Path, c.MoveTo, c.Diff})
	}
	want := []change{
		{"add", "new.txt", "", "hello\n"},
		{"update", "a.txt", "", "@@ -1,2 +1,2 @@\n one\n-two\n+three\n"},
		{"delete", "gone.txt", "", "bye\n"},
		{"update", "old/name.txt", "new/name.txt", "@@ -1 +1 @@\n-x\n+y\n"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("FromPatch changes =\n%q\nwant\n%q", got, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(data) != "one\ntwo\n" {
		t.Errorf("FromPatch wrote a.txt: %q", data)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("FromPatch created new.txt")
	}
	if got := Paths(changes); !slices.Equal(got, []string{"new.txt", "a.txt", "gone.txt", "old/name.txt", "new/name.txt"}) {
		t.Errorf("Paths = %q", got)
	}
	if got := Summary(changes); got != "Success. Updated the following files:\nA new.txt\nM a.txt\nD gone.txt\nM old/name.txt -> new/name.txt\n" {
		t.Errorf("Summary = %q", got)
	}
	item := Item(changes)
	if len(item) != 4 || item[0].Kind.Type != "add" || item[0].Diff != "hello\n" || item[0].Kind.MovePath != nil ||
		item[3].Kind.MovePath == nil || *item[3].Kind.MovePath != "new/name.txt" || item[3].Path != "old/name.txt" {
		t.Errorf("Item = %+v", item)
	}
}

func TestFromPatchErrors(t *testing.T) {
	ws, _ := workspace(t, map[string]string{"a.txt": "one\n"})
	tests := []struct{ patch, want string }{
		{"not a patch", "the patch is malformed, nothing was changed: "},
		{"*** Begin Patch\n*** Update File: a.txt\n@@\n-two\n+three\n*** End Patch", "the patch does not apply, nothing was changed: "},
		{"*** Begin Patch\n*** Update File: ../outside.txt\n@@\n-x\n+y\n*** End Patch", "the patch does not apply, nothing was changed: "},
	}
	for _, tc := range tests {
		if _, err := FromPatch(ws, tc.patch); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("FromPatch(%q) = %v, want an error starting %q", tc.patch, err, tc.want)
		}
	}
}

// TestFromPatchReadsAsEditFileDoes: a patch's old text is read the way
// edit_file reads it (files.Workspace.ReadForWrite), so a file past the
// file tools' size limit is refused by name rather than read into memory
// whole.
func TestFromPatchReadsAsEditFileDoes(t *testing.T) {
	ws, dir := workspace(t, map[string]string{})
	big, err := os.Create(filepath.Join(dir, "big.log"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(17 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	big.Close()
	_, err = FromPatch(ws, "*** Begin Patch\n*** Update File: big.log\n@@\n-x\n+y\n*** End Patch")
	if err == nil || !strings.Contains(err.Error(), "big.log is over 16 MiB") {
		t.Errorf("a patch of a 17 MiB file: %v, want it refused for its size", err)
	}
}

func TestDiff(t *testing.T) {
	tests := []struct {
		c    files.Change
		want string
	}{
		{files.Change{Kind: "add", New: []byte("new\n")}, "new\n"},
		{files.Change{Kind: "delete", Old: []byte("old\n")}, "old\n"},
		{files.Change{Kind: "update", Old: []byte("a\n"), New: []byte("b\n")}, "@@ -1 +1 @@\n-a\n+b\n"},
		{files.Change{Kind: "update", Old: []byte("a\n"), New: []byte("a\n")}, ""},
	}
	for _, tc := range tests {
		if got := Diff(tc.c); got != tc.want {
			t.Errorf("Diff(%s %q → %q) = %q, want %q", tc.c.Kind, tc.c.Old, tc.c.New, got, tc.want)
		}
	}
}

// TestStamps: a file the agent read or wrote is stale once someone else
// changes (or removes) it, and not after the agent's own change is
// recorded or the stamps refreshed.
func TestStamps(t *testing.T) {
	ws, dir := workspace(t, map[string]string{"a.txt": "one\n", "b.txt": "two\n"})
	s := Stamps{}
	changes := []files.Change{{Kind: "update", Path: "b.txt"}, {Kind: "update", Path: "a.txt"}, {Kind: "add", Path: "unseen.txt"}}
	s.Record(ws, changes[:2])
	if got := s.Stale(ws, changes); len(got) != 0 {
		t.Errorf("Stale right after Record = %q, want none", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("edited elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "b.txt")); err != nil {
		t.Fatal(err)
	}
	if got := s.Stale(ws, changes); !slices.Equal(got, []string{"a.txt", "b.txt"}) {
		t.Errorf("Stale after outside edits = %q, want a.txt and b.txt, sorted", got)
	}
	s.Refresh(ws)
	if got := s.Stale(ws, changes); len(got) != 0 {
		t.Errorf("Stale after Refresh = %q, want none", got)
	}
	moved := []files.Change{{Kind: "update", Path: "a.txt", MoveTo: "c.txt"}}
	if err := os.WriteFile(filepath.Join(dir, "c.txt"), []byte("moved\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Record(ws, moved)
	if _, ok := s["c.txt"]; !ok {
		t.Error("Record did not stamp a move's destination")
	}
}
