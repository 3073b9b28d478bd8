package gitwork

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two runs off one main: the first lands, the second catches up with a
// merge commit (its conflict on a shared file mended by the callback) and
// then fast-forwards.
func TestCatchUpThenFastForward(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	_, b1 := runBranch(t, r, "one", map[string]string{"one.txt": "1\n", "notes.md": "# notes\none\n"})
	wt2, b2 := runBranch(t, r, "two", map[string]string{"two.txt": "2\n", "notes.md": "# notes\ntwo\n"})
	if _, err := r.Merge(ctx, "main", b1, MergeFastForward, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Merge(ctx, "main", b2, MergeFastForward, ""); !errors.Is(err, ErrNotFastForward) {
		t.Fatalf("Merge of the second branch = %v, want ErrNotFastForward", err)
	}
	var mended []string
	mend := func(path string, theirs []byte) ([]byte, bool) {
		mended = append(mended, path)
		return append(theirs, "two\n"...), path == "notes.md"
	}
	verified := false
	verify := func(context.Context) error {
		verified = read(t, wt2, "one.txt") == "1\n"
		return nil
	}
	changed, err := CatchUp(ctx, wt2, "main", "catch up", []Trailer{{"Apserver-Step", "catch-up"}}, mend, verify)
	if err != nil || !changed {
		t.Fatalf("CatchUp = %v, %v; want true, nil", changed, err)
	}
	if strings.Join(mended, ",") != "notes.md" || !verified {
		t.Errorf("mended %v, verified %v; want notes.md mended, the merged tree verified", mended, verified)
	}
	if got := read(t, wt2, "notes.md"); got != "# notes\none\ntwo\n" {
		t.Errorf("notes.md = %q", got)
	}
	// Repeated: the branch contains main, nothing to do.
	if changed, err := CatchUp(ctx, wt2, "main", "catch up", nil, mend, nil); err != nil || changed {
		t.Errorf("CatchUp again = %v, %v; want false, nil", changed, err)
	}
	sha, err := r.Merge(ctx, "main", b2, MergeFastForward, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, err := testGitErr(dir, "cat-file", "-e", sha+":"+f); err != nil {
			t.Errorf("main lacks %s after both merges", f)
		}
	}
}

// A conflict that the callback cannot mend, or a failing verify, leaves
// the branch as it was, with no merge in progress.
func TestCatchUpRefused(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r := open(t, dir)
	_, b1 := runBranch(t, r, "one", map[string]string{"same.txt": "one\n", "x.txt": "x\n"})
	wt2, _ := runBranch(t, r, "two", map[string]string{"same.txt": "two\n"})
	wt3, _ := runBranch(t, r, "three", map[string]string{"y.txt": "y\n"})
	if _, err := r.Merge(ctx, "main", b1, MergeFastForward, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		wt     string
		verify func(context.Context) error
		want   string
	}{
		{wt2, nil, "merge conflict in same.txt"},
		{wt3, func(context.Context) error { return errors.New("check failed") }, "check failed"},
	} {
		head := testGit(t, c.wt, "rev-parse", "HEAD")
		_, err := CatchUp(ctx, c.wt, "main", "", nil, func(string, []byte) ([]byte, bool) { return nil, false }, c.verify)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CatchUp in %s = %v, want an error with %q", filepath.Base(c.wt), err, c.want)
		}
		if got := testGit(t, c.wt, "rev-parse", "HEAD"); got != head {
			t.Errorf("HEAD moved to %s", got)
		}
		if st := testGit(t, c.wt, "status", "--porcelain"); st != "" {
			t.Errorf("work tree left with %q", st)
		}
		gd := testGit(t, c.wt, "rev-parse", "--absolute-git-dir")
		if _, err := os.Stat(filepath.Join(gd, "MERGE_HEAD")); err == nil {
			t.Errorf("a merge is left in progress")
		}
	}
}
