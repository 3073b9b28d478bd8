package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/sourcegraph/jsonrpc2"
)

const fuzzMaxLine = 256 // small, so the fuzzer reaches the over-long path

// FuzzReadLine feeds arbitrary bytes to the input stream. It must never
// panic, never stop with an error other than io.EOF, answer bad lines only
// with error responses, and every message it accepts must re-encode to a
// line that decodes to the same message and that jsonrpc2 accepts.
func FuzzReadLine(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed files in testdata: %v", err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		for line := range bytes.SplitSeq(data, []byte("\n")) {
			f.Add(line)
		}
	}
	f.Add([]byte(strings.Repeat("x", fuzzMaxLine+1) + "\n{\"method\":\"a\"}"))
	f.Add([]byte("{\"method\":\"a\"}\r"))

	f.Fuzz(func(t *testing.T, data []byte) {
		var out syncBuffer
		st := newStream(bytes.NewReader(data), &out, fuzzMaxLine, discardLogger(), false)
		st.onResponse = func(m message) { checkRoundTrip(t, m) }
		for {
			m, err := st.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("next: %v", err)
			}
			checkRoundTrip(t, m)
			var req jsonrpc2.Request
			canon := appendMessage(nil, m, false)
			if err := json.Unmarshal(canon, &req); err != nil {
				t.Fatalf("jsonrpc2 rejects %s: %v", canon, err)
			}
			if req.Method != m.method || req.Notif != (m.kind == kindNotification) || (!req.Notif && req.ID != m.id) {
				t.Fatalf("jsonrpc2 decoded %s as %+v, want %+v", canon, req, m)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		for line := range strings.SplitSeq(strings.TrimSuffix(out.String(), "\n"), "\n") {
			if line == "" {
				continue
			}
			var r struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := json.Unmarshal([]byte(line), &r); err != nil || r.Error == nil || r.ID == nil {
				t.Fatalf("output line %q is not an error response (%v)", line, err)
			}
		}

		// Through a real jsonrpc2.Conn, reading stops only at io.EOF.
		rec := &recordingStream{stream: newStream(bytes.NewReader(data), io.Discard, fuzzMaxLine, discardLogger(), false)}
		rec.onResponse = func(message) {}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // ends the Conn's context watcher
		conn := jsonrpc2.NewConn(ctx, rec, nopHandler{}, jsonrpc2.SetLogger(printfLogger{discardLogger()}))
		<-conn.DisconnectNotify()
		if err := rec.lastErr(); err != io.EOF {
			t.Fatalf("ReadObject stopped with %v, want io.EOF", err)
		}
	})
}

// checkRoundTrip encodes m and decodes it again.
func checkRoundTrip(t *testing.T, m message) {
	t.Helper()
	line := appendMessage(nil, m, true)
	if bytes.IndexByte(line, '\n') != len(line)-1 {
		t.Fatalf("encoded %+v as %q: not one line", m, line)
	}
	if !json.Valid(line) {
		t.Fatalf("encoded %+v as invalid JSON %q", m, line)
	}
	m2, bad := decodeLine(trimSpace(line))
	if bad != nil {
		t.Fatalf("re-decoding %q: %+v", line, bad)
	}
	if !reflect.DeepEqual(m, m2) {
		t.Fatalf("round trip of %q:\n got %+v\nwant %+v", line, m2, m)
	}
}

type nopHandler struct{}

func (nopHandler) Handle(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) {}

// recordingStream records the error that ended ReadObject.
type recordingStream struct {
	*stream
	mu  sync.Mutex
	err error
}

func (r *recordingStream) ReadObject(v any) error {
	err := r.stream.ReadObject(v)
	if err != nil {
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}
	return err
}

func (r *recordingStream) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
