package gitwork

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Push sends the branch to a bare remote, again without error, and never
// overwrites a commit someone else pushed.
func TestPush(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bare := filepath.Join(t.TempDir(), "origin.git")
	mustGit := func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out, err := exec.Command("git", "init", "-q", "--bare", bare).CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	mustGit(dir, "init", "-q", "-b", "main")
	mustGit(dir, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "one")
	if _, err := RemoteURL(ctx, dir, "origin"); !errors.Is(err, ErrNoRemote) {
		t.Fatalf("RemoteURL without origin: %v, want ErrNoRemote", err)
	}
	mustGit(dir, "remote", "add", "origin", bare)
	if u, err := RemoteURL(ctx, dir, "origin"); err != nil || u != bare {
		t.Fatalf("RemoteURL = %q, %v", u, err)
	}
	sha, err := Push(ctx, dir, "origin", "main")
	if err != nil || sha != mustGit(bare, "rev-parse", "refs/heads/main") {
		t.Fatalf("Push = %q, %v; remote has %s", sha, err, mustGit(bare, "rev-parse", "refs/heads/main"))
	}
	if again, err := Push(ctx, dir, "origin", "main"); err != nil || again != sha {
		t.Fatalf("Push again = %q, %v", again, err)
	}
	// A human pushes a commit on the branch from another clone.
	other := filepath.Join(t.TempDir(), "other")
	mustGit(filepath.Dir(other), "clone", "-q", "-b", "main", bare, other)
	mustGit(other, "-c", "user.name=h", "-c", "user.email=h@x", "commit", "-q", "--allow-empty", "-m", "human")
	mustGit(other, "push", "-q", "origin", "main")
	human := mustGit(bare, "rev-parse", "refs/heads/main")
	mustGit(dir, "-c", "user.name=t", "-c", "user.email=t@x", "commit", "-q", "--allow-empty", "-m", "two")
	if _, err := Push(ctx, dir, "origin", "main"); !errors.Is(err, ErrPushRejected) {
		t.Fatalf("Push over a human's commit: %v, want ErrPushRejected", err)
	}
	if got := mustGit(bare, "rev-parse", "refs/heads/main"); got != human {
		t.Errorf("the human's commit was overwritten: remote main is %s, want %s", got, human)
	}
}
