package gitwork

import (
	"context"
	"strings"
	"testing"
)

// TestGitErrorsHideURLCredentials: a remote URL with a token in it never
// reaches an error's text, which runs put in their state and logs.
func TestGitErrorsHideURLCredentials(t *testing.T) {
	dir := t.TempDir()
	if _, err := git(context.Background(), dir, "init", "-q"); err != nil {
		t.Fatal(err)
	}
	_, err := git(context.Background(), dir, "ls-remote", "https://x-access-token:ghp_SECRET123@127.0.0.1:1/acme/app.git")
	if err == nil {
		t.Fatal("ls-remote of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "ghp_SECRET123") {
		t.Errorf("the error shows the token: %v", err)
	}
	if !strings.Contains(err.Error(), "https://***@127.0.0.1:1/acme/app.git") {
		t.Errorf("the error no longer names the remote: %v", err)
	}
}
