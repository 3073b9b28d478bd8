package server

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session"
)

// longText is a string past protocol.LargeMin with what JSON escapes in it.
func longText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("x", i%97))
		b.WriteString(" <a href=\"x\">&</a>\t\\ é 😀 \u2028 \x01 \xff\n")
	}
	return b.String()
}

var emitted = regexp.MustCompile(`"emittedAtMs":\d+`)

// TestLargeNotificationWire: an item notification whose item carries a
// long string goes out byte for byte as the ordinary encoding writes it
// (the long string escaped by the writer, not copied into the line),
// in its place among the other lines, and the text comes back whole; the
// trace logs it whole too.
func TestLargeNotificationWire(t *testing.T) {
	long := longText(3 * protocol.LargeMin)
	msgs := []struct {
		method string
		params any
	}{
		{"item/started", protocol.ItemStartedNotification{Item: protocol.UserMessageItem{ID: "u1", Content: []protocol.UserInput{{Type: "text", Text: long}}}, ThreadID: "t1", TurnID: "r1", StartedAtMs: 5}},
		{"item/agentMessage/delta", map[string]string{"delta": "between"}},
		{"item/completed", protocol.ItemCompletedNotification{Item: protocol.AgentMessageItem{ID: "a1", Text: long}, ThreadID: "t1", TurnID: "r1", CompletedAtMs: 6}},
		{"item/completed", protocol.ItemCompletedNotification{Item: protocol.AgentMessageItem{ID: "a2", Text: "short"}, ThreadID: "t1", TurnID: "r1", CompletedAtMs: 7}},
	}
	var want bytes.Buffer
	for _, m := range msgs {
		lb := getLine()
		if err := lb.appendNotification(m.method, m.params); err != nil {
			t.Fatal(err)
		}
		want.Write(lb.b)
	}
	if _, ok := largeNotification(msgs[0].method, msgs[0].params); !ok {
		t.Fatal("largeNotification did not take the user message's notification")
	}

	var out, logs syncBuffer
	st := newStream(strings.NewReader(""), &out, 0, traceLogger(&logs), true)
	for _, m := range msgs {
		if err := st.notify(m.method, m.params); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	got := emitted.ReplaceAll([]byte(out.String()), []byte(`"emittedAtMs":0`))
	if w := emitted.ReplaceAll(want.Bytes(), []byte(`"emittedAtMs":0`)); !bytes.Equal(got, w) {
		t.Fatalf("output differs from the ordinary encoding at byte %d of %d", firstDiff(got, w), len(w))
	}
	lines := bytes.Split(bytes.TrimSuffix(got, []byte("\n")), []byte("\n"))
	if len(lines) != len(msgs) {
		t.Fatalf("%d lines, want %d", len(lines), len(msgs))
	}
	var completed struct {
		Params struct {
			Item struct{ Text string } `json:"item"`
		} `json:"params"`
	}
	if err := json.Unmarshal(lines[2], &completed); err != nil {
		t.Fatal(err)
	}
	if want := strings.ToValidUTF8(long, "\uFFFD"); completed.Params.Item.Text != want {
		t.Errorf("item/completed text: %d bytes back, want %d", len(completed.Params.Item.Text), len(want))
	}
	if n := strings.Count(logs.String(), "a href"); n < 2*strings.Count(long, "a href") {
		t.Errorf("the trace holds %d copies of the long text's anchors, want both lines whole", n)
	}
}

// TestLargeNotificationHub: behind a Hub, each connection following the
// thread gets the whole line, the one that does not follow it nothing.
func TestLargeNotificationHub(t *testing.T) {
	long := longText(protocol.LargeMin + 1)
	n := protocol.ItemCompletedNotification{Item: protocol.AgentMessageItem{ID: "a1", Text: long}, ThreadID: "t1", TurnID: "r1", CompletedAtMs: 6}
	lb := getLine()
	if err := lb.appendNotification("item/completed", n); err != nil {
		t.Fatal(err)
	}
	want := emitted.ReplaceAll(lb.b, []byte(`"emittedAtMs":0`))
	if _, ok := largeNotification("item/completed", n); !ok {
		t.Fatal("not large")
	}
	h := NewHub(discardLogger())
	var outs [3]syncBuffer
	var servers [3]*Server
	for i := range outs {
		s := New(strings.NewReader(""), &outs[i], Options{Logger: discardLogger(), Hub: h})
		s.state.Store(&connState{})
		h.attach(s)
		if i < 2 {
			h.mark(s, "t1")
		}
		servers[i] = s
	}
	notifyVia(h.Client(), "t1", "item/completed", n)
	for i, s := range servers {
		if err := s.st.Close(); err != nil {
			t.Fatal(err)
		}
		got := emitted.ReplaceAll([]byte(outs[i].String()), []byte(`"emittedAtMs":0`))
		if i == 2 {
			if len(got) != 0 {
				t.Errorf("connection not following the thread got %d bytes", len(got))
			}
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("connection %d: output differs at byte %d of %d", i, firstDiff(got, want), len(want))
		}
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func traceLogger(w *syncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestParamsReachHandlerAsSent: a request's params reach its handler as
// the client wrote them, not decoded into maps and encoded again on the
// way (which reordered members, escaped '<' and cost a 10 MiB message
// several copies), for a small line and for one past the read buffer the
// stream keeps; a notification's too.
func TestParamsReachHandlerAsSent(t *testing.T) {
	got := make(chan string, 4)
	c := startServer(t, Options{}, func(s *Server) {
		s.register("test/raw", func(ctx context.Context, raw json.RawMessage, reply session.Reply) {
			got <- string(raw)
			reply(struct{}{}, nil)
		})
		HandleNotification(s, "test/note", func(raw json.RawMessage) { got <- string(raw) })
	})
	c.initialize(nil)
	for _, params := range []string{
		`{"z":1, "a":"<b>&amp;", "n":1.50,"a2":[ ]}`,
		`{"text":"` + strings.Repeat("y", keepReadCap+10) + `","first":true}`,
	} {
		c.send(`{"id":5,"method":"test/raw","params":` + params + `}`)
		if m := c.recv(); m.Error != nil {
			t.Fatalf("test/raw: %s", m.raw)
		}
		if p := <-got; p != params {
			t.Errorf("handler got params %.80s…, want %.80s…", p, params)
		}
	}
	c.send(`{"method":"test/note","params":{"b":2,"a":"<"}}`)
	c.call(6, "test/raw", nil) // the notification was handled before this answer
	if p := <-got; p != `{"b":2,"a":"<"}` {
		t.Errorf("notification handler got %s", p)
	}
	if p := <-got; p != "" {
		t.Errorf("request without params: handler got %q, want none", p)
	}
}
