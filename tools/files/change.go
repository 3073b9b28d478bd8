package files

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// Kinds of Change.
const (
	KindAdd    = "add"
	KindUpdate = "update"
	KindDelete = "delete"
)

// maxFileSize is the largest file the tools read whole to edit or commit.
const maxFileSize = 16 << 20

// newFilePerm is the mode of files a Change adds.
const newFilePerm = 0o644

// Change is one proposed change to a file, shown to the user before Commit
// writes it.
type Change struct {
	// Kind is KindAdd, KindUpdate or KindDelete.
	Kind string
	// Path names the file: relative to the workspace root in slash form, or
	// absolute for a file under another writable root.
	Path string
	// MoveTo, for an update, names where the file ends up; empty if it stays.
	MoveTo string
	// Old is the file's content when the change was made (nil for an add);
	// Commit refuses the change if the file no longer has it.
	Old []byte
	// New is the content to write (nil for a delete).
	New []byte
	// Diff shows the change: the new content for an add, the old content for
	// a delete, and unified-diff hunks without file headers for an update.
	Diff string
}

// Commit writes changes, all or none. It checks every path again with
// ResolveWrite and that each file still holds Change.Old (and that a file to
// add or a move's destination does not exist yet) before writing anything.
// Then it writes each new content to a temporary file in its target's
// directory, creating directories as needed, and renames the files into
// place; if any step fails it undoes the earlier ones, restoring old content,
// removing added files and created directories, and undoing moves. Updated
// files keep their mode; added files get 0644.
func (w *Workspace) Commit(changes []Change) error {
	steps, err := w.check(changes)
	defer closeSteps(steps)
	if err != nil {
		return fmt.Errorf("%w; no change was written", err)
	}
	var t txn
	if err := t.run(steps); err != nil {
		if rerr := t.rollback(steps); rerr != nil {
			return fmt.Errorf("%w; undoing the changes already made also failed, so some may remain: %w", err, rerr)
		}
		return fmt.Errorf("%w; no change was written", err)
	}
	return nil
}

// place is a file's location: the writable root it is under, its resolved
// path, and (once opened) its directory.
type place struct {
	root string
	abs  string
	dir  *os.File
}

func (p place) name() string { return filepath.Base(p.abs) }

// step is one Change on its way to disk.
type step struct {
	c Change
	// src is the file at c.Path; dst is where c.New goes: src, or c.MoveTo's
	// place for a move. A delete has no dst.
	src, dst place
	// old is src's content as checked; perm and own are what the new file
	// gets.
	old  []byte
	perm uint32
	own  owner
	// tmp names the temporary file in dst.dir holding c.New until it is
	// renamed into place.
	tmp string
	// placed is set once c.New is at dst, removed once a delete or move has
	// removed src.
	placed, removed bool
}

func (s *step) moves() bool { return s.c.Kind == KindUpdate && s.dst.abs != s.src.abs }

func (s *step) label() string {
	if s.c.MoveTo != "" {
		return fmt.Sprintf("%s %q -> %q", s.c.Kind, s.c.Path, s.c.MoveTo)
	}
	return fmt.Sprintf("%s %q", s.c.Kind, s.c.Path)
}

func closeSteps(steps []*step) {
	for _, s := range steps {
		if s.src.dir != nil {
			s.src.dir.Close()
		}
		if s.dst.dir != nil && s.dst.dir != s.src.dir {
			s.dst.dir.Close()
		}
	}
}

// check resolves and verifies every change without changing anything. It
// returns the steps made so far even on failure, for closeSteps.
func (w *Workspace) check(changes []Change) ([]*step, error) {
	steps := make([]*step, 0, len(changes))
	claimed := make(map[string]bool)
	for _, c := range changes {
		s := &step{c: c, perm: newFilePerm, own: owner{uid: -1, gid: -1}}
		steps = append(steps, s)
		if err := w.checkStep(s, claimed); err != nil {
			return steps, fmt.Errorf("%s: %w", s.label(), err)
		}
	}
	return steps, nil
}

func (w *Workspace) checkStep(s *step, claimed map[string]bool) error {
	var err error
	if s.src, err = w.place(s.c.Path); err != nil {
		return err
	}
	if err := w.claim(claimed, s.src.abs); err != nil {
		return err
	}
	switch s.c.Kind {
	case KindAdd:
		if s.c.MoveTo != "" {
			return errors.New("an add cannot move a file")
		}
		if err := absent(s.src.abs); err != nil {
			return err
		}
		s.dst = s.src
		return nil
	case KindUpdate, KindDelete:
		if s.c.Kind == KindDelete && s.c.MoveTo != "" {
			return errors.New("a delete cannot move a file")
		}
	default:
		return fmt.Errorf("unknown change kind %q", s.c.Kind)
	}
	if s.src.dir, _, err = openDir(s.src.root, filepath.Dir(s.src.abs), false); err != nil {
		return err
	}
	f, fi, err := openAt(s.src.dir, s.src.name(), s.src.abs)
	if errors.Is(err, fs.ErrNotExist) {
		return errors.New("the file no longer exists")
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if reason := unwritable(fi); reason != "" {
		return errors.New(reason)
	}
	if s.old, err = readLimited(f, maxFileSize); err != nil {
		return err
	}
	if !bytes.Equal(s.old, s.c.Old) {
		return errors.New("the file has changed since this change was made; read it again and redo the change")
	}
	st := fi.Sys().(*syscall.Stat_t)
	s.perm = st.Mode & 0o7777
	s.own = owner{uid: int(st.Uid), gid: int(st.Gid)}
	if s.c.Kind == KindDelete {
		return nil
	}
	s.dst = s.src
	if s.c.MoveTo == "" {
		return nil
	}
	dst, err := w.place(s.c.MoveTo)
	if err != nil {
		return err
	}
	if dst.abs == s.src.abs {
		return nil
	}
	if err := w.claim(claimed, dst.abs); err != nil {
		return err
	}
	if err := absent(dst.abs); err != nil {
		return fmt.Errorf("destination %s: %w", s.c.MoveTo, err)
	}
	s.dst = dst
	return nil
}

// place resolves a Change path for writing.
func (w *Workspace) place(p string) (place, error) {
	abs, err := w.ResolveWrite(filepath.FromSlash(p))
	if err != nil {
		return place{}, err
	}
	return place{root: within(w.writable, abs), abs: abs}, nil
}

// claim records that a change touches abs, failing if another one does.
func (w *Workspace) claim(claimed map[string]bool, abs string) error {
	if claimed[abs] {
		return fmt.Errorf("another change in this commit also touches %s", w.display(abs))
	}
	claimed[abs] = true
	return nil
}

// absent checks that nothing exists at abs.
func absent(abs string) error {
	_, err := os.Lstat(abs)
	switch {
	case err == nil:
		return errors.New("the file already exists")
	case errors.Is(err, fs.ErrNotExist):
		return nil
	}
	return err
}

// madeDir is a directory Commit created, to be removed on rollback.
type madeDir struct{ root, abs string }

// txn records what a commit has done so far.
type txn struct {
	made []madeDir
	// applied counts the steps whose rename or unlink was attempted.
	applied int
}

// run writes the temporary files (making directories as needed), then moves
// them into place and removes deleted files. Until the second phase only new
// directories and temporary files exist.
func (t *txn) run(steps []*step) error {
	for _, s := range steps {
		if s.c.Kind == KindDelete {
			continue
		}
		if s.dst.dir == nil {
			dir, made, err := openDir(s.dst.root, filepath.Dir(s.dst.abs), true)
			for _, m := range made {
				t.made = append(t.made, madeDir{root: s.dst.root, abs: m})
			}
			if err != nil {
				return fmt.Errorf("%s: %w", s.label(), err)
			}
			s.dst.dir = dir
		}
		tmp, err := writeTemp(s.dst.dir, s.c.New, s.perm, s.own)
		if err != nil {
			return fmt.Errorf("%s: %w", s.label(), err)
		}
		s.tmp = tmp
	}
	for _, s := range steps {
		t.applied++
		if err := s.apply(); err != nil {
			return fmt.Errorf("%s: %w", s.label(), err)
		}
	}
	return nil
}

func (s *step) apply() error {
	if s.c.Kind != KindDelete {
		var err error
		if s.c.Kind == KindUpdate && !s.moves() {
			fd := int(s.dst.dir.Fd())
			err = wrapAt(s.dst.dir, s.dst.name(), "rename", unix.Renameat(fd, s.tmp, fd, s.dst.name()))
		} else {
			err = renameNoReplace(s.dst.dir, s.tmp, s.dst.name())
		}
		if err != nil {
			return err
		}
		s.tmp, s.placed = "", true
	}
	if s.c.Kind == KindDelete || s.moves() {
		if err := unix.Unlinkat(int(s.src.dir.Fd()), s.src.name(), 0); err != nil {
			return wrapAt(s.src.dir, s.src.name(), "unlink", err)
		}
		s.removed = true
	}
	return nil
}

// rollback undoes the applied steps in reverse, then removes the temporary
// files and the directories the commit made.
func (t *txn) rollback(steps []*step) error {
	var errs []error
	for i := t.applied - 1; i >= 0; i-- {
		s := steps[i]
		if s.placed && (s.c.Kind == KindAdd || s.moves()) {
			if err := unix.Unlinkat(int(s.dst.dir.Fd()), s.dst.name(), 0); err != nil {
				errs = append(errs, wrapAt(s.dst.dir, s.dst.name(), "unlink", err))
			}
		}
		if s.removed || (s.placed && s.c.Kind == KindUpdate && !s.moves()) {
			if err := restore(s.src, s.old, s.perm, s.own); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, s := range steps {
		if s.tmp != "" {
			if err := unix.Unlinkat(int(s.dst.dir.Fd()), s.tmp, 0); err != nil {
				errs = append(errs, wrapAt(s.dst.dir, s.tmp, "unlink", err))
			}
		}
	}
	for i := len(t.made) - 1; i >= 0; i-- {
		if err := removeDir(t.made[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// restore puts content back at p, replacing whatever is there.
func restore(p place, content []byte, perm uint32, o owner) error {
	tmp, err := writeTemp(p.dir, content, perm, o)
	if err != nil {
		return fmt.Errorf("restoring %s: %w", p.abs, err)
	}
	fd := int(p.dir.Fd())
	if err := unix.Renameat(fd, tmp, fd, p.name()); err != nil {
		_ = unix.Unlinkat(fd, tmp, 0)
		return fmt.Errorf("restoring %s: %w", p.abs, err)
	}
	return nil
}

func removeDir(m madeDir) error {
	parent, _, err := openDir(m.root, filepath.Dir(m.abs), false)
	if err != nil {
		return fmt.Errorf("removing directory %s: %w", m.abs, err)
	}
	defer parent.Close()
	return wrapAt(parent, filepath.Base(m.abs), "rmdir", unix.Unlinkat(int(parent.Fd()), filepath.Base(m.abs), unix.AT_REMOVEDIR))
}
