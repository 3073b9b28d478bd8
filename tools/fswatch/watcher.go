package fswatch

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// DefaultDebounce is the debounce window when New is given zero.
const DefaultDebounce = 200 * time.Millisecond

// ErrExists is returned by Watch when the watch id is already in use.
var ErrExists = errors.New("fswatch: watch id already in use")

// errClosed is returned by Watch after Close.
var errClosed = errors.New("fswatch: watcher closed")

// Watcher runs any number of watches, each with its own id. Its methods may
// be called from any goroutine, except from within onChange.
type Watcher struct {
	fsw      *fsnotify.Watcher
	debounce time.Duration
	onChange func(watchID string, paths []string)

	cmds chan command  // to the loop goroutine
	quit chan struct{} // closed by Close
	done chan struct{} // closed when the loop goroutine returns

	closeOnce sync.Once
	closeErr  error

	// The fields below are owned by the loop goroutine.

	// watches are the active watches, by id.
	watches map[string]*watch
	// dirs are the directories added to fsw; several watches may share one.
	dirs map[string]bool
	// timer fires at the end of the earliest debounce window.
	timer *time.Timer
}

// watch is one watched path. It is owned by the loop goroutine.
type watch struct {
	id   string
	root string // canonical absolute path
	// exists and isDir describe root when last looked at. A directory is
	// watched with all its subdirectories but .git ones; anything else
	// through anchor.
	exists, isDir bool
	// anchor is, unless isDir, the directory watched for changes to root:
	// its parent, or its nearest existing ancestor while it does not exist.
	anchor string
	// changed collects the paths to report at the end of the debounce
	// window, which ends at due (zero when changed is empty).
	changed map[string]bool
	due     time.Time
}

// command asks the loop goroutine to add (w != nil) or remove watch id.
type command struct {
	id    string
	w     *watch
	reply chan error // 1-buffered
}

// New starts a Watcher. onChange is called with the changed paths of a
// watch, absolute, deduplicated and sorted, at most once per debounce window
// (DefaultDebounce when debounce is zero) and watch. It is called from the
// Watcher's own goroutine, one call at a time, and holds up all watching
// while it runs: it must return quickly and must not call Watch, Unwatch or
// Close, which would deadlock.
func New(debounce time.Duration, onChange func(watchID string, paths []string)) (*Watcher, error) {
	if debounce <= 0 {
		debounce = DefaultDebounce
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("starting file watcher: %w", err)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	w := &Watcher{
		fsw:      fsw,
		debounce: debounce,
		onChange: onChange,
		cmds:     make(chan command),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		watches:  make(map[string]*watch),
		dirs:     make(map[string]bool),
		timer:    timer,
	}
	go w.loop()
	return w, nil
}

// Watch starts watch id on path, which must be absolute, and returns path in
// canonical form (clean, symlinks resolved as far as it exists); changed
// paths are reported below that form. The path need not exist. Watch returns
// ErrExists if id is in use.
func (w *Watcher) Watch(id, path string) (canonical string, err error) {
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("watching %q: path is not absolute", path)
	}
	root := canonicalPath(path)
	if err := w.send(command{id: id, w: &watch{id: id, root: root}}); err != nil {
		return "", fmt.Errorf("watching %s: %w", path, err)
	}
	return root, nil
}

// Unwatch stops watch id; an unknown id is ignored. Once Unwatch returns,
// onChange is not called for id again, changes not yet reported included.
func (w *Watcher) Unwatch(id string) {
	_ = w.send(command{id: id}) // errClosed: nothing is watched anyway
}

// Close stops all watches without reporting pending changes. It may be
// called more than once.
func (w *Watcher) Close() error {
	w.closeOnce.Do(func() {
		close(w.quit)
		<-w.done
		w.closeErr = w.fsw.Close()
	})
	return w.closeErr
}

// send hands c to the loop goroutine and waits for its answer.
func (w *Watcher) send(c command) error {
	c.reply = make(chan error, 1)
	select {
	case w.cmds <- c:
	case <-w.done:
		return errClosed
	}
	select {
	case err := <-c.reply:
		return err
	case <-w.done:
		return errClosed
	}
}

// loop owns all watch state: it serves commands, turns fsnotify events into
// changed paths and reports them when their debounce window ends.
func (w *Watcher) loop() {
	defer close(w.done)
	for {
		var due <-chan time.Time
		if next, ok := w.nextDue(); ok {
			w.timer.Reset(time.Until(next))
			due = w.timer.C
		} else {
			w.timer.Stop()
		}
		select {
		case <-w.quit:
			return
		case c := <-w.cmds:
			c.reply <- w.handle(c)
		case ev, ok := <-w.fsw.Events:
			if !ok {
				return
			}
			w.event(ev)
		case err, ok := <-w.fsw.Errors:
			if !ok {
				return
			}
			w.lost(err)
		case now := <-due:
			w.flush(now)
		}
	}
}

func (w *Watcher) handle(c command) error {
	if c.w == nil {
		delete(w.watches, c.id)
		w.release()
		return nil
	}
	if _, ok := w.watches[c.id]; ok {
		return ErrExists
	}
	w.watches[c.id] = c.w
	if err := w.sync(c.w, false); err != nil {
		delete(w.watches, c.id)
		w.release()
		return err
	}
	return nil
}

// event records what fsnotify reported.
func (w *Watcher) event(ev fsnotify.Event) {
	p := filepath.Clean(ev.Name)
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		w.forget(p)
	}
	for _, wt := range w.watches {
		switch {
		case p == wt.root || under(p, wt.root):
			// root itself, or a directory above it, changed.
			if err := w.sync(wt, true); err != nil {
				w.mark(wt, wt.root)
			}
			if p == wt.root {
				w.mark(wt, p)
			}
		case wt.isDir && under(wt.root, p):
			if inGit(wt.root, p) {
				continue
			}
			w.mark(wt, p)
			if !ev.Has(fsnotify.Create) {
				continue
			}
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				if err := w.addTree(wt, p, true); err != nil {
					w.mark(wt, wt.root)
				}
			}
		}
	}
}

// lost handles an fsnotify error, typically a queue overflow: events were
// dropped, so every watch reports its root and its tree is walked again to
// pick up new directories.
func (w *Watcher) lost(error) {
	for _, wt := range w.watches {
		_ = w.sync(wt, false)
		if wt.isDir {
			_ = w.addTree(wt, wt.root, false)
		}
		w.mark(wt, wt.root)
	}
}

// maxSyncTries bounds how often sync looks again at a path that keeps
// changing while it sets up watches.
const maxSyncTries = 100

// sync looks at wt.root again and watches what its state needs. If report
// is set and root appeared, disappeared or changed type, root is marked
// changed, and so is the content of a directory that appeared.
func (w *Watcher) sync(wt *watch, report bool) error {
	existed, wasDir, oldAnchor := wt.exists, wt.isDir, wt.anchor
	tries := 0
	defer func() {
		if wasDir != wt.isDir || oldAnchor != wt.anchor || tries > 1 {
			w.release()
		}
		if report && (existed != wt.exists || wasDir != wt.isDir) {
			w.mark(wt, wt.root)
		}
	}()
	for tries < maxSyncTries {
		tries++
		fi, err := os.Stat(wt.root)
		wt.exists = err == nil
		wt.isDir = err == nil && fi.IsDir()
		if wt.isDir {
			wt.anchor = ""
			if wasDir && w.dirs[wt.root] {
				return nil
			}
			return w.addTree(wt, wt.root, report)
		}
		anchor := filepath.Dir(wt.root)
		if !wt.exists {
			anchor = nearestDir(anchor)
		}
		err = w.addDir(anchor)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err == nil {
			wt.anchor = anchor
			if w.settled(wt) {
				return nil
			}
		}
		// The anchor vanished, or root or a directory on the way to it
		// appeared before the watch was in place: look again.
	}
	return fmt.Errorf("%s keeps changing", wt.root)
}

// settled reports whether wt, not a directory, still matches the file
// system now that its anchor is watched.
func (w *Watcher) settled(wt *watch) bool {
	fi, err := os.Stat(wt.root)
	if err == nil {
		return wt.exists && !fi.IsDir()
	}
	return !wt.exists && nearestDir(filepath.Dir(wt.root)) == wt.anchor
}

// addTree watches dir, inside wt's tree, and its subdirectories but .git
// ones. If report is set, it marks dir and everything in it but .git changed: files
// created before the watch was in place would otherwise go unreported.
// Directories that vanish or cannot be read meanwhile are skipped.
func (w *Watcher) addTree(wt *watch, dir string, report bool) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p != dir && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
				return nil
			}
			return err
		}
		if d.Name() == ".git" && p != wt.root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if err := w.addDir(p); err != nil {
				if p != dir && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission)) {
					return filepath.SkipDir
				}
				return err
			}
		}
		if report {
			w.mark(wt, p)
		}
		return nil
	})
}

// addDir has fsnotify watch directory dir.
func (w *Watcher) addDir(dir string) error {
	if w.dirs[dir] {
		return nil
	}
	if err := w.fsw.Add(dir); err != nil {
		return err
	}
	w.dirs[dir] = true
	return nil
}

// forget drops the fsnotify watches of p and below when p was a watched
// directory and has been removed or renamed: a renamed directory's watch
// would go on reporting under the old name.
func (w *Watcher) forget(p string) {
	if !w.dirs[p] {
		return
	}
	for d := range w.dirs {
		if d == p || under(p, d) {
			_ = w.fsw.Remove(d) // fails if inotify already dropped it
			delete(w.dirs, d)
		}
	}
}

// release drops the fsnotify watches no watch needs any longer.
func (w *Watcher) release() {
	for d := range w.dirs {
		if !w.needed(d) {
			_ = w.fsw.Remove(d)
			delete(w.dirs, d)
		}
	}
}

func (w *Watcher) needed(dir string) bool {
	for _, wt := range w.watches {
		if wt.isDir {
			if dir == wt.root || under(wt.root, dir) && !inGit(wt.root, dir) {
				return true
			}
		} else if dir == wt.anchor {
			return true
		}
	}
	return false
}

// mark records p as changed in wt, opening a debounce window if none is.
func (w *Watcher) mark(wt *watch, p string) {
	if wt.changed == nil {
		wt.changed = make(map[string]bool)
	}
	if len(wt.changed) == 0 {
		wt.due = time.Now().Add(w.debounce)
	}
	wt.changed[p] = true
}

// nextDue returns the end of the earliest open debounce window.
func (w *Watcher) nextDue() (time.Time, bool) {
	var next time.Time
	for _, wt := range w.watches {
		if len(wt.changed) > 0 && (next.IsZero() || wt.due.Before(next)) {
			next = wt.due
		}
	}
	return next, !next.IsZero()
}

// flush reports the watches whose debounce window has ended by now.
func (w *Watcher) flush(now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(w.watches)) {
		wt := w.watches[id]
		if len(wt.changed) == 0 || wt.due.After(now) {
			continue
		}
		paths := slices.Sorted(maps.Keys(wt.changed))
		clear(wt.changed)
		w.onChange(id, paths)
	}
}

// under reports whether p is strictly below dir.
func under(dir, p string) bool {
	if dir == "/" {
		return len(p) > 1 && p[0] == '/'
	}
	return len(p) > len(dir) && p[len(dir)] == '/' && strings.HasPrefix(p, dir)
}

// inGit reports whether p, below root, is a .git directory below root or
// inside one.
func inGit(root, p string) bool {
	rel := p
	if root != "/" {
		rel = p[len(root):]
	}
	return strings.Contains(rel+"/", "/.git/")
}

// nearestDir returns dir or its nearest ancestor that is a directory.
func nearestDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// canonicalPath cleans the absolute path and resolves symlinks in the part
// of it that exists.
func canonicalPath(path string) string {
	path = filepath.Clean(path)
	rest := ""
	for p := path; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
