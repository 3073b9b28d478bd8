package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Restore makes the work tree match snapshot target for every path in target
// or in snapshot current (normally the latest snapshot): files of target that
// differ in the work tree, in content, mode or type, are written back; files
// of current that target lacks are deleted, and directories they leave empty
// removed. A path whose type changed (a directory that became a symlink or a
// file, or the reverse) is put back as it was: the symlink or file is removed,
// never followed, and the directory and its files written again. Files in
// neither snapshot, such as ignored files, are left alone,
// and so are files target left out for their size. Restore returns the sorted
// workspace-relative paths it wrote or deleted.
//
// Before changing anything, Restore checks that no file outside both
// snapshots is in the way of a file it must write (as a parent that is a file,
// or inside a directory where the file goes); if one is, it changes nothing
// and returns an error. The user's index and HEAD are never involved.
func (s *Store) Restore(ctx context.Context, target, current string) ([]string, error) {
	if err := checkIDs(target, current); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	changed, err := s.restore(ctx, target, current)
	if err != nil {
		return changed, fmt.Errorf("restoring snapshot %s: %w", target, err)
	}
	return changed, nil
}

func (s *Store) restore(ctx context.Context, target, current string) ([]string, error) {
	tsnap, err := s.commit(ctx, target)
	if err != nil {
		return nil, err
	}
	inTarget, err := s.tracked(ctx, target)
	if err != nil {
		return nil, err
	}
	inCurrent, err := s.tracked(ctx, current)
	if err != nil {
		return nil, err
	}
	for _, p := range tsnap.Skipped {
		inTarget[p] = true
	}

	del := make(map[string]bool)
	for p := range inCurrent {
		if inTarget[p] {
			continue
		}
		if s.belowNonDir(p) {
			continue // a parent became a file or a symlink: p is gone
		}
		if fi, err := os.Lstat(s.abs(p)); err == nil && !fi.IsDir() {
			del[p] = true
		}
	}

	// Find the files of target that differ in the work tree: an index of
	// target, with the stat data of the store's index wherever the content
	// is the same, refreshed against the work tree.
	index := filepath.Join(s.dir, "index.restore")
	defer os.Remove(index)
	if err := copyFile(filepath.Join(s.dir, "index"), index); err != nil {
		return nil, err
	}
	c := gitCall{workTree: s.workspace, index: index}
	if _, err := s.run(ctx, c, "read-tree", "-m", target); err != nil {
		return nil, err
	}
	if _, err := s.run(ctx, c, "update-index", "-q", "--refresh"); err != nil {
		return nil, err
	}
	out, err := s.run(ctx, c, "diff-files", "-z", "--name-only")
	if err != nil {
		return nil, err
	}
	write := splitZ(out)

	if err := s.checkInTheWay(write, del); err != nil {
		return nil, err
	}

	var changed []string
	for _, p := range slices.Sorted(maps.Keys(del)) {
		if err := os.Remove(s.abs(p)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return changed, err
		}
		changed = append(changed, p)
		s.removeEmptyParents(p)
	}
	if len(write) > 0 {
		c.stdin = joinZ(write)
		if _, err := s.run(ctx, c, "checkout-index", "-f", "-z", "--stdin"); err != nil {
			return changed, err
		}
	}
	changed = append(changed, write...)
	slices.Sort(changed)
	return changed, nil
}

// tracked returns the paths of the files in snapshot id.
func (s *Store) tracked(ctx context.Context, id string) (map[string]bool, error) {
	out, err := s.inStore(ctx, nil, "ls-tree", "-r", "-z", "--full-tree", "--name-only", id)
	if err != nil {
		return nil, err
	}
	paths := make(map[string]bool)
	for _, p := range splitZ(out) {
		paths[p] = true
	}
	return paths, nil
}

// checkInTheWay reports an error if writing the files write would clobber a
// file that is not going to be deleted anyway.
func (s *Store) checkInTheWay(write []string, del map[string]bool) error {
	for _, p := range write {
		// A parent that is not a directory.
		for i := range len(p) {
			if p[i] != '/' {
				continue
			}
			parent := p[:i]
			fi, err := os.Lstat(s.abs(parent))
			if err != nil {
				break // created when writing p
			}
			if fi.IsDir() {
				continue
			}
			if !del[parent] {
				return fmt.Errorf("cannot write %s: %s is in the way", p, parent)
			}
			break
		}
		// A directory where p goes, with files that stay.
		fi, err := os.Lstat(s.abs(p))
		if err != nil || !fi.IsDir() {
			continue
		}
		err = filepath.WalkDir(s.abs(p), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(s.workspace, path)
			if err != nil {
				return err
			}
			if !del[filepath.ToSlash(rel)] {
				return fmt.Errorf("cannot write %s: %s is in the way", p, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// removeEmptyParents removes the directories above p that are now empty, up
// to the workspace.
func (s *Store) removeEmptyParents(p string) {
	for dir := filepath.Dir(p); dir != "." && dir != "/"; dir = filepath.Dir(dir) {
		if os.Remove(s.abs(dir)) != nil {
			return // not empty, or gone
		}
	}
}

// abs is the absolute path of the workspace-relative path p.
func (s *Store) abs(p string) string {
	return filepath.Join(s.workspace, filepath.FromSlash(p))
}

// copyFile copies src to dst; a missing src makes dst missing too.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Remove(dst); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}

// belowNonDir reports whether a parent of p in the work tree exists and is not
// a directory (a file, or a symlink that must not be followed).
func (s *Store) belowNonDir(p string) bool { return s.nonDirParent(p) != "" }

// nonDirParent returns the nearest-to-the-root parent of p in the work tree
// that exists and is not a directory, or "" if there is none.
func (s *Store) nonDirParent(p string) string {
	for i := range len(p) {
		if p[i] != '/' {
			continue
		}
		fi, err := os.Lstat(s.abs(p[:i]))
		if err != nil {
			return ""
		}
		if !fi.IsDir() {
			return p[:i]
		}
	}
	return ""
}
