package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTaskOverhead measures what the git layer costs a run per task:
// write a file, Commit it with the run's trailers, and FindCommit (what a
// replay asks). The worktree is made once; the repository holds 200 small
// files in 10 directories.
func BenchmarkTaskOverhead(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	testGit(b, dir, "init", "-q", "-b", "main")
	for d := range 10 {
		for f := range 20 {
			write(b, dir, fmt.Sprintf("pkg%d/f%d.go", d, f), fmt.Sprintf("package pkg%d\n\nconst n%d = %d\n", d, f, f))
		}
	}
	testGit(b, dir, "add", "-A")
	testGit(b, dir, "commit", "-q", "-m", "initial")
	r := open(b, dir)
	wt := filepath.Join(b.TempDir(), "wt")
	branch := BranchName("0192f3a4", "benchmark the task overhead")
	if err := r.AddWorktree(ctx, wt, branch, "main"); err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		i++
		task := fmt.Sprintf("t%d", i)
		if err := os.WriteFile(filepath.Join(wt, "pkg0", "f0.go"), []byte(fmt.Sprintf("package pkg0\n\nconst n0 = %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		trailers := []Trailer{{"Apserver-Run", "0192f3a4"}, {"Apserver-Task", task}}
		sha, err := Commit(ctx, wt, "task "+task, trailers)
		if err != nil {
			b.Fatal(err)
		}
		if got, ok, err := FindCommit(ctx, wt, trailers); err != nil || !ok || got != sha {
			b.Fatalf("FindCommit = %s, %v, %v; want %s", got, ok, err, sha)
		}
	}
}
