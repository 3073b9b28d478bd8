// Package ownfile writes and reads the files apserver keeps in a
// project's checkout or a run's worktree (.apserver/memory.md,
// snapshot.md, a run's state.md and plan.md) from its own process,
// outside any sandbox. A repository can commit links in those places; a
// file is never written or read through one, so nothing outside root is
// touched or read in its name.
package ownfile

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Write sets the file at rel (slash-separated, under root) to data,
// unless it already holds it. No directory on the way may be a link (the
// missing ones are made); the data goes to a fresh temporary file,
// renamed into place, so a link at rel is replaced rather than followed.
func Write(root, rel string, data []byte) error {
	path := filepath.Join(root, filepath.FromSlash(rel))
	if old, ok := Read(root, rel); ok && string(old) == string(data) {
		return nil // unchanged: leave the file (and the checkout) alone
	}
	if err := dirs(root, rel, true); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// Read returns the file at rel under root when it is a regular file and
// no directory on the way is a link; ok is false otherwise.
func Read(root, rel string) (data []byte, ok bool) {
	if dirs(root, rel, false) != nil {
		return nil, false
	}
	path := filepath.Join(root, filepath.FromSlash(rel))
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	data, err = os.ReadFile(path)
	return data, err == nil
}

// dirs checks the directories between root and rel's file: none may be a
// link or other than a directory; a missing one is made when make is set,
// else an error.
func dirs(root, rel string, make bool) error {
	parts := strings.Split(path.Dir(rel), "/")
	at := root
	for _, p := range parts {
		if p == "." || p == "" {
			continue
		}
		if p == ".." {
			return fmt.Errorf("%s: leads outside %s", rel, root)
		}
		at = filepath.Join(at, p)
		fi, err := os.Lstat(at)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return fmt.Errorf("%s is not a directory of %s (a link?): not written", at, root)
		case os.IsNotExist(err) && make:
			if err := os.Mkdir(at, 0o755); err != nil {
				return err
			}
		default:
			return err
		}
	}
	return nil
}
