package checkpoint

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// refPrefix is where snapshot refs live; the ref name's last element is a
// zero-padded sequence number, so refname order is age order.
const refPrefix = "refs/apserver/snapshots/"

// skippedTrailer starts a line of a snapshot's commit message naming, quoted,
// a file left out for its size.
const skippedTrailer = "apserver-skipped: "

// Snapshot records the current state of the workspace under label and
// returns it. When nothing changed since the latest snapshot, it returns that
// snapshot again and records nothing. Snapshots beyond Options.MaxSnapshots
// are dropped, oldest first.
func (s *Store) Snapshot(ctx context.Context, label string) (Snapshot, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	defer unlock()
	snap, err := s.snapshot(ctx, label)
	if err != nil {
		return Snapshot{}, fmt.Errorf("snapshotting %s: %w", s.workspace, err)
	}
	return snap, nil
}

func (s *Store) snapshot(ctx context.Context, label string) (Snapshot, error) {
	skipped, err := s.stage(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	out, err := s.inStore(ctx, nil, "write-tree")
	if err != nil {
		return Snapshot{}, err
	}
	tree := strings.TrimSpace(string(out))
	refs, err := s.refs(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	args := []string{"commit-tree", tree, "-F", "-"}
	var seq uint64
	if len(refs) > 0 {
		last := refs[len(refs)-1]
		prev, err := s.commit(ctx, last.id)
		if err != nil {
			return Snapshot{}, err
		}
		if prev.Tree == tree && slices.Equal(prev.Skipped, skipped) {
			return prev, nil
		}
		args = append(args, "-p", last.id)
		seq = last.seq
	}
	out, err = s.inStore(ctx, message(label, skipped), args...)
	if err != nil {
		return Snapshot{}, err
	}
	id := strings.TrimSpace(string(out))
	ref := fmt.Sprintf("%s%020d", refPrefix, seq+1)
	if _, err := s.inStore(ctx, nil, "update-ref", ref, id, ""); err != nil {
		return Snapshot{}, err
	}
	if err := s.trim(ctx, append(refs, snapshotRef{name: ref, id: id, seq: seq + 1})); err != nil {
		return Snapshot{}, err
	}
	return Snapshot{ID: id, Tree: tree, Skipped: skipped}, nil
}

// stage makes the store's index match the work tree and returns the files
// left out for their size. The index's stat data makes this cheap: git only
// hashes files whose size, times or inode changed.
func (s *Store) stage(ctx context.Context) (skipped []string, err error) {
	out, err := s.inStore(ctx, nil, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range splitZ(out) {
		if !strings.HasSuffix(p, "/") {
			paths = append(paths, p)
			continue
		}
		// A nested repository nothing of which is staged yet: git would
		// make it a gitlink, so list its files ourselves. Once some are
		// staged, ls-files descends into it like any directory.
		files, err := s.listNested(ctx, p)
		if err != nil {
			return nil, err
		}
		paths = append(paths, files...)
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)

	// A path whose parent is now a file or a symlink (a command replaced a
	// directory) is gone: git refuses to look beyond a symlink, so drop it
	// from the index first and stage what replaced the parent instead.
	var gone, add []string
	seen := make(map[string]string) // directory → its nonDirParent result
	for _, p := range paths {
		dir := pathDir(p)
		parent, ok := seen[dir]
		if !ok {
			parent = s.nonDirParent(p)
			seen[dir] = parent
		}
		if parent != "" {
			gone = append(gone, p)
			add = append(add, parent)
		}
	}
	if len(gone) > 0 {
		if _, err := s.inStore(ctx, joinZ(gone), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return nil, err
		}
		paths = slices.DeleteFunc(paths, func(p string) bool { _, found := slices.BinarySearch(gone, p); return found })
		paths = append(paths, add...)
		slices.Sort(paths)
		paths = slices.Compact(paths)
		add = nil
	}
	for _, p := range paths {
		fi, err := os.Lstat(filepath.Join(s.workspace, p))
		if err == nil && fi.Mode().IsRegular() && fi.Size() > s.maxFileBytes {
			skipped = append(skipped, p)
			continue
		}
		add = append(add, p) // missing files are removed by --remove
	}
	if _, err := s.inStore(ctx, joinZ(add), "update-index", "-z", "--add", "--remove", "--replace", "--stdin"); err != nil {
		return nil, err
	}
	if len(skipped) > 0 {
		if _, err := s.inStore(ctx, joinZ(skipped), "update-index", "-z", "--force-remove", "--stdin"); err != nil {
			return nil, err
		}
	}
	return skipped, nil
}

// listNested lists the files, not ignored, of the nested repository at dir
// (workspace-relative, ending in a slash), descending into repositories
// nested in it. It lists against an index that does not exist, so every
// file counts as untracked; the ignore rules are the nested repository's own.
func (s *Store) listNested(ctx context.Context, dir string) ([]string, error) {
	out, err := s.run(ctx, gitCall{
		workTree: filepath.Join(s.workspace, dir),
		index:    filepath.Join(s.dir, "index.none"),
	}, "ls-files", "-z", "--others", "--exclude-standard")
	if err != nil {
		return nil, fmt.Errorf("listing nested repository %s: %w", dir, err)
	}
	var files []string
	for _, p := range splitZ(out) {
		if !strings.HasSuffix(p, "/") {
			files = append(files, dir+p)
			continue
		}
		nested, err := s.listNested(ctx, dir+p)
		if err != nil {
			return nil, err
		}
		files = append(files, nested...)
	}
	return files, nil
}

// message is the commit message of a snapshot: the label on one line, then
// the skipped files.
func message(label string, skipped []string) []byte {
	var b bytes.Buffer
	b.WriteString(strings.Join(strings.Fields(label), " "))
	b.WriteString("\n")
	if len(skipped) > 0 {
		b.WriteString("\n")
	}
	for _, p := range skipped {
		b.WriteString(skippedTrailer + strconv.Quote(p) + "\n")
	}
	return b.Bytes()
}

// commit reads the snapshot with commit id.
func (s *Store) commit(ctx context.Context, id string) (Snapshot, error) {
	out, err := s.inStore(ctx, nil, "cat-file", "commit", id)
	if err != nil {
		return Snapshot{}, fmt.Errorf("reading snapshot %s: %w", id, err)
	}
	snap := Snapshot{ID: id}
	header, msg, _ := strings.Cut(string(out), "\n\n")
	for line := range strings.Lines(header) {
		if t, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "tree "); ok {
			snap.Tree = t
		}
	}
	_, body, _ := strings.Cut(msg, "\n") // drop the label
	for line := range strings.Lines(body) {
		q, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), skippedTrailer)
		if !ok {
			continue
		}
		p, err := strconv.Unquote(q)
		if err != nil {
			return Snapshot{}, fmt.Errorf("reading snapshot %s: bad skipped path %s", id, q)
		}
		snap.Skipped = append(snap.Skipped, p)
	}
	if snap.Tree == "" {
		return Snapshot{}, fmt.Errorf("reading snapshot %s: no tree", id)
	}
	return snap, nil
}

// snapshotRef is one snapshot ref.
type snapshotRef struct {
	name string
	id   string
	seq  uint64
}

// refs lists the snapshot refs, oldest first.
func (s *Store) refs(ctx context.Context) ([]snapshotRef, error) {
	out, err := s.inStore(ctx, nil, "for-each-ref", "--format=%(refname) %(objectname)", refPrefix)
	if err != nil {
		return nil, err
	}
	var refs []snapshotRef
	for line := range strings.Lines(string(out)) {
		name, id, ok := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if !ok {
			return nil, fmt.Errorf("unexpected for-each-ref line %q", line)
		}
		seq, err := strconv.ParseUint(strings.TrimPrefix(name, refPrefix), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("unexpected snapshot ref %q", name)
		}
		refs = append(refs, snapshotRef{name: name, id: id, seq: seq})
	}
	slices.SortFunc(refs, func(a, b snapshotRef) int { return cmp.Compare(a.seq, b.seq) })
	return refs, nil
}

// trim deletes the oldest of refs, sorted oldest first, beyond MaxSnapshots.
func (s *Store) trim(ctx context.Context, refs []snapshotRef) error {
	excess := len(refs) - s.maxSnapshots
	if excess <= 0 {
		return nil
	}
	var b bytes.Buffer
	for _, r := range refs[:excess] {
		fmt.Fprintf(&b, "delete %s %s\n", r.name, r.id)
	}
	if _, err := s.inStore(ctx, b.Bytes(), "update-ref", "--stdin"); err != nil {
		return fmt.Errorf("dropping old snapshots: %w", err)
	}
	// Snapshots chain through their parents: make the oldest kept one a root
	// (git's shallow boundary), so that gc sees the dropped ones as garbage.
	tmp := filepath.Join(s.dir, "shallow.tmp")
	if err := os.WriteFile(tmp, []byte(refs[excess].id+"\n"), 0o600); err != nil {
		return fmt.Errorf("dropping old snapshots: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "shallow")); err != nil {
		return fmt.Errorf("dropping old snapshots: %w", err)
	}
	return nil
}

// Prune drops all but the newest Options.MaxSnapshots snapshots and, once
// enough loose objects have accumulated, repacks the store and deletes the
// objects that only dropped snapshots used (git gc --prune=now).
func (s *Store) Prune(ctx context.Context) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	refs, err := s.refs(ctx)
	if err != nil {
		return fmt.Errorf("pruning snapshots: %w", err)
	}
	if err := s.trim(ctx, refs); err != nil {
		return fmt.Errorf("pruning snapshots: %w", err)
	}
	out, err := s.inStore(ctx, nil, "count-objects", "-v")
	if err != nil {
		return fmt.Errorf("pruning snapshots: %w", err)
	}
	loose := -1
	for line := range strings.Lines(string(out)) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "count: "); ok {
			loose, err = strconv.Atoi(n)
			if err != nil {
				return fmt.Errorf("pruning snapshots: count-objects said %q", line)
			}
		}
	}
	if loose < s.gcLoose {
		return nil
	}
	if _, err := s.inStore(ctx, nil, "gc", "--prune=now", "--quiet"); err != nil {
		return fmt.Errorf("pruning snapshots: %w", err)
	}
	return nil
}

// pathDir is the directory part of the slash-separated path p ("" at the top).
func pathDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}
