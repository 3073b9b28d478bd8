package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apserver/apserver/protocol"
)

// Inside reports whether rel, a slash-separated path that a plan names (a
// task's acceptance file), exists in dir. It is looked up through an
// os.Root of dir: a path out of dir, or through a link out of it, is an
// error and is never looked at, so that a model's plan cannot learn what
// exists outside the worktree.
func Inside(dir, rel string) (bool, error) {
	if !protocol.LocalFile(rel) {
		return false, errors.New("not a path inside the worktree")
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false, err
	}
	defer root.Close()
	_, err = root.Stat(filepath.FromSlash(rel))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	default:
		return false, fmt.Errorf("not looked at: %v", err)
	}
}
