package autodrive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"
)

// Workspace fingerprint limits: the walk stops after fingerprintFiles
// files; files up to fingerprintFileBytes are hashed by content, larger
// ones by size and modification time.
const (
	fingerprintFiles     = 20000
	fingerprintFileBytes = 1 << 20
)

var skipDirs = map[string]bool{".git": true, "node_modules": true, ".hg": true, ".svn": true, "__pycache__": true, ".venv": true, "target": true}

// fileSig is what the fingerprint knows of one file.
type fileSig struct {
	size int64
	mod  time.Time
	sum  [sha256.Size]byte
}

// FPCache remembers file hashes between fingerprints, so that a file is
// read again only when its size or modification time changed. It belongs
// to whichever goroutine holds it (the thread hands it to the one
// fingerprint walk it runs at a time).
type FPCache map[string]fileSig

// WorkspaceFingerprint hashes the workspace tree: every path with its
// content. The same tree gives the same fingerprint. It returns the cache
// updated for the next call.
func WorkspaceFingerprint(ctx context.Context, root string, cache FPCache) (string, FPCache) {
	var paths []string
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || ctx.Err() != nil {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if p != root && skipDirs[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		if len(paths) >= fingerprintFiles {
			return filepath.SkipAll
		}
		paths = append(paths, p)
		return nil
	})
	sort.Strings(paths)
	next := make(FPCache, len(paths))
	h := sha256.New()
	for _, p := range paths {
		rel, _ := filepath.Rel(root, p)
		io.WriteString(h, rel+"\x00")
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		sig := fileSig{size: fi.Size(), mod: fi.ModTime()}
		switch old, ok := cache[p]; {
		case ok && old.size == sig.size && old.mod.Equal(sig.mod):
			sig.sum = old.sum
		case !fi.Mode().IsRegular() || fi.Size() > fingerprintFileBytes:
			sig.sum = sha256.Sum256([]byte(strconv.FormatInt(sig.size, 10) + "\x00" + sig.mod.UTC().String()))
		default:
			sig.sum = hashFile(p)
		}
		next[p] = sig
		h.Write(sig.sum[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:16], next
}

// hashFile is the SHA-256 of the regular file at p; of nothing when p is
// anything else by the time it is opened. Commands may still be running
// in the workspace while it is walked: a file swapped for a named pipe
// after the Lstat must not block the walk, nor one swapped for a link
// lead it out of the workspace.
func hashFile(p string) [sha256.Size]byte {
	h := sha256.New()
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err == nil {
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			io.Copy(h, io.LimitReader(f, fingerprintFileBytes))
		}
		f.Close()
	}
	var sum [sha256.Size]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
