package files

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// Stamp identifies one version of a file, so that the session can tell
// whether a file changed since the agent last read or wrote it. The zero
// Stamp stands for a missing file.
type Stamp struct {
	exists bool
	size   int64
	mtime  time.Time
	sum    [sha256.Size]byte
}

// Stamp returns the current Stamp of the file at rel (relative to the
// workspace root, or absolute under a readable root): its size, modification
// time and SHA-256, or the missing-file Stamp if nothing is there.
func (w *Workspace) Stamp(rel string) (Stamp, error) {
	abs, err := w.ResolveRead(rel)
	if err != nil {
		return Stamp{}, err
	}
	f, fi, err := openEntry(within(w.readable, abs), abs)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return Stamp{}, nil
	}
	if err != nil {
		return Stamp{}, err
	}
	defer f.Close()
	if fi.IsDir() {
		return Stamp{}, fmt.Errorf("%s is a directory", rel)
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return Stamp{}, fmt.Errorf("reading %s: %w", rel, err)
	}
	s := Stamp{exists: true, size: fi.Size(), mtime: fi.ModTime()}
	h.Sum(s.sum[:0])
	return s, nil
}

// Same reports whether s and o stand for the same version of a file: both
// missing, or equal in size, modification time and content.
func (s Stamp) Same(o Stamp) bool {
	return s.exists == o.exists && s.size == o.size && s.mtime.Equal(o.mtime) && s.sum == o.sum
}
