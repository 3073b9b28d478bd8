package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Defaults for the zero Options fields.
const (
	DefaultMaxFileBytes = 10 << 20
	DefaultMaxSnapshots = 200
)

// DefaultGCLooseObjects is how many loose objects Prune lets accumulate
// before it repacks the store and deletes unreachable objects.
const DefaultGCLooseObjects = 1000

// Options tune a Store. The zero value is ready to use.
type Options struct {
	// MaxFileBytes is the size above which a regular file is left out of a
	// snapshot and listed in Snapshot.Skipped. Zero means DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxSnapshots is how many snapshots of the workspace are kept; older
	// ones are dropped. Zero means DefaultMaxSnapshots.
	MaxSnapshots int
	// GCLooseObjects is how many loose objects Prune lets accumulate before
	// it runs git gc. Zero means DefaultGCLooseObjects.
	GCLooseObjects int
	// Git is the git executable. Empty means "git" on PATH.
	Git string
}

// Snapshot identifies one recorded state of the workspace.
type Snapshot struct {
	// ID is the snapshot's commit in the store.
	ID string
	// Tree is the commit's tree.
	Tree string
	// Skipped lists, sorted, the workspace-relative paths of files left out
	// because they were larger than Options.MaxFileBytes.
	Skipped []string
}

// Store holds the snapshots of one workspace. Its methods may be called from
// any goroutine; they run one at a time.
type Store struct {
	gitPath      string
	workspace    string // absolute
	root         string // dataDir/checkpoints
	dir          string // the store's GIT_DIR, in root
	env          []string
	maxFileBytes int64
	maxSnapshots int
	gcLoose      int // Options.GCLooseObjects

	// sem is held, by whichever goroutine is operating on the store, as a
	// 1-buffered channel so that waiting for it honours ctx.
	sem chan struct{}
}

// Open opens the snapshot store of workspace under dataDir, creating it on
// first use. workspace must be an existing directory.
func Open(ctx context.Context, dataDir, workspace string, opt Options) (*Store, error) {
	ws, err := filepath.Abs(workspace)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoints of %s: %w", workspace, err)
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoints of %s: %w", ws, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("opening checkpoints of %s: not a directory", ws)
	}
	data, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("opening checkpoints of %s: %w", ws, err)
	}
	sum := sha256.Sum256([]byte(ws))
	root := filepath.Join(data, "checkpoints")
	s := &Store{
		gitPath:      opt.Git,
		workspace:    ws,
		root:         root,
		dir:          filepath.Join(root, hex.EncodeToString(sum[:])[:16]+".git"),
		env:          gitEnv(),
		maxFileBytes: opt.MaxFileBytes,
		maxSnapshots: opt.MaxSnapshots,
		gcLoose:      opt.GCLooseObjects,
		sem:          make(chan struct{}, 1),
	}
	if s.gitPath == "" {
		s.gitPath = "git"
	}
	if s.maxFileBytes <= 0 {
		s.maxFileBytes = DefaultMaxFileBytes
	}
	if s.maxSnapshots <= 0 {
		s.maxSnapshots = DefaultMaxSnapshots
	}
	if s.gcLoose <= 0 {
		s.gcLoose = DefaultGCLooseObjects
	}
	if err := s.create(ctx); err != nil {
		return nil, fmt.Errorf("creating checkpoint store for %s: %w", ws, err)
	}
	return s, nil
}

// storeAttributes turns off every conversion between blobs and files, so
// that snapshots are byte-exact whatever the workspace's .gitattributes say.
const storeAttributes = "* -text -crlf -eol -ident -filter -working-tree-encoding\n"

// create initialises the store unless it exists. It builds the repository
// in a temporary directory and renames it into place, so a concurrent Open
// in another process never sees half a store.
func (s *Store) create(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dir, "HEAD")); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(s.root, ".init-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if _, err := s.run(ctx, gitCall{gitDir: tmp}, "init", "--bare", "--quiet", "--template=", "--initial-branch=snapshots"); err != nil {
		return err
	}
	info := filepath.Join(tmp, "info")
	if err := os.Mkdir(info, 0o700); err != nil {
		return err
	}
	exclude := ".git\n"
	if rel, err := filepath.Rel(s.workspace, s.root); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
		// The data directory is inside the workspace: never snapshot the
		// snapshots.
		exclude += "/" + escapeGlob(filepath.ToSlash(rel)) + "/\n"
	}
	if err := os.WriteFile(filepath.Join(info, "exclude"), []byte(exclude), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(info, "attributes"), []byte(storeAttributes), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.dir); err != nil {
		if _, statErr := os.Stat(filepath.Join(s.dir, "HEAD")); statErr == nil {
			return nil // another process created it first
		}
		return err
	}
	return nil
}

// escapeGlob quotes the characters special in a gitignore pattern.
func escapeGlob(p string) string {
	var b strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`\*?[ `, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// lock serialises operations on the store, within the process and with
// other processes, and returns the function that ends the operation.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "apserver.lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		<-s.sem
		return nil, fmt.Errorf("locking checkpoint store: %w", err)
	}
	release := func() {
		f.Close() // releases the flock
		<-s.sem
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			release()
			return nil, fmt.Errorf("locking checkpoint store: %w", err)
		}
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			release()
			return nil, ctx.Err()
		}
	}
	// Holding the lock, nothing else runs git on the store: an index lock
	// left by a git that was killed is stale.
	if err := os.Remove(filepath.Join(s.dir, "index.lock")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		release()
		return nil, fmt.Errorf("removing stale index lock: %w", err)
	}
	return release, nil
}

// objectID matches a full SHA-1 or SHA-256 object name.
var objectID = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)

func checkIDs(ids ...string) error {
	for _, id := range ids {
		if !objectID.MatchString(id) {
			return fmt.Errorf("invalid snapshot id %q", id)
		}
	}
	return nil
}

// Diff returns what `git diff from to` prints for two snapshots: git's
// default patch format, paths relative to the workspace with a/ and b/
// prefixes, renames detected, binary files as "Binary files ... differ".
func (s *Store) Diff(ctx context.Context, from, to string) (string, error) {
	if err := checkIDs(from, to); err != nil {
		return "", err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return "", err
	}
	defer unlock()
	out, err := s.inStore(ctx, nil, "diff", "--no-color", "--no-ext-diff", from, to, "--")
	if err != nil {
		return "", fmt.Errorf("diffing snapshots %s and %s: %w", from, to, err)
	}
	return string(out), nil
}

// Changed returns the sorted workspace-relative paths that differ between
// two snapshots: added, deleted, modified, or changed in mode or type. A
// rename is its old and its new path.
func (s *Store) Changed(ctx context.Context, from, to string) ([]string, error) {
	if err := checkIDs(from, to); err != nil {
		return nil, err
	}
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	out, err := s.inStore(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-only", from, to)
	if err != nil {
		return nil, fmt.Errorf("listing changes between snapshots %s and %s: %w", from, to, err)
	}
	paths := splitZ(out)
	slices.Sort(paths)
	return paths, nil
}
