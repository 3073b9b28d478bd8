package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apserver/apserver/model/scripted"
)

// TestRevertAfterDirReplacedBySymlink: a sandboxed command replaces a
// tracked directory with a symlink to a directory outside the workspace,
// and a file with a directory; thread/revert puts the workspace back
// exactly (the directory and its files, the file, no symlink) and never
// writes through the symlink.
func TestRevertAfterDirReplacedBySymlink(t *testing.T) {
	t.Parallel()
	model := startModel(t, scripted.Rule{Match: "swap", Steps: []scripted.Step{
		{ToolCalls: []scripted.ToolCall{{Command: "rm -rf sub && ln -s ../outside sub && rm f.txt && mkdir -p f.txt/x && echo in > f.txt/x/y"}}},
		{Text: "swapped"},
	}})
	c := newClient(t, model, options{inProcess: true})
	base := t.TempDir()
	cwd, outside := filepath.Join(base, "ws"), filepath.Join(base, "outside")
	for p, s := range map[string]string{
		"ws/sub/a.txt":       "a\n",
		"ws/sub/deep/b.txt":  "b\n",
		"ws/f.txt":           "file\n",
		"outside/secret.txt": "secret\n",
	} {
		p = filepath.Join(base, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before, outsideBefore := treeHash(t, cwd), treeHash(t, outside)
	threadID := c.startThreadIn(cwd, "never")
	_, done := c.runTurn(threadID, "swap the directory")
	if fi, err := os.Lstat(filepath.Join(cwd, "sub")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the command did not replace sub with a symlink: %v, %v\n%s", fi, err, c.dump(0))
	}
	r := c.call("thread/revert", map[string]any{"threadId": threadID, "beforeTurnId": done.str("turn.id")})
	c.waitAfter(r, "thread/reverted", func(m *message) bool { return m.str("threadId") == threadID })
	if fi, err := os.Lstat(filepath.Join(cwd, "sub")); err != nil || !fi.IsDir() {
		t.Errorf("sub after revert: %v, %v; want a directory", fi, err)
	}
	if got := treeHash(t, cwd); got != before {
		t.Errorf("the workspace differs from before the turn after revert")
	}
	if got := treeHash(t, outside); got != outsideBefore {
		t.Errorf("the revert changed the directory the symlink pointed to")
	}
}
