package gitwork

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
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
	cpu0 := childCPU()
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
	// The CPU time of the git processes, which a loaded machine does not
	// stretch the way it does the wall time.
	b.ReportMetric(float64((childCPU()-cpu0).Microseconds())/1000/float64(i), "git-cpu-ms/op")
}

// childCPU is the user and system time of this process's waited-for
// children.
func childCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
