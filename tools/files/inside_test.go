package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestInside: an acceptance file is looked up only inside the directory:
// a path out of it, absolute or through a link out of it, is an error and
// never says whether something exists there; a link inside is followed.
func TestInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	for _, f := range []string{filepath.Join(dir, "a.txt"), filepath.Join(dir, "sub", "b.txt"), filepath.Join(outside, "secret")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub", filepath.Join(dir, "in")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, filepath.Join(outside, "secret"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel       string
		present   bool
		wantError bool
	}{
		{"a.txt", true, false},
		{"sub/b.txt", true, false},
		{"in/b.txt", true, false},
		{"missing.txt", false, false},
		{filepath.ToSlash(rel), false, true},
		{filepath.Join(outside, "secret"), false, true},
		{"out/secret", false, true},
		{"", false, true},
	} {
		present, err := Inside(dir, tc.rel)
		if present != tc.present || (err != nil) != tc.wantError {
			t.Errorf("Inside(%q) = %v, %v; want %v, error %v", tc.rel, present, err, tc.present, tc.wantError)
		}
	}
}
