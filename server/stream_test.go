package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// syncBuffer is a goroutine-safe bytes.Buffer for logs and output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestReadLine(t *testing.T) {
	type step struct {
		line    string
		tooLong bool
	}
	tests := []struct {
		name  string
		input string
		max   int
		want  []step
	}{
		{"lf", "a\nb\n", 10, []step{{line: "a"}, {line: "b"}}},
		{"crlf", "a\r\nb\r\n", 10, []step{{line: "a"}, {line: "b"}}},
		{"no final newline", "a\nb", 10, []step{{line: "a"}, {line: "b"}}},
		{"empty lines", "\n\na\n", 10, []step{{line: ""}, {line: ""}, {line: "a"}}},
		{"exactly max", "0123456789\n", 10, []step{{line: "0123456789"}}},
		{"exactly max crlf", "0123456789\r\n", 10, []step{{line: "0123456789"}}},
		{"over max", "0123456789x\nok\n", 10, []step{{tooLong: true}, {line: "ok"}}},
		{"over max at eof", "ok\n0123456789xyz", 10, []step{{line: "ok"}, {tooLong: true}}},
		{"huge line discarded", strings.Repeat("x", 300<<10) + "\nok\n", 1000, []step{{tooLong: true}, {line: "ok"}}},
		{"long line kept", strings.Repeat("y", 200<<10) + "\n", 1 << 20, []step{{line: strings.Repeat("y", 200<<10)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newStream(strings.NewReader(tt.input), io.Discard, tt.max, discardLogger(), false)
			defer st.Close()
			for i, want := range tt.want {
				line, tooLong, err := st.readLine()
				if err != nil {
					t.Fatalf("readLine #%d: err %v, want %+v", i, err, want)
				}
				if string(line) != want.line || tooLong != want.tooLong {
					t.Fatalf("readLine #%d = %.40q, %v; want %.40q, %v", i, line, tooLong, want.line, want.tooLong)
				}
			}
			for range 2 {
				if _, _, err := st.readLine(); err != io.EOF {
					t.Fatalf("readLine at end: err %v, want io.EOF", err)
				}
			}
		})
	}
}

func TestDecodeLine(t *testing.T) {
	intID := func(n int64) *jsonrpc2.ID { return &jsonrpc2.ID{Num: uint64(n)} }
	strID := func(s string) *jsonrpc2.ID { return &jsonrpc2.ID{Str: s, IsString: true} }
	tests := []struct {
		line string
		// good message
		kind   msgKind
		id     *jsonrpc2.ID
		method string
		params string
		// bad line
		code    int64
		badID   *jsonrpc2.ID
		msg     string
		noReply bool
	}{
		{line: `{"id":1,"method":"a","params":{"x":1}}`, kind: kindRequest, id: intID(1), method: "a", params: `{"x":1}`},
		{line: `{"jsonrpc":"2.0","id":"s","method":"a","extra":[1]}`, kind: kindRequest, id: strID("s"), method: "a"},
		{line: `{"id":-7,"method":"a","params":null}`, kind: kindRequest, id: intID(-7), method: "a", params: `null`},
		{line: `{"id":9223372036854775807,"method":"a"}`, kind: kindRequest, id: intID(9223372036854775807), method: "a"},
		{line: `{"method":"initialized"}`, kind: kindNotification, method: "initialized"},
		{line: `{"id":0,"result":{"decision":"accept"}}`, kind: kindResponse, id: intID(0)},
		{line: `{"id":3,"result":null}`, kind: kindResponse, id: intID(3)},
		{line: `{"id":3,"error":{"code":1,"message":"no"}}`, kind: kindResponse, id: intID(3)},
		{line: `{"id":3,"result":1,"error":null}`, kind: kindResponse, id: intID(3)},

		{line: `{"id":1,`, code: -32700, msg: "Parse error: unexpected end of JSON input"},
		{line: `hello`, code: -32700, msg: "Parse error: invalid character 'h' looking for beginning of value"},
		{line: `{} {}`, code: -32700, msg: "Parse error: invalid character '{' after top-level value"},
		{line: `[1,2]`, code: -32600, msg: "Invalid request: expected a JSON object, got array"},
		{line: `42`, code: -32600, msg: "Invalid request: expected a JSON object, got number"},
		{line: `null`, code: -32600, msg: "Invalid request: expected a JSON object, got null"},
		{line: `{"foo":1}`, code: -32600, msg: "Invalid request: expected a method, result or error"},
		{line: `{"id":"q","foo":1}`, code: -32600, badID: strID("q"), msg: "Invalid request: expected a method, result or error"},
		{line: `{"id":2,"method":5}`, code: -32600, badID: intID(2), msg: "Invalid request: method must be a string"},
		{line: `{"id":2,"method":null}`, code: -32600, badID: intID(2), msg: "Invalid request: method must be a string"},
		{line: `{"id":true,"method":"a"}`, code: -32600, msg: "Invalid request: id must be a string or a 64-bit integer"},
		{line: `{"id":9223372036854775808,"method":"a"}`, code: -32600, msg: "Invalid request: id must be a string or a 64-bit integer"},
		{line: `{"id":1.5,"method":"a"}`, noReply: true, msg: "request with a float id dropped (no reply)"},
		{line: `{"id":1e2,"method":"a"}`, noReply: true, msg: "request with a float id dropped (no reply)"},
		{line: `{"id":null,"method":"a"}`, noReply: true, msg: "request with a null id dropped (no reply)"},
		{line: `{"id":null,"error":{"code":-32700,"message":"x"}}`, noReply: true, msg: "response without a usable id dropped"},
		{line: `{"result":1}`, noReply: true, msg: "response without a usable id dropped"},
	}
	for _, tt := range tests {
		m, bad := decodeLine([]byte(tt.line))
		if tt.kind != 0 {
			if bad != nil {
				t.Errorf("decodeLine(%s) = bad %+v, want a message", tt.line, bad)
				continue
			}
			if m.kind != tt.kind || m.method != tt.method || string(m.params) != tt.params || (tt.id != nil && m.id != *tt.id) {
				t.Errorf("decodeLine(%s) = %+v, want kind %d id %v method %q params %q", tt.line, m, tt.kind, tt.id, tt.method, tt.params)
			}
			continue
		}
		if bad == nil {
			t.Errorf("decodeLine(%s) = %+v, want a bad line", tt.line, m)
			continue
		}
		if bad.code != tt.code || bad.msg != tt.msg || bad.noReply != tt.noReply || !sameID(bad.id, tt.badID) {
			t.Errorf("decodeLine(%s) = bad %+v (id %v), want code %d msg %q noReply %v id %v",
				tt.line, bad, bad.id, tt.code, tt.msg, tt.noReply, tt.badID)
		}
	}
}

func sameID(a, b *jsonrpc2.ID) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func TestEncode(t *testing.T) {
	id := func(n int64) jsonrpc2.ID { return jsonrpc2.ID{Num: uint64(n)} }
	type params struct {
		Text string `json:"text"`
	}
	tests := []struct {
		name string
		fill func(lb *lineBuf) error
		want string
	}{
		{"result", func(lb *lineBuf) error { return lb.appendResult(id(4), params{"a<b>&c"}) }, `{"id":4,"result":{"text":"a<b>&c"}}`},
		{"result string id", func(lb *lineBuf) error {
			return lb.appendResult(jsonrpc2.ID{Str: "x\"y", IsString: true}, nil)
		}, `{"id":"x\"y","result":null}`},
		{"result negative id", func(lb *lineBuf) error { return lb.appendResult(id(-1), struct{}{}) }, `{"id":-1,"result":{}}`},
		{"error", func(lb *lineBuf) error {
			lb.appendError(nil, -32700, "Parse error: x", nil)
			return nil
		}, `{"id":null,"error":{"code":-32700,"message":"Parse error: x"}}`},
		{"error data", func(lb *lineBuf) error {
			i := id(2)
			lb.appendError(&i, -32603, "boom", json.RawMessage(`{ "a" : 1 }`))
			return nil
		}, `{"id":2,"error":{"code":-32603,"message":"boom","data":{"a":1}}}`},
		{"error bad data dropped", func(lb *lineBuf) error {
			i := id(2)
			lb.appendError(&i, -32603, "boom", json.RawMessage(`{`))
			return nil
		}, `{"id":2,"error":{"code":-32603,"message":"boom"}}`},
		{"call", func(lb *lineBuf) error { return lb.appendCall(id(0), "item/x", params{"hi"}) }, `{"id":0,"method":"item/x","params":{"text":"hi"}}`},
		{"call no params", func(lb *lineBuf) error { return lb.appendCall(id(1), "x", nil) }, `{"id":1,"method":"x"}`},
		{"raw params compacted", func(lb *lineBuf) error {
			return lb.appendCall(id(1), "x", json.RawMessage("{\n \"a\": [1, 2]\n}"))
		}, `{"id":1,"method":"x","params":{"a":[1,2]}}`},
	}
	for _, tt := range tests {
		lb := getLine()
		if err := tt.fill(lb); err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got := string(lb.b); got != tt.want+"\n" {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}

	lb := getLine()
	if err := lb.appendCall(id(1), "x", func() {}); err == nil {
		t.Errorf("appendCall with a func param: no error")
	}
}

func TestEncodeNotification(t *testing.T) {
	before := time.Now().UnixMilli()
	lb := getLine()
	if err := lb.appendNotification("item/agentMessage/delta", map[string]string{"delta": "é\u2028"}); err != nil {
		t.Fatal(err)
	}
	after := time.Now().UnixMilli()
	var got map[string]json.RawMessage
	if err := json.Unmarshal(lb.b, &got); err != nil {
		t.Fatalf("notification %s: %v", lb.b, err)
	}
	if _, ok := got["jsonrpc"]; ok {
		t.Errorf("notification %s has jsonrpc", lb.b)
	}
	if _, ok := got["id"]; ok {
		t.Errorf("notification %s has an id", lb.b)
	}
	var ms int64
	if err := json.Unmarshal(got["emittedAtMs"], &ms); err != nil || ms < before || ms > after {
		t.Errorf("emittedAtMs = %s, want a time in [%d, %d]", got["emittedAtMs"], before, after)
	}
	if string(got["method"]) != `"item/agentMessage/delta"` || string(got["params"]) != `{"delta":"é\u2028"}` {
		t.Errorf("notification = %s", lb.b)
	}
	if bytes.Count(lb.b, []byte{'\n'}) != 1 || lb.b[len(lb.b)-1] != '\n' {
		t.Errorf("notification %q is not one line", lb.b)
	}

	lb = getLine()
	if err := lb.appendNotification("x", nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(lb.b, []byte(`{"method":"x","emittedAtMs":`)) {
		t.Errorf("notification without params = %s", lb.b)
	}
}

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\`, "nl\n\r\t\x00\x1f\x7f", "é✓🙂", "bad\xff\xfeutf8", "\u2028\u2029", "<>&"} {
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Errorf("appendString(%q) = %s: %v", s, got, err)
			continue
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Errorf("appendString(%q) decodes to %q, want %q", s, back, wantBack)
		}
	}
}

func TestWriteObject(t *testing.T) {
	var out syncBuffer
	st := newStream(strings.NewReader(""), &out, 0, discardLogger(), false)
	params := json.RawMessage(`{"a":1}`)
	result := json.RawMessage(`{"ok":true}`)
	objs := []any{
		&jsonrpc2.Response{ID: jsonrpc2.ID{Num: 1}, Result: &result},
		&jsonrpc2.Response{ID: jsonrpc2.ID{Str: "s", IsString: true}, Error: &jsonrpc2.Error{Code: -32600, Message: "no"}},
		&jsonrpc2.Request{ID: jsonrpc2.ID{Num: 0}, Method: "m", Params: &params},
		map[string]any{"jsonrpc": "2.0", "id": 5, "result": "r"}, // anything else is re-encoded
	}
	for _, o := range objs {
		if err := st.WriteObject(o); err != nil {
			t.Fatalf("WriteObject(%v): %v", o, err)
		}
	}
	if err := st.WriteObject(&jsonrpc2.Request{Method: "n", Notif: true}); err != nil {
		t.Fatal(err)
	}
	if err := st.WriteObject(42); err == nil {
		t.Errorf("WriteObject(42): no error")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	want := []string{
		`{"id":1,"result":{"ok":true}}`,
		`{"id":"s","error":{"code":-32600,"message":"no"}}`,
		`{"id":0,"method":"m","params":{"a":1}}`,
		`{"id":5,"result":"r"}`,
	}
	if len(lines) != len(want)+1 {
		t.Fatalf("output:\n%s\nwant %d lines", out.String(), len(want)+1)
	}
	for i, w := range want {
		if lines[i] != w {
			t.Errorf("line %d = %s, want %s", i, lines[i], w)
		}
	}
	if !strings.HasPrefix(lines[4], `{"method":"n","emittedAtMs":`) {
		t.Errorf("notification line = %s", lines[4])
	}
	if err := st.WriteObject(objs[0]); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteObject after Close: %v, want ErrClosed", err)
	}
}

// countingWriter counts Write calls and signals each one.
type countingWriter struct {
	mu     sync.Mutex
	writes int
	buf    bytes.Buffer
	wrote  chan struct{}
	err    error
}

func (w *countingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.writes++
	w.buf.Write(p)
	if w.wrote != nil {
		select {
		case w.wrote <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

func (w *countingWriter) stats() (int, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writes, w.buf.String()
}

func TestLoneMessageFlushedAtOnce(t *testing.T) {
	w := &countingWriter{wrote: make(chan struct{}, 1)}
	st := newStream(strings.NewReader(""), w, 0, discardLogger(), false)
	defer st.Close()
	if err := st.notify("x", 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-w.wrote:
	case <-time.After(5 * time.Second):
		t.Fatal("a lone notification was not written without Flush")
	}
	if _, out := w.stats(); !strings.HasPrefix(out, `{"method":"x","params":1,`) {
		t.Errorf("output = %s", out)
	}
}

func TestBurstFewWrites(t *testing.T) {
	const n = 10000
	w := &countingWriter{}
	st := newStream(strings.NewReader(""), w, 0, discardLogger(), false)
	delta := testDelta()
	for i := range n {
		delta.Delta = fmt.Sprintf("chunk %05d", i)
		if err := st.notify("item/agentMessage/delta", &delta); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	writes, out := w.stats()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != n {
		t.Fatalf("%d lines written, want %d", len(lines), n)
	}
	for i, l := range lines {
		if !strings.Contains(l, fmt.Sprintf(`"chunk %05d"`, i)) {
			t.Fatalf("line %d = %s: out of order", i, l)
		}
	}
	// ~2.4 MB through a 64 KiB buffer is ~40 writes when the producer
	// outpaces the writer; a loaded machine or -race makes it more. The
	// bound only catches a flush per message; TestQueuedLinesShareWrites
	// checks batching exactly.
	t.Logf("%d notifications, %d bytes, %d writes", n, len(out), writes)
	if writes > n/2 {
		t.Errorf("%d writes for %d notifications, want far fewer", writes, n)
	}
	st.Close()
}

// gatedWriter blocks its first Write until release is closed.
type gatedWriter struct {
	countingWriter
	once    sync.Once
	release chan struct{}
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	return w.countingWriter.Write(p)
}

func TestQueuedLinesShareWrites(t *testing.T) {
	const n = 8000 // fits in the queue
	w := &gatedWriter{release: make(chan struct{})}
	st := newStream(strings.NewReader(""), w, 0, discardLogger(), false)
	defer st.Close()
	delta := testDelta()
	st.notify("first", nil) // the writer blocks writing this one
	for range n {
		if err := st.notify("item/agentMessage/delta", &delta); err != nil {
			t.Fatal(err)
		}
	}
	close(w.release)
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	writes, out := w.stats()
	if got := strings.Count(out, "\n"); got != n+1 {
		t.Fatalf("%d lines written, want %d", got, n+1)
	}
	if max := 1 + len(out)/writeBufSize + 2; writes > max {
		t.Errorf("%d writes for %d queued lines (%d bytes), want at most %d", writes, n, len(out), max)
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	w := &countingWriter{}
	st := newStream(strings.NewReader(""), w, 0, discardLogger(), false)
	for i := range 1000 {
		st.notify("x", i)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, out := w.stats(); strings.Count(out, "\n") != 1000 {
		t.Errorf("after Close, %d lines written, want 1000", strings.Count(out, "\n"))
	}
	if err := st.notify("x", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("notify after Close: %v, want ErrClosed", err)
	}
	if err := st.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v, want ErrClosed", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWriteErrorCloses(t *testing.T) {
	boom := errors.New("boom")
	w := &countingWriter{err: boom}
	st := newStream(strings.NewReader(""), w, 0, discardLogger(), false)
	st.notify("x", 1)
	if err := st.Flush(); !errors.Is(err, boom) {
		t.Errorf("Flush after a write error: %v, want %v", err, boom)
	}
	select {
	case <-st.closing:
	case <-time.After(5 * time.Second):
		t.Fatal("stream not closed after a write error")
	}
	if err := st.notify("x", 1); !errors.Is(err, ErrClosed) {
		t.Errorf("notify after a write error: %v, want ErrClosed", err)
	}
	if err := st.Close(); !errors.Is(err, boom) {
		t.Errorf("Close = %v, want %v", err, boom)
	}
}

// deltaParams is item/agentMessage/delta's params.
type deltaParams struct {
	ThreadID string `json:"threadId"`
	TurnID   string `json:"turnId"`
	ItemID   string `json:"itemId"`
	Delta    string `json:"delta"`
}

func testDelta() deltaParams {
	return deltaParams{
		ThreadID: "019a1b2c-3d4e-7f80-9a1b-2c3d4e5f6a7b",
		TurnID:   "019a1b2c-4d5e-7f80-9a1b-2c3d4e5f6a7c",
		ItemID:   "msg_0123456789abcdef0123456789abcdef",
		Delta:    "The quick brown fox jumps over the lazy dog, twice. ",
	}
}

// BenchmarkNotify measures Client.Notify for a ~240-byte delta
// notification, through the queue and the writer.
func BenchmarkNotify(b *testing.B) {
	s := New(strings.NewReader(""), io.Discard, Options{Logger: discardLogger()})
	c := s.Client()
	p := testDelta()
	lb := getLine()
	lb.appendNotification("item/agentMessage/delta", &p)
	b.SetBytes(int64(len(lb.b)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		c.Notify("item/agentMessage/delta", &p)
	}
	b.StopTimer()
	if err := s.st.Close(); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkNotifyParallel(b *testing.B) {
	s := New(strings.NewReader(""), io.Discard, Options{Logger: discardLogger()})
	c := s.Client()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		p := testDelta()
		for pb.Next() {
			c.Notify("item/agentMessage/delta", &p)
		}
	})
	b.StopTimer()
	s.st.Close()
}

// benchLine is a typical incoming request.
const benchLine = `{"id":12,"method":"turn/start","params":{"threadId":"01a21321-cffa-7467-959a-5ff5680bdacb","input":[{"type":"text","text":"please fix the failing test in server/conn_test.go and run go test"}]}}` + "\n"

func benchReadStream(b *testing.B) *stream {
	st := newStream(strings.NewReader(strings.Repeat(benchLine, b.N)), io.Discard, 0, slog.New(slog.NewTextHandler(io.Discard, nil)), false)
	st.onResponse = func(message) {}
	b.Cleanup(func() { st.Close() })
	return st
}

// BenchmarkReadNext is the stream's own decoding of a line.
func BenchmarkReadNext(b *testing.B) {
	st := benchReadStream(b)
	b.ResetTimer()
	for range b.N {
		if _, err := st.next(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkReadObject adds what jsonrpc2's read loop costs on top of
// BenchmarkReadNext: the canonical re-encoding and jsonrpc2's own decoding
// (see "Why jsonrpc2 stays" in doc.go).
func BenchmarkReadObject(b *testing.B) {
	st := benchReadStream(b)
	b.ResetTimer()
	for range b.N {
		var v jsonrpc2.Request
		if err := st.ReadObject(&v); err != nil {
			b.Fatal(err)
		}
	}
}
