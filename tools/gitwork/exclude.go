package gitwork

import (
	"context"
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// ExcludeLocally adds paths (relative to dir, slash-separated) to the
// repository's own exclude file (info/exclude: never committed, never
// shared), unless they are there already. Git counts an excluded file as
// expendable, so a merge or checkout that brings in a file of that name
// replaces it instead of stopping on "untracked working tree files would
// be overwritten". The project brain excludes the projections it rewrites
// in the user's checkout (.apserver/memory.md, .apserver/snapshot.md). A
// dir outside any repository is left alone.
func ExcludeLocally(ctx context.Context, dir string, paths ...string) error {
	if _, err := Open(ctx, dir); errors.Is(err, ErrNotRepository) {
		return nil
	} else if err != nil {
		return err
	}
	file, err := git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
	if err != nil {
		return err
	}
	prefix, err := git(ctx, dir, "rev-parse", "--show-prefix")
	if err != nil {
		return err
	}
	old, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	have := strings.Split(string(old), "\n")
	var add []string
	for _, p := range paths {
		line := "/" + path.Join(prefix, p)
		if !slices.Contains(have, line) && !slices.Contains(add, line) {
			add = append(add, line)
		}
	}
	if len(add) == 0 {
		return nil
	}
	text := string(old)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "# the project brain's projections (apserver)\n" + strings.Join(add, "\n") + "\n"
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(text), 0o644)
}
