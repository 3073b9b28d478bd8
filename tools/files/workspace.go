package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

const (
	// maxPathLen is the longest path accepted, as Linux's PATH_MAX.
	maxPathLen = 4096
	// maxNameLen is the longest path component accepted, as Linux's NAME_MAX.
	maxNameLen = 255
	// maxSymlinks is how many symlinks one resolution may follow, as Linux's
	// MAXSYMLINKS.
	maxSymlinks = 40
)

// Workspace confines file tools to a thread's working directory and the extra
// roots it was given. A Workspace never changes after NewWorkspace, so any
// goroutine may use it.
type Workspace struct {
	// root is the working directory with symlinks resolved; relative paths
	// are taken from here.
	root string
	// writable holds root and the extra writable roots, symlinks resolved.
	writable []string
	// readable holds writable and the extra readable roots, symlinks resolved.
	readable []string
}

// NewWorkspace returns a Workspace rooted at root (the thread's working
// directory, an absolute path). Tools may write under root and the writable
// roots, and read under those and the readable roots. Every root must be an
// existing directory given as an absolute path.
func NewWorkspace(root string, writable []string, readable []string) (*Workspace, error) {
	realRoot, err := realDir(root)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	w := &Workspace{root: realRoot, writable: []string{realRoot}}
	for _, r := range writable {
		d, err := realDir(r)
		if err != nil {
			return nil, fmt.Errorf("writable root: %w", err)
		}
		w.writable = append(w.writable, d)
	}
	w.readable = append(w.readable, w.writable...)
	for _, r := range readable {
		d, err := realDir(r)
		if err != nil {
			return nil, fmt.Errorf("readable root: %w", err)
		}
		w.readable = append(w.readable, d)
	}
	return w, nil
}

// realDir returns dir with symlinks resolved, checking that it is an absolute
// path to a directory.
func realDir(dir string) (string, error) {
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("%q is not an absolute path", dir)
	}
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(d)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", dir)
	}
	return d, nil
}

// PathError reports a path that a tool may not use, and why.
type PathError struct {
	// Path is the path as it was asked for.
	Path string
	// Reason says why it was refused.
	Reason string
}

func (e *PathError) Error() string {
	return fmt.Sprintf("path %q refused: %s", e.Path, e.Reason)
}

// ResolveRead returns the absolute path, with symlinks resolved, that p (an
// absolute path or one relative to the workspace root) names, or a
// *PathError if it lies outside the readable roots. The path need not exist.
func (w *Workspace) ResolveRead(p string) (string, error) {
	_, abs, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	if within(w.readable, abs) == "" {
		return "", &PathError{Path: p, Reason: fmt.Sprintf("it resolves to %s, which is outside the workspace and the readable roots", abs)}
	}
	return abs, nil
}

// ResolveWrite is ResolveRead for a file that is about to be created,
// replaced or deleted. Beyond staying inside the writable roots, the path must
// not be in a protected directory (ProtectedDirs), and if it exists it must
// be a regular file with a single link (a hard link would carry the write to a
// name outside the workspace).
func (w *Workspace) ResolveWrite(p string) (string, error) {
	asked, abs, err := w.resolve(p)
	if err != nil {
		return "", err
	}
	for _, q := range []string{asked, abs} {
		if d := protectedDir(q); d != "" {
			return "", &PathError{Path: p, Reason: fmt.Sprintf("it is inside a %s directory, which file tools may not write (%s)", d, ProtectedDirs[d])}
		}
	}
	root := within(w.writable, abs)
	if root == "" {
		return "", &PathError{Path: p, Reason: fmt.Sprintf("it resolves to %s, which is outside the writable roots", abs)}
	}
	if abs == root {
		return "", &PathError{Path: p, Reason: "it is a workspace root directory, not a file"}
	}
	fi, err := os.Lstat(abs)
	switch {
	case err == nil:
		if reason := unwritable(fi); reason != "" {
			return "", &PathError{Path: p, Reason: reason}
		}
	case errors.Is(err, syscall.ENOTDIR):
		return "", &PathError{Path: p, Reason: "one of its parent directories is a file"}
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("checking %s: %w", p, err)
	}
	return abs, nil
}

// unwritable says why an existing file may not be written, or "" if it may.
func unwritable(fi fs.FileInfo) string {
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !ok:
		return "its type cannot be checked"
	case fi.IsDir():
		return "it is a directory"
	case !fi.Mode().IsRegular():
		return "it is " + describeType(st.Mode) + ", not a regular file"
	case st.Nlink > 1:
		return fmt.Sprintf("it has %d hard links; writing it could change a file outside the workspace", st.Nlink)
	}
	return ""
}

// ProtectedDirs are the directory names that file tools never write into, at
// any depth and in any letter case (a case-insensitive file system would
// reach the same directory), with why.
var ProtectedDirs = map[string]string{
	".git":      "git runs hooks from there and reads its config",
	".apserver": "it holds the project's apserver config and command rules, which only the user may change",
}

// protectedDir returns the name of the protected directory (see
// ProtectedDirs) that the clean path p is in, or "".
func protectedDir(p string) string {
	for _, c := range strings.Split(p, string(filepath.Separator)) {
		for d := range ProtectedDirs {
			if strings.EqualFold(c, d) {
				return d
			}
		}
	}
	return ""
}

// resolve returns p made absolute and clean (asked), and the path the kernel
// would reach through it (abs): every symlink on the way is followed,
// including a final one and one whose target does not exist; from the first
// component that does not exist the rest is taken as written.
func (w *Workspace) resolve(p string) (asked, abs string, err error) {
	switch {
	case p == "":
		return "", "", &PathError{Path: p, Reason: "the path is empty"}
	case strings.IndexByte(p, 0) >= 0:
		return "", "", &PathError{Path: p, Reason: "it contains a NUL byte"}
	case len(p) > maxPathLen:
		return "", "", &PathError{Path: p, Reason: fmt.Sprintf("it is longer than %d bytes", maxPathLen)}
	case strings.HasPrefix(p, "~"):
		return "", "", &PathError{Path: p, Reason: "~ is not expanded; give a path relative to the workspace root or an absolute path (write ./~name for a file named ~name)"}
	}
	asked = p
	if !filepath.IsAbs(asked) {
		asked = filepath.Join(w.root, asked)
	}
	asked = filepath.Clean(asked)
	for _, c := range strings.Split(asked, string(filepath.Separator)) {
		if len(c) > maxNameLen {
			return "", "", &PathError{Path: p, Reason: fmt.Sprintf("a component is longer than %d bytes", maxNameLen)}
		}
	}
	abs, err = followLinks(asked)
	if err != nil {
		return "", "", &PathError{Path: p, Reason: err.Error()}
	}
	return asked, abs, nil
}

// followLinks resolves the absolute clean path p one component at a time.
func followLinks(p string) (string, error) {
	sep := string(filepath.Separator)
	done := sep
	rest := strings.Split(strings.TrimPrefix(p, sep), sep)
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			done = filepath.Dir(done)
			continue
		}
		next := filepath.Join(done, c)
		fi, err := os.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return filepath.Join(append([]string{next}, rest...)...), nil
		}
		if err != nil {
			return "", fmt.Errorf("cannot resolve it: %w", err)
		}
		if fi.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if links++; links > maxSymlinks {
			return "", errors.New("it goes through too many symlinks")
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", fmt.Errorf("cannot resolve it: %w", err)
		}
		if filepath.IsAbs(target) {
			done = sep
		}
		rest = append(strings.Split(target, sep), rest...)
	}
	return done, nil
}

// within returns the longest of roots that contains p, or "" if none does.
func within(roots []string, p string) string {
	best := ""
	for _, r := range roots {
		if inside(r, p) && len(r) > len(best) {
			best = r
		}
	}
	return best
}

// inside reports whether p is dir or below it; both are clean and absolute.
func inside(dir, p string) bool {
	if p == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(p, dir+string(filepath.Separator))
}

// display returns how tool output names abs: relative to the workspace root
// in slash form, or absolute for a path under another root.
func (w *Workspace) display(abs string) string {
	if !inside(w.root, abs) {
		return filepath.ToSlash(abs)
	}
	rel, err := filepath.Rel(w.root, abs)
	if err != nil {
		return filepath.ToSlash(abs)
	}
	return filepath.ToSlash(rel)
}
