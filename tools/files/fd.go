package files

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirFlags opens a directory without following a symlink in its place.
const dirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// openDir opens the directory abs, which is root or below it, by walking down
// from root one component at a time without following symlinks, so a symlink
// swapped in after the path was resolved leads nowhere. With create set it
// makes missing directories (mode 0755 less umask) and returns the ones it
// made, in order, also when it fails part way.
func openDir(root, abs string, create bool) (dir *os.File, made []string, err error) {
	if !inside(root, abs) {
		return nil, nil, fmt.Errorf("%s is not under %s", abs, root)
	}
	fd, err := unix.Open(root, dirFlags&^unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: root, Err: err}
	}
	cur := root
	if abs != root {
		rel := strings.TrimPrefix(abs, root)
		for _, c := range strings.Split(strings.Trim(rel, string(filepath.Separator)), string(filepath.Separator)) {
			cur = filepath.Join(cur, c)
			next, err := unix.Openat(fd, c, dirFlags, 0)
			if errors.Is(err, unix.ENOENT) && create {
				err = unix.Mkdirat(fd, c, 0o755)
				if err == nil {
					made = append(made, cur)
				}
				if err == nil || errors.Is(err, unix.EEXIST) {
					next, err = unix.Openat(fd, c, dirFlags, 0)
				}
			}
			unix.Close(fd)
			if err != nil {
				return nil, made, dirError(cur, err)
			}
			fd = next
		}
	}
	return os.NewFile(uintptr(fd), abs), made, nil
}

// dirError describes a failure to open directory p on the way down.
func dirError(p string, err error) error {
	switch {
	case errors.Is(err, unix.ELOOP):
		return fmt.Errorf("%s became a symlink after the path was checked; file tools do not follow it: %w", p, err)
	case errors.Is(err, unix.ENOTDIR):
		return fmt.Errorf("%s is not a directory: %w", p, err)
	}
	return &os.PathError{Op: "open", Path: p, Err: err}
}

// openEntry opens abs, a resolved path under root, if it is a regular file or
// a directory, with no symlink followed below root.
func openEntry(root, abs string) (*os.File, fs.FileInfo, error) {
	if abs == root {
		f, _, err := openDir(root, abs, false)
		if err != nil {
			return nil, nil, err
		}
		fi, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, nil, err
		}
		return f, fi, nil
	}
	dir, _, err := openDir(root, filepath.Dir(abs), false)
	if err != nil {
		return nil, nil, err
	}
	defer dir.Close()
	return openAt(dir, filepath.Base(abs), abs)
}

// openAt opens name in dir for reading if it is a regular file or a directory.
// Anything else (symlink, named pipe, device, socket) is refused before it is
// opened, so a pipe cannot block and a device is never touched; path names the
// entry in errors.
func openAt(dir *os.File, name, path string) (*os.File, fs.FileInfo, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
	case unix.S_IFDIR:
		flags |= unix.O_DIRECTORY
	default:
		return nil, nil, fmt.Errorf("%s is %s, not a regular file", path, describeType(st.Mode))
	}
	fd, err := unix.Openat(int(dir.Fd()), name, flags, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if got, ok := fi.Sys().(*syscall.Stat_t); !ok || got.Ino != st.Ino || got.Dev != st.Dev {
		f.Close()
		return nil, nil, fmt.Errorf("%s was replaced while it was being opened", path)
	}
	return f, fi, nil
}

// errTooLarge reports a file over the size a tool handles.
var errTooLarge = errors.New("file too large")

// readLimited reads all of f, failing with errTooLarge past limit bytes.
func readLimited(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d MiB: %w", f.Name(), limit>>20, errTooLarge)
	}
	return data, nil
}

// owner is who should own a rewritten file; uid -1 leaves the creator.
type owner struct{ uid, gid int }

// writeTemp writes data to a new file with a random name in dir, with mode
// perm and owner o, synced to disk, and returns its name.
func writeTemp(dir *os.File, data []byte, perm uint32, o owner) (string, error) {
	dfd := int(dir.Fd())
	for range 5 {
		name := ".apserver-" + strings.ToLower(rand.Text()) + ".tmp"
		fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if errors.Is(err, unix.EEXIST) {
			continue
		}
		if err != nil {
			return "", &os.PathError{Op: "create", Path: filepath.Join(dir.Name(), name), Err: err}
		}
		f := os.NewFile(uintptr(fd), filepath.Join(dir.Name(), name))
		err = fill(f, data, perm, o)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = unix.Unlinkat(dfd, name, 0)
			return "", err
		}
		return name, nil
	}
	return "", fmt.Errorf("no free temporary file name in %s", dir.Name())
}

func fill(f *os.File, data []byte, perm uint32, o owner) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	fd := int(f.Fd())
	if o.uid >= 0 && (o.uid != os.Geteuid() || o.gid != os.Getegid()) {
		// Best effort, before the chmod (chown clears set-id bits): only a
		// privileged process may give a file away, and the content matters
		// more than the owner.
		_ = unix.Fchown(fd, o.uid, o.gid)
	}
	if err := unix.Fchmod(fd, perm); err != nil {
		return &os.PathError{Op: "chmod", Path: f.Name(), Err: err}
	}
	return f.Sync()
}

// renameNoReplace renames from to to, both in dir, failing if to exists.
func renameNoReplace(dir *os.File, from, to string) error {
	fd := int(dir.Fd())
	err := unix.Renameat2(fd, from, fd, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EOPNOTSUPP) {
		return wrapAt(dir, to, "rename", err)
	}
	// The filesystem cannot rename without replacing; a hard link fails in
	// the same way when the name is taken.
	if err := unix.Linkat(fd, from, fd, to, 0); err != nil {
		return wrapAt(dir, to, "link", err)
	}
	if err := unix.Unlinkat(fd, from, 0); err != nil {
		_ = unix.Unlinkat(fd, to, 0)
		return wrapAt(dir, from, "unlink", err)
	}
	return nil
}

// wrapAt turns the errno of op on name in dir into an *os.PathError; nil
// stays nil.
func wrapAt(dir *os.File, name, op string, err error) error {
	if err == nil {
		return nil
	}
	return &os.PathError{Op: op, Path: filepath.Join(dir.Name(), name), Err: err}
}

// describeType names the type of a file that is not regular, from its
// st_mode.
func describeType(mode uint32) string {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return "a symlink"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR, unix.S_IFBLK:
		return "a device"
	}
	return "a special file"
}
