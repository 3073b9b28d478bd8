package threadwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Thread renders a store row as a protocol Thread (turns empty), with
// status and the server's version.
func Thread(meta store.Thread, status protocol.ThreadStatus, version string) protocol.Thread {
	th := protocol.Thread{
		ID:            meta.ID,
		SessionID:     meta.ID,
		Preview:       meta.Preview,
		Ephemeral:     meta.Ephemeral,
		ModelProvider: meta.ModelProvider,
		CreatedAt:     meta.CreatedAt / 1000,
		UpdatedAt:     meta.UpdatedAt / 1000,
		Status:        status,
		Cwd:           meta.Cwd,
		CLIVersion:    version,
		Source:        "appServer",
		HistoryMode:   "legacy",
		Turns:         []protocol.Turn{},
	}
	if meta.ForkedFromID != "" {
		f := meta.ForkedFromID
		th.ForkedFromID = &f
	}
	if meta.Model != "" {
		mod := meta.Model
		th.Model = &mod
	}
	if meta.Name != "" {
		n := meta.Name
		th.Name = &n
	}
	r := meta.UpdatedAt / 1000
	th.RecencyAt = &r
	th.GitInfo = gitInfo(meta)
	return th
}

// gitInfo reads the git metadata kept in a thread row's settings.
func gitInfo(meta store.Thread) *protocol.GitInfo {
	if len(meta.Settings) == 0 {
		return nil
	}
	var s struct {
		GitInfo *protocol.GitInfo `json:"gitInfo"`
	}
	_ = json.Unmarshal(meta.Settings, &s)
	return s.GitInfo
}

// PatchGitInfo applies a thread/metadata/update gitInfo patch; it returns
// nil when nothing is left.
func PatchGitInfo(cur *protocol.GitInfo, patch protocol.Optional[protocol.GitInfoUpdateParams]) *protocol.GitInfo {
	if !patch.Present {
		return cur
	}
	if patch.Value == nil {
		return nil
	}
	g := protocol.GitInfo{}
	if cur != nil {
		g = *cur
	}
	set := func(dst **string, f protocol.Optional[string]) {
		if f.Present {
			*dst = f.Value
		}
	}
	set(&g.SHA, patch.Value.SHA)
	set(&g.Branch, patch.Value.Branch)
	set(&g.OriginURL, patch.Value.OriginURL)
	if g.SHA == nil && g.Branch == nil && g.OriginURL == nil {
		return nil
	}
	return &g
}

// LoadTurns reads a thread's turns with all their items (itemsView full).
func LoadTurns(ctx context.Context, db *store.Store, threadID string) ([]protocol.Turn, error) {
	turns, err := db.Turns(ctx, threadID)
	if err != nil {
		return nil, err
	}
	items, err := db.WireItems(ctx, threadID)
	if err != nil {
		return nil, err
	}
	// The stored item is the wire item: it is passed on as it is, never
	// decoded and encoded again (a long thread's answer costs its bytes).
	byTurn := map[string][]protocol.ThreadItem{}
	for _, it := range items {
		if !json.Valid(it.Item) {
			continue
		}
		byTurn[it.TurnID] = append(byTurn[it.TurnID], protocol.RawItem{ID: it.ID, Type: it.Type, Raw: it.Item})
	}
	out := make([]protocol.Turn, 0, len(turns))
	for _, tr := range turns {
		out = append(out, storedTurnToWire(tr, byTurn[tr.ID]))
	}
	return out, nil
}

func storedTurnToWire(tr store.Turn, items []protocol.ThreadItem) protocol.Turn {
	if items == nil {
		items = []protocol.ThreadItem{}
	}
	w := protocol.Turn{ID: tr.ID, Items: items, ItemsView: protocol.ItemsFull, Status: protocol.TurnStatus(tr.Status)}
	if tr.StartedAt > 0 {
		s := tr.StartedAt / 1000
		w.StartedAt = &s
	}
	if tr.CompletedAt > 0 {
		c := tr.CompletedAt / 1000
		w.CompletedAt = &c
		d := tr.DurationMs
		w.DurationMs = &d
	}
	if len(tr.Error) > 0 && string(tr.Error) != "null" {
		var te protocol.TurnError
		if json.Unmarshal(tr.Error, &te) == nil {
			w.Error = &te
		}
	}
	return w
}

// spillInMemory is how much of a streamed result's turns stay in memory;
// beyond it they go to an unlinked temporary file.
var spillInMemory = 1 << 20 // a variable for tests

// StreamedResult is the answer of a thread/resume, thread/fork or
// thread/read that carries a stored thread's turns: too large, for a long
// thread, to build in memory. Its JSON is Head, then what WriteBody writes
// (the turns array), then Tail, byte for byte what encoding the result
// with its turns in memory gives (compact, HTML characters not escaped).
// The server writes it to the output piece by piece (server/write.go); a
// caller in process gets the whole encoding from MarshalJSON.
//
// The turns are read from the store, completely, before the result is
// made: a store error is the request's error, never a half-written
// answer. Up to spillInMemory bytes of them are held in memory, the rest
// in an unlinked temporary file (in the data directory) that Release
// closes. Any goroutine may use it; Release may be called more than once.
type StreamedResult struct {
	threadID   string
	head, tail []byte
	mem        []byte   // the turns array, when small
	file       *os.File // the turns array, when large: size bytes from offset 0
	size       int64

	closeOnce sync.Once
}

// ThreadID is the id of the thread the result is about.
func (r *StreamedResult) ThreadID() string { return r.threadID }

// Head is the encoding up to and including the "turns" key.
func (r *StreamedResult) Head() []byte { return r.head }

// Tail is the encoding after the turns array.
func (r *StreamedResult) Tail() []byte { return r.tail }

// Len is the length of the whole encoding.
func (r *StreamedResult) Len() int64 { return int64(len(r.head)) + r.size + int64(len(r.tail)) }

// WriteBody writes the turns array to w. It may be called more than once
// (and concurrently), until Release. An error is w's, or reading the spill
// file's.
func (r *StreamedResult) WriteBody(w io.Writer) error {
	if r.file == nil {
		_, err := w.Write(r.mem)
		return err
	}
	n, err := io.Copy(w, io.NewSectionReader(r.file, 0, r.size))
	if err == nil && n != r.size {
		err = fmt.Errorf("turns spill: %d of %d bytes", n, r.size)
	}
	return err
}

// Release frees the spill file.
func (r *StreamedResult) Release() {
	r.closeOnce.Do(func() {
		if r.file != nil {
			r.file.Close()
		}
	})
}

// MarshalJSON returns the whole encoding (for callers in process).
func (r *StreamedResult) MarshalJSON() ([]byte, error) {
	b := bytes.NewBuffer(make([]byte, 0, r.Len()))
	b.Write(r.head)
	if err := r.WriteBody(b); err != nil {
		return nil, err
	}
	b.Write(r.tail)
	return b.Bytes(), nil
}

// Stream reads a thread's turns with all their items (itemsView full)
// into a StreamedResult whose JSON is that of result with the turns in
// thread.turns. result is a protocol.ThreadResult, or a result embedding
// protocol.ThreadSessionResult; its thread's turns must be empty. Threads
// whose items do not follow their turns' order are read by LoadTurns.
func Stream(ctx context.Context, db *store.Store, spillDir string, result any) (any, error) {
	th, ok := resultThread(result)
	if !ok {
		return nil, fmt.Errorf("bug: streaming the turns of a %T", result)
	}
	th.Turns = []protocol.Turn{}
	result = withThread(result, th)
	head, tail, err := splitAtTurns(result, th)
	if err != nil {
		return nil, err
	}
	sp := &spill{dir: spillDir}
	w := bufio.NewWriterSize(sp, 64<<10)
	var (
		buf   bytes.Buffer // one turn without its items
		enc   = json.NewEncoder(&buf)
		rest  []byte // what ends the open turn, after its items
		items int    // items written in the open turn
	)
	enc.SetEscapeHTML(false)
	w.WriteByte('[')
	// Each turn is encoded without items and split after `"items":[`;
	// each item is the stored one compacted into place, as encoding/json
	// compacts a RawItem (an item that is not valid JSON is left out, as
	// LoadTurns leaves it out).
	err = db.WireTurns(ctx, th.ID, func(tr store.Turn) error {
		if rest != nil {
			w.Write(rest)
			w.WriteByte(',')
		}
		buf.Reset()
		if err := enc.Encode(storedTurnToWire(tr, nil)); err != nil {
			return err
		}
		b := bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})
		at := bytes.Index(b, []byte(`,"items":[]`))
		if at < 0 {
			return fmt.Errorf("bug: no items in the encoding of turn %s", tr.ID)
		}
		at += len(`,"items":[`)
		w.Write(b[:at])
		rest = append(rest[:0], b[at:]...)
		items = 0
		return nil
	}, func(item json.RawMessage) error {
		if !compactJSON(item) {
			sp.item.Reset()
			if json.Compact(&sp.item, item) != nil {
				return nil
			}
			item = sp.item.Bytes()
		}
		if items > 0 {
			w.WriteByte(',')
		}
		items++
		_, err := w.Write(item)
		return err
	})
	if err == nil {
		if rest != nil {
			w.Write(rest)
		}
		w.WriteByte(']')
		err = w.Flush()
	}
	if err == nil {
		err = sp.err
	}
	if errors.Is(err, store.ErrItemOrder) {
		sp.close()
		turns, err := LoadTurns(ctx, db, th.ID)
		if err != nil {
			return nil, err
		}
		th.Turns = turns
		return withThread(result, th), nil
	}
	if err != nil {
		sp.close()
		return nil, err
	}
	return &StreamedResult{threadID: th.ID, head: head, tail: tail, mem: sp.mem, file: sp.file, size: sp.size}, nil
}

// compactJSON reports whether b, a stored item, is one JSON value with no
// whitespace outside its strings, so that encoding/json's compaction would
// leave it as it is. It is a quick scan, not a validation: the store
// checked every item when it was written; anything it is unsure of is
// left to json.Compact.
func compactJSON(b []byte) bool {
	if len(b) == 0 || (b[0] != '{' && b[0] != '[') {
		return false
	}
	depth, inString := 0, false
	quote := -1 // the first quote at or after i, once found: a string of
	// many escapes must not be searched to its end again at each one
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			// Jump to the string's next quote or backslash: item
			// strings (command output, messages) are most of the bytes.
			if quote < i {
				q := bytes.IndexByte(b[i:], '"')
				if q < 0 {
					return false
				}
				quote = i + q
			}
			if e := bytes.IndexByte(b[i:quote], '\\'); e >= 0 {
				i += e + 1 // skip the escaped byte
				continue
			}
			i = quote
			inString = false
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 && i != len(b)-1 {
				return false
			}
		case ' ', '\t', '\n', '\r':
			return false
		}
	}
	return depth == 0 && !inString
}

// resultThread returns the thread of a result that Stream takes.
func resultThread(result any) (protocol.Thread, bool) {
	switch r := result.(type) {
	case protocol.ThreadResult:
		return r.Thread, true
	case protocol.ThreadResumeResult:
		return r.Thread, true
	case protocol.ThreadSessionResult:
		return r.Thread, true
	}
	return protocol.Thread{}, false
}

// withThread returns result (as resultThread takes it) with th as its thread.
func withThread(result any, th protocol.Thread) any {
	switch r := result.(type) {
	case protocol.ThreadResult:
		r.Thread = th
		return r
	case protocol.ThreadResumeResult:
		r.Thread = th
		return r
	case protocol.ThreadSessionResult:
		r.Thread = th
		return r
	}
	return result
}

// splitAtTurns encodes result (whose thread, th, is its first member and
// has no turns) and returns the bytes before and after its thread's empty
// turns array.
func splitAtTurns(result any, th protocol.Thread) (head, tail []byte, err error) {
	encode := func(v any) ([]byte, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return bytes.TrimSuffix(b.Bytes(), []byte{'\n'}), nil
	}
	tb, err := encode(th)
	if err != nil {
		return nil, nil, err
	}
	rb, err := encode(result)
	if err != nil {
		return nil, nil, err
	}
	prefix := append([]byte(`{"thread":`), tb...)
	const empty = `"turns":[]}`
	if !bytes.HasPrefix(rb, prefix) || !bytes.HasSuffix(tb, []byte(empty)) {
		return nil, nil, fmt.Errorf("bug: the turns of %T are not where they are expected", result)
	}
	at := len(prefix) - len("[]}")
	return rb[:at], rb[at+len("[]"):], nil
}

// spill holds the encoded turns: in memory up to spillInMemory bytes, then
// in a temporary file, unlinked at once, that the StreamedResult closes.
type spill struct {
	dir  string
	item bytes.Buffer // one compacted item
	mem  []byte
	file *os.File
	size int64
	err  error
}

func (sp *spill) Write(p []byte) (int, error) {
	if sp.err != nil {
		return 0, sp.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	if sp.file == nil && len(sp.mem)+len(p) > spillInMemory {
		f, err := os.CreateTemp(sp.dir, "turns-*.spill")
		if err == nil {
			err = os.Remove(f.Name())
			if err == nil {
				_, err = f.Write(sp.mem)
			}
			if err != nil {
				f.Close()
			}
		}
		if err != nil {
			sp.err = fmt.Errorf("spilling turns to a file: %w", err)
			return 0, sp.err
		}
		sp.file, sp.mem = f, nil
	}
	if sp.file != nil {
		if _, err := sp.file.Write(p); err != nil {
			sp.err = fmt.Errorf("spilling turns to a file: %w", err)
			return 0, sp.err
		}
	} else {
		sp.mem = append(sp.mem, p...)
	}
	sp.size += int64(len(p))
	return len(p), nil
}

func (sp *spill) close() {
	if sp.file != nil {
		sp.file.Close()
	}
}
