package model

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is an OpenAI-compatible model server at the HTTP level: each
// request is handed to handle with its 1-based attempt number.
type fakeServer struct {
	*httptest.Server
	hits atomic.Int32

	mu      sync.Mutex
	bodies  [][]byte
	headers []http.Header
	paths   []string
}

func newFakeServer(t *testing.T, handle func(w http.ResponseWriter, r *http.Request, attempt int)) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := int(fs.hits.Add(1))
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, body)
		fs.headers = append(fs.headers, r.Header.Clone())
		fs.paths = append(fs.paths, r.URL.Path)
		fs.mu.Unlock()
		handle(w, r, n)
	}))
	t.Cleanup(fs.Close)
	return fs
}

func (fs *fakeServer) provider(wire Wire) Provider {
	return Provider{
		Name:        "fake",
		BaseURL:     fs.URL + "/v1",
		APIKey:      "sk-test",
		Wire:        wire,
		BackoffBase: time.Millisecond,
		// Long: on a loaded machine a short idle timeout fires in tests
		// that do not expect it. Tests of the idle timeout set shortIdle.
		IdleTimeout: 30 * time.Second,
	}
}

// shortIdle is the idle timeout of the tests that wait for it to fire.
const shortIdle = 100 * time.Millisecond

func (fs *fakeServer) path(i int) string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.paths[i]
}

func (fs *fakeServer) header(i int) http.Header {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.headers[i]
}

func (fs *fakeServer) body(t *testing.T, i int) map[string]any {
	t.Helper()
	fs.mu.Lock()
	defer fs.mu.Unlock()
	var m map[string]any
	if err := json.Unmarshal(fs.bodies[i], &m); err != nil {
		t.Fatalf("request body %d: %v: %s", i, err, fs.bodies[i])
	}
	return m
}

// sseStart writes the headers of an event stream.
func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// sseWrite writes raw SSE text and flushes it.
func sseWrite(w http.ResponseWriter, text string) {
	io.WriteString(w, text)
	w.(http.Flusher).Flush()
}

// rsEv formats one Responses event the way OpenAI does: an event line
// naming the type, then the JSON data line.
func rsEv(typ, data string) string {
	return "event: " + typ + "\ndata: " + data + "\n\n"
}

func chatEv(data string) string { return "data: " + data + "\n\n" }

// stall blocks until the client goes away or the test ends.
func stall(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(10 * time.Second):
	}
}

// collect runs Stream and returns the events it emitted.
func collect(t *testing.T, c *Client, ctx context.Context, req Request) ([]Event, error) {
	t.Helper()
	var evs []Event
	err := c.Stream(ctx, req, func(ev Event) { evs = append(evs, ev) })
	return evs, err
}

func kinds(evs []Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(ev.Kind.String())
	}
	return b.String()
}

func asModelError(t *testing.T, err error) *Error {
	t.Helper()
	e, ok := err.(*Error)
	if !ok {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	return e
}

func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	g, _ := json.Marshal(got)
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON for %s: %v", what, err)
	}
	wb, _ := json.Marshal(w)
	if string(g) != string(wb) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, wb)
	}
}

func mustEqual[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}
