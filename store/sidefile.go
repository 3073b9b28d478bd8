package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Side files: an item's wire JSON or model history of sideMin bytes or
// more is not stored in its row but in a file of its own in the data
// directory, items/<hex thread id>/<hex item id>.item (or .history), and
// the row's column holds a marker (sideMarkers) in its place. SQLite
// copies a bound text twice in C (the bound value, then the row's record),
// so a 64 MiB answer cut at its cap cost the server four copies of its text
// at once when it was stored in its row; written to a file it costs none
// beyond the caller's.
//
// Every read of the column (Items, WireItems, WireTurns, PromptSource,
// MessageItems) reads the file back in the marker's place, so callers never
// see the marker. The file is written and fsync'd under a temporary name
// before the row's transaction, renamed to its name (and its directory
// fsync'd) after the row is inserted and before the commit: a crash leaves
// at most a temporary file, or a named file without its row, and Open
// removes both (sweepSideFiles). A fork links the source's files under the
// new thread; deleting a thread or dropping its turns removes theirs after
// the commit, under the writer mutex so that no later append of the same
// item id can lose its file.
const sideMin = 4 << 20

const sideDirName = "items"

// sideIDMax is the longest thread or item id whose item is stored in a
// side file: the file's name is the id in hex and must fit a file name.
const sideIDMax = 100

var sideMarkers = map[string][]byte{
	"item":    []byte(`{"apserverSideFile":"item"}`),
	"history": []byte(`{"apserverSideFile":"history"}`),
}

func (s *Store) sideDir() string { return filepath.Join(filepath.Dir(s.path), sideDirName) }

func (s *Store) threadSideDir(threadID string) string {
	return filepath.Join(s.sideDir(), hex.EncodeToString([]byte(threadID)))
}

func (s *Store) sidePath(threadID, itemID, col string) string {
	return filepath.Join(s.threadSideDir(threadID), hex.EncodeToString([]byte(itemID))+"."+col)
}

// staged is a side file written under a temporary name, waiting for its row.
type staged struct{ tmp, final string }

// stageSide writes the columns of it of sideMin bytes or more to temporary
// files (fsync'd) and replaces them in it by their markers. The caller
// renames them with commitSide once the row is inserted, or removes them
// with dropSide.
func (s *Store) stageSide(it *Item) ([]staged, error) {
	if len(it.ThreadID) > sideIDMax || len(it.ID) > sideIDMax {
		return nil, nil
	}
	var out []staged
	for _, col := range []struct {
		name string
		b    *json.RawMessage
		enc  Encoding
	}{{"item", &it.Item, it.Encoding}, {"history", &it.History, nil}} {
		var tmp string
		var err error
		switch {
		case len(*col.b) == 0 && col.enc != nil:
			tmp, err = s.writeTemp(it.ThreadID, col.enc)
		case len(*col.b) >= sideMin:
			tmp, err = s.writeTemp(it.ThreadID, bytesWriter(*col.b))
		default:
			continue
		}
		if err != nil {
			dropSide(out)
			return nil, err
		}
		out = append(out, staged{tmp, s.sidePath(it.ThreadID, it.ID, col.name)})
		*col.b = sideMarkers[col.name]
	}
	return out, nil
}

// sideable reports whether it, of n bytes, would be stored in a side file.
func (s *Store) sideable(it Item, n int) bool {
	return n >= sideMin && len(it.ThreadID) <= sideIDMax && len(it.ID) <= sideIDMax
}

// encodeAll is e written into a buffer of its size.
func encodeAll(e Encoding) ([]byte, error) {
	b := bytes.NewBuffer(make([]byte, 0, e.Len()))
	if _, err := e.WriteTo(b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

type bytesWriter []byte

func (b bytesWriter) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(b)
	return int64(n), err
}

// sideBuffer is the buffer an Encoding is written to its file through.
const sideBuffer = 256 << 10

// writeTemp writes e to a new temporary file in the thread's side
// directory and fsyncs it.
func (s *Store) writeTemp(threadID string, e io.WriterTo) (string, error) {
	dir := s.threadSideDir(threadID)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("side file: %w", err)
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return "", fmt.Errorf("side file: %w", err)
	}
	if b, ok := e.(bytesWriter); ok {
		_, err = f.Write(b)
	} else {
		w := bufio.NewWriterSize(f, sideBuffer)
		if _, err = e.WriteTo(w); err == nil {
			err = w.Flush()
		}
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("side file: %w", err)
	}
	return f.Name(), nil
}

// commitSide renames the staged files to their names and fsyncs their
// directories, so that they are durable before the row's commit.
func (s *Store) commitSide(st []staged) error {
	for i, f := range st {
		if err := os.Rename(f.tmp, f.final); err != nil {
			dropSide(st[i:])
			return fmt.Errorf("side file: %w", err)
		}
	}
	if len(st) > 0 {
		if err := syncDir(filepath.Dir(st[0].final)); err != nil {
			return err
		}
		return syncDir(s.sideDir())
	}
	return nil
}

func dropSide(st []staged) {
	for _, f := range st {
		os.Remove(f.tmp)
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("side file: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("side file: %w", err)
	}
	return nil
}

// sideRead returns b, or the side file it marks.
func (s *Store) sideRead(threadID, itemID, col string, b []byte) ([]byte, error) {
	if len(b) != len(sideMarkers[col]) || !bytes.Equal(b, sideMarkers[col]) {
		return b, nil
	}
	data, err := os.ReadFile(s.sidePath(threadID, itemID, col))
	if err != nil {
		return nil, fmt.Errorf("item %q: %w", itemID, err)
	}
	return data, nil
}

// resolveItems reads back the side files of items.
func (s *Store) resolveItems(items []Item) error {
	for i := range items {
		it := &items[i]
		var err error
		if it.Item, err = s.sideRead(it.ThreadID, it.ID, "item", it.Item); err != nil {
			return err
		}
		if it.History, err = s.sideRead(it.ThreadID, it.ID, "history", it.History); err != nil {
			return err
		}
	}
	return nil
}

// linkSide gives the items copied into dst by a fork the source's side
// files, as hard links (a copy where links fail). Called inside the
// fork's transaction, after its items are inserted.
func (s *Store) linkSide(ctx context.Context, tx *sql.Tx, srcID, dstID string) error {
	if len(dstID) > sideIDMax {
		// The copied rows hold markers that no file could back.
		return s.inlineSide(ctx, tx, srcID, dstID)
	}
	ents, err := os.ReadDir(s.threadSideDir(srcID))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("side file: %w", err)
	}
	dstDir := s.threadSideDir(dstID)
	linked := false
	for _, e := range ents {
		itemID, col, ok := parseSideName(e.Name())
		if !ok {
			continue
		}
		var one int
		err := tx.QueryRowContext(ctx, `SELECT 1 FROM items WHERE thread_id = ? AND id = ? AND `+col+` = ?`,
			dstID, itemID, textArg(sideMarkers[col])).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.MkdirAll(dstDir, 0o700); err != nil {
			return fmt.Errorf("side file: %w", err)
		}
		if err := linkOrCopy(filepath.Join(s.threadSideDir(srcID), e.Name()), filepath.Join(dstDir, e.Name())); err != nil {
			return err
		}
		linked = true
	}
	if linked {
		if err := syncDir(dstDir); err != nil {
			return err
		}
		return syncDir(s.sideDir())
	}
	return nil
}

// inlineSide is never expected: a fork into a thread id too long for a
// side directory. The source's ids were short enough, the fork's are not.
func (s *Store) inlineSide(ctx context.Context, tx *sql.Tx, srcID, dstID string) error {
	for col, m := range sideMarkers {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM items WHERE thread_id = ? AND `+col+` = ?`,
			dstID, textArg(m)).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("fork of a thread with items of %d MiB or more into a thread id longer than %d bytes", sideMin>>20, sideIDMax)
		}
	}
	return nil
}

func linkOrCopy(src, dst string) error {
	tmp := filepath.Join(filepath.Dir(dst), ".tmp-link-"+rand.Text())
	if err := os.Link(src, tmp); err != nil {
		if err := copyFile(src, tmp); err != nil {
			os.Remove(tmp)
			return fmt.Errorf("side file: %w", err)
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("side file: %w", err)
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// parseSideName splits a side file's name into its item id and column.
func parseSideName(name string) (itemID, col string, ok bool) {
	h, col, found := strings.Cut(name, ".")
	if !found || sideMarkers[col] == nil {
		return "", "", false
	}
	id, err := hex.DecodeString(h)
	if err != nil {
		return "", "", false
	}
	return string(id), col, true
}

// removeThreadSide removes the side files of a deleted thread. Called
// after the commit, under the writer mutex.
func (s *Store) removeThreadSide(threadID string) {
	os.RemoveAll(s.threadSideDir(threadID))
}

// sideItemIDs returns the ids of the items of the thread that a statement
// about to run will delete (the query's arguments follow the thread id),
// when the thread has side files at all.
func (s *Store) sideItemIDs(ctx context.Context, tx *sql.Tx, threadID, query string, args ...any) ([]string, error) {
	if _, err := os.Stat(s.threadSideDir(threadID)); err != nil {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, query, append([]any{threadID}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// removeItemSide removes the side files of deleted items.
func (s *Store) removeItemSide(threadID string, ids []string) {
	for _, id := range ids {
		for col := range sideMarkers {
			os.Remove(s.sidePath(threadID, id, col))
		}
	}
}

// sweepSideFiles removes what a crash left: temporary files, files whose
// row was never committed (or was deleted), directories of threads that no
// longer exist. Only the side directory's own entries are looked at.
func (s *Store) sweepSideFiles(ctx context.Context) error {
	dirs, err := os.ReadDir(s.sideDir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("store: side files: %w", err)
	}
	for _, d := range dirs {
		tid, err := hex.DecodeString(d.Name())
		if err != nil || !d.IsDir() {
			continue // not ours
		}
		threadID := string(tid)
		dir := s.threadSideDir(threadID)
		var one int
		err = s.w.QueryRowContext(ctx, `SELECT 1 FROM threads WHERE id = ?`, threadID).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			os.RemoveAll(dir)
			continue
		}
		if err != nil {
			return fmt.Errorf("store: side files: %w", err)
		}
		files, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("store: side files: %w", err)
		}
		for _, f := range files {
			if strings.HasPrefix(f.Name(), ".tmp-") {
				os.Remove(filepath.Join(dir, f.Name()))
				continue
			}
			itemID, col, ok := parseSideName(f.Name())
			if !ok {
				continue
			}
			err := s.w.QueryRowContext(ctx, `SELECT 1 FROM items WHERE thread_id = ? AND id = ? AND `+col+` = ?`,
				threadID, itemID, textArg(sideMarkers[col])).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				os.Remove(filepath.Join(dir, f.Name()))
				continue
			}
			if err != nil {
				return fmt.Errorf("store: side files: %w", err)
			}
		}
	}
	return nil
}
