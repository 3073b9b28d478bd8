package model

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/model/scripted"
)

func endlessProvider(t *testing.T, wire Wire, step scripted.Step) Provider {
	t.Helper()
	srv, err := scripted.Start(scripted.Script{Default: []scripted.Step{step}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return Provider{Name: "scripted", BaseURL: srv.URL(), Wire: wire, MaxRetries: -1, IdleTimeout: 10 * time.Second}
}

var bothWires = []Wire{WireResponses, WireChat}

// TestOutputLimitCutsEndlessStream: an endless stream is cut once it has
// streamed MaxOutputBytes, with ErrKindOutputLimit, on both wires.
func TestOutputLimitCutsEndlessStream(t *testing.T) {
	for _, wire := range bothWires {
		t.Run(string(wire), func(t *testing.T) {
			p := endlessProvider(t, wire, scripted.Step{Endless: true, DeltaText: strings.Repeat("x", 100)})
			p.MaxOutputBytes = 64 << 10
			c := NewClient(p, nil)
			var text int
			err := c.Stream(context.Background(), Request{Model: "m", Input: []Entry{{Kind: EntryUser, Text: "go"}}}, func(ev Event) {
				if ev.Kind == EvTextDelta {
					text += len(ev.Text)
				}
			})
			e := asModelError(t, err)
			if e.Kind != ErrKindOutputLimit {
				t.Fatalf("Stream = %v, want an output limit error", err)
			}
			if text < 64<<10 || text > 64<<10+100 {
				t.Errorf("streamed %d bytes of text before the cut, want the cap (%d) plus at most one delta", text, 64<<10)
			}
		})
	}
}

// TestResponseTimeCutsEndlessStream: an endless (slow) stream is cut after
// MaxResponseTime with ErrKindResponseTimeout, on both wires.
func TestResponseTimeCutsEndlessStream(t *testing.T) {
	for _, wire := range bothWires {
		t.Run(string(wire), func(t *testing.T) {
			p := endlessProvider(t, wire, scripted.Step{Endless: true, InterDelta: time.Millisecond})
			p.MaxResponseTime = 300 * time.Millisecond
			c := NewClient(p, nil)
			start := time.Now()
			deltas := 0
			err := c.Stream(context.Background(), Request{Model: "m"}, func(ev Event) { deltas++ })
			e := asModelError(t, err)
			if e.Kind != ErrKindResponseTimeout {
				t.Fatalf("Stream = %v, want a response timeout", err)
			}
			if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
				t.Errorf("cut after %s, want about 300ms", d)
			}
			if deltas == 0 {
				t.Errorf("no delta before the cut")
			}
		})
	}
}

// TestResponseTimeBeforeOutput: a server that never answers is cut by the
// response time limit too, even when the idle timeout is longer.
func TestResponseTimeBeforeOutput(t *testing.T) {
	p := endlessProvider(t, WireResponses, scripted.Step{Hang: true})
	p.MaxResponseTime = 200 * time.Millisecond
	err := NewClient(p, nil).Stream(context.Background(), Request{Model: "m"}, func(Event) {})
	if e := asModelError(t, err); e.Kind != ErrKindResponseTimeout {
		t.Fatalf("Stream = %v, want a response timeout", err)
	}
}

// TestSSEFilter: event:, id:, retry: and comment lines never reach
// go-openai; other non-data lines pass up to a budget; data lines pass
// whole, however they are split; an overlong line fails the read.
func TestSSEFilter(t *testing.T) {
	in := "event: response.output_text.delta\nid: 7\nretry: 10\n: keep-alive\n" +
		"data: {\"a\":1}\n\n" + "  data: {\"b\":2}\r\n" + "{\"error\":\"x\"}\n" + strings.Repeat("event: e\n", 1000)
	out, err := io.ReadAll(newSSEFilter(io.NopCloser(strings.NewReader(in)), 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	want := "data: {\"a\":1}\n\n" + "  data: {\"b\":2}\r\n" + "{\"error\":\"x\"}\n"
	if string(out) != want {
		t.Errorf("filtered = %q, want %q", out, want)
	}

	junk := strings.Repeat("junk line\n", 2*maxOtherBytes/10)
	out, _ = io.ReadAll(newSSEFilter(io.NopCloser(strings.NewReader(junk+"data: end\n")), 1<<20))
	if len(out) > maxOtherBytes+20 || !strings.HasSuffix(string(out), "data: end\n") {
		t.Errorf("passed %d bytes of junk (ends %q), want at most %d and the data line", len(out), out[max(0, len(out)-20):], maxOtherBytes)
	}

	long := "data: " + strings.Repeat("y", 200<<10) + "\n"
	out, err = io.ReadAll(newSSEFilter(io.NopCloser(strings.NewReader(long)), 1<<20))
	if err != nil || string(out) != long {
		t.Errorf("a long data line under the limit: %d bytes, %v", len(out), err)
	}
	_, err = io.ReadAll(newSSEFilter(io.NopCloser(strings.NewReader(long)), 100<<10))
	if !errors.Is(err, errLineTooLong) {
		t.Errorf("a line over the limit: err %v, want errLineTooLong", err)
	}
}

// TestOverlongLineIsOutputLimit: a stream line with no end is cut with an
// output limit error instead of being read into memory.
func TestOverlongLineIsOutputLimit(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, attempt int) {
		sseStart(w)
		chunk := strings.Repeat("z", 64<<10)
		sseWrite(w, `data: {"type":"response.output_text.delta","delta":"`)
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	})
	p := fs.provider(WireResponses)
	p.MaxOutputBytes = 16 << 10
	err := NewClient(p, nil).Stream(context.Background(), Request{Model: "m"}, func(Event) {})
	if e := asModelError(t, err); e.Kind != ErrKindOutputLimit {
		t.Fatalf("Stream = %v, want an output limit error", err)
	}
}
