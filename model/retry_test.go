package model

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"testing"
	"time"
)

// okResponses streams a short successful Responses answer.
func okResponses(w http.ResponseWriter) {
	sseStart(w)
	sseWrite(w, rsEv("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"msg_1","delta":"ok"}`))
	sseWrite(w, rsEv("response.output_item.done", `{"type":"response.output_item.done","item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"ok"}]}}`))
	sseWrite(w, rsEv("response.completed", `{"type":"response.completed","response":{"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}}`))
}

func TestRetry429ThenSuccess(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusTooManyRequests)
			w.Write([]byte(`{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`))
			return
		}
		okResponses(w)
	})
	c := NewClient(fs.provider(WireResponses), nil)
	var slept []time.Duration
	c.sleep = func(ctx context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	evs, err := collect(t, c, context.Background(), Request{Model: "m"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mustEqual(t, "kinds", kinds(evs), "Retry TextDelta MessageDone Completed")
	mustEqual(t, "attempt", evs[0].Attempt, 1)
	mustEqual(t, "delay (Retry-After)", evs[0].Delay, time.Second)
	e := asModelError(t, evs[0].Err)
	mustEqual(t, "retry err status", e.HTTPStatus, 429)
	if len(slept) != 1 || slept[0] != time.Second {
		t.Errorf("slept %v, want [1s]", slept)
	}
	mustEqual(t, "hits", fs.hits.Load(), int32(2))
}

// retry-after-ms is honoured with a real sleep.
func TestRetryAfterMs(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "30")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		okResponses(w)
	})
	start := time.Now()
	evs, err := collect(t, NewClient(fs.provider(WireResponses), nil), context.Background(), Request{Model: "m"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mustEqual(t, "delay", evs[0].Delay, 30*time.Millisecond)
	if el := time.Since(start); el < 30*time.Millisecond {
		t.Errorf("returned after %v, before the Retry-After delay", el)
	}
}

func TestServerErrorsExhaustRetries(t *testing.T) {
	for _, wire := range []Wire{WireResponses, WireChat} {
		t.Run(string(wire), func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				w.WriteHeader(http.StatusInternalServerError)
				w.Write([]byte(`{"error":{"message":"The server had an error","type":"server_error"}}`))
			})
			p := fs.provider(wire)
			p.MaxRetries = 3
			evs, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
			e := asModelError(t, err)
			mustEqual(t, "kind", e.Kind, ErrKindTooManyAttempts)
			mustEqual(t, "status", e.HTTPStatus, 500)
			mustEqual(t, "retryable", e.Retryable, false)
			mustEqual(t, "hits", fs.hits.Load(), int32(4))
			mustEqual(t, "kinds", kinds(evs), "Retry Retry Retry")
			for i, ev := range evs {
				mustEqual(t, "attempt", ev.Attempt, i+1)
				if ev.Delay <= 0 || ev.Delay > MaxBackoff {
					t.Errorf("delay %v", ev.Delay)
				}
			}
			var last *Error
			if !errors.As(errors.Unwrap(err), &last) || last.Kind != ErrKindServer {
				t.Errorf("unwrapped %v, want the last server error", errors.Unwrap(err))
			}
			if !contains(e.Message, "The server had an error") {
				t.Errorf("message %q", e.Message)
			}
		})
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	cases := []struct {
		status int
		body   string
		kind   ErrorKind
		msg    string
	}{
		{400, `{"error":{"message":"Invalid value for 'input': bad.","type":"invalid_request_error","param":"input","code":null}}`, ErrKindBadRequest, "Invalid value for 'input': bad."},
		{401, `{"error":{"message":"Incorrect API key provided.","type":"invalid_request_error","code":"invalid_api_key"}}`, ErrKindUnauthorized, "Incorrect API key provided."},
		{400, `{"error":{"message":"Your input exceeds the context window of this model.","code":"context_length_exceeded"}}`, ErrKindContextWindow, "context window"},
		// vLLM's flat error shape.
		{400, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","code":400}`, ErrKindContextWindow, "4096"},
		{404, `model "x" not found`, ErrKindBadRequest, `model "x" not found`},
		{429, `{"error":{"message":"You exceeded your current quota.","code":"insufficient_quota"}}`, ErrKindOther, "quota"},
	}
	for _, tc := range cases {
		for _, wire := range []Wire{WireResponses, WireChat} {
			t.Run(http.StatusText(tc.status)+"/"+string(wire), func(t *testing.T) {
				fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
					w.WriteHeader(tc.status)
					w.Write([]byte(tc.body))
				})
				evs, err := collect(t, NewClient(fs.provider(wire), nil), context.Background(), Request{Model: "m"})
				e := asModelError(t, err)
				mustEqual(t, "kind", e.Kind, tc.kind)
				mustEqual(t, "status", e.HTTPStatus, tc.status)
				mustEqual(t, "hits", fs.hits.Load(), int32(1))
				mustEqual(t, "events", len(evs), 0)
				if !contains(e.Message, tc.msg) || !contains(e.Error(), tc.msg) {
					t.Errorf("message %q / %q lacks %q", e.Message, e.Error(), tc.msg)
				}
			})
		}
	}
}

func TestIdleTimeoutAfterOutput(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		sseStart(w)
		sseWrite(w, rsEv("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","delta":"partial"}`))
		stall(r)
	})
	p := fs.provider(WireResponses)
	p.IdleTimeout = shortIdle
	start := time.Now()
	evs, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
	e := asModelError(t, err)
	mustEqual(t, "kind", e.Kind, ErrKindIdleTimeout)
	mustEqual(t, "kinds", kinds(evs), "TextDelta")
	mustEqual(t, "hits (no retry after output)", fs.hits.Load(), int32(1))
	if el := time.Since(start); el < shortIdle || el > 10*time.Second {
		t.Errorf("took %v with a %v idle timeout", el, shortIdle)
	}
}

func TestIdleBeforeOutputIsRetried(t *testing.T) {
	for _, stallHeaders := range []bool{false, true} {
		name := "after headers"
		if stallHeaders {
			name = "before headers"
		}
		t.Run(name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					if !stallHeaders {
						sseStart(w)
						sseWrite(w, rsEv("response.created", `{"type":"response.created","response":{"id":"r"}}`))
					}
					stall(r)
					return
				}
				okResponses(w)
			})
			p := fs.provider(WireResponses)
			p.IdleTimeout = shortIdle
			evs, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
			if err != nil {
				t.Fatalf("Stream: %v", err)
			}
			mustEqual(t, "kinds", kinds(evs), "Retry TextDelta MessageDone Completed")
			mustEqual(t, "retry kind", asModelError(t, evs[0].Err).Kind, ErrKindIdleTimeout)
		})
	}
}

func TestCancelMidStream(t *testing.T) {
	for _, wire := range []Wire{WireResponses, WireChat} {
		t.Run(string(wire), func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				sseStart(w)
				if wire == WireChat {
					sseWrite(w, chatEv(`{"id":"c","choices":[{"index":0,"delta":{"content":"x"}}]}`))
				} else {
					sseWrite(w, rsEv("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","delta":"x"}`))
				}
				stall(r)
			})
			p := fs.provider(wire)
			p.IdleTimeout = 30 * time.Second
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var cancelled time.Time
			err := NewClient(p, nil).Stream(ctx, Request{Model: "m"}, func(ev Event) {
				if ev.Kind == EvTextDelta {
					go func() { time.Sleep(10 * time.Millisecond); cancelled = time.Now(); cancel() }()
				}
			})
			if !errors.Is(err, context.Canceled) || err != context.Canceled {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if el := time.Since(cancelled); el > time.Second {
				t.Errorf("Stream returned %v after cancel", el)
			}
		})
	}
}

// Cancelling while waiting between attempts returns at once too.
func TestCancelDuringBackoff(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "30")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	err := NewClient(fs.provider(WireChat), nil).Stream(ctx, Request{Model: "m"}, func(ev Event) {
		if ev.Kind == EvRetry {
			cancel()
		}
	})
	if err != context.Canceled {
		t.Fatalf("err = %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v", el)
	}
}

func TestDisconnectMidStreamNotRetried(t *testing.T) {
	for _, wire := range []Wire{WireResponses, WireChat} {
		for _, abrupt := range []bool{false, true} {
			name := string(wire) + "/clean close"
			if abrupt {
				name = string(wire) + "/connection reset"
			}
			t.Run(name, func(t *testing.T) {
				fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
					sseStart(w)
					if wire == WireChat {
						sseWrite(w, chatEv(`{"id":"c","choices":[{"index":0,"delta":{"content":"half"}}]}`))
					} else {
						sseWrite(w, rsEv("response.output_text.delta", `{"type":"response.output_text.delta","item_id":"m","delta":"half"}`))
					}
					if abrupt {
						conn, _, err := http.NewResponseController(w).Hijack()
						if err == nil {
							conn.Close()
						}
					}
				})
				evs, err := collect(t, NewClient(fs.provider(wire), nil), context.Background(), Request{Model: "m"})
				e := asModelError(t, err)
				mustEqual(t, "kind", e.Kind, ErrKindDisconnected)
				mustEqual(t, "kinds", kinds(evs), "TextDelta")
				mustEqual(t, "hits", fs.hits.Load(), int32(1))
			})
		}
	}
}

func TestConnectionDropBeforeOutputIsRetried(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		okResponses(w)
	})
	evs, err := collect(t, NewClient(fs.provider(WireResponses), nil), context.Background(), Request{Model: "m"})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	mustEqual(t, "kinds", kinds(evs), "Retry TextDelta MessageDone Completed")
	mustEqual(t, "retry kind", asModelError(t, evs[0].Err).Kind, ErrKindConnection)
}

func TestConnectionRefused(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {})
	p := fs.provider(WireChat)
	fs.Close()
	p.MaxRetries = 1
	evs, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
	e := asModelError(t, err)
	mustEqual(t, "kind", e.Kind, ErrKindTooManyAttempts)
	mustEqual(t, "kinds", kinds(evs), "Retry")
	var last *Error
	if !errors.As(e.Unwrap(), &last) || last.Kind != ErrKindConnection {
		t.Errorf("last error %v", e.Unwrap())
	}
}

func TestNegativeMaxRetriesMeansNone(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(http.StatusBadGateway)
	})
	p := fs.provider(WireResponses)
	p.MaxRetries = -1
	_, err := collect(t, NewClient(p, nil), context.Background(), Request{Model: "m"})
	mustEqual(t, "kind", asModelError(t, err).Kind, ErrKindTooManyAttempts)
	mustEqual(t, "hits", fs.hits.Load(), int32(1))
}

func TestBackoff(t *testing.T) {
	c := NewClient(Provider{}, nil)
	mustEqual(t, "defaults", c.maxRetries, DefaultMaxRetries)
	for retry, base := range []time.Duration{200, 400, 800, 1600, 3200, 6400, 10000, 10000} {
		base *= time.Millisecond
		d := c.backoff(retry, -1)
		lo, hi := base*3/4, min(base*5/4, MaxBackoff)
		if d < lo || d > hi {
			t.Errorf("retry %d: %v not in [%v, %v]", retry, d, lo, hi)
		}
	}
	mustEqual(t, "retry-after", c.backoff(0, 3*time.Second), 3*time.Second)
	mustEqual(t, "retry-after cap", c.backoff(0, time.Hour), MaxRetryAfter)
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	h := func(kv ...string) http.Header {
		x := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			x.Set(kv[i], kv[i+1])
		}
		return x
	}
	mustEqual(t, "none", parseRetryAfter(h(), now), time.Duration(-1))
	mustEqual(t, "seconds", parseRetryAfter(h("Retry-After", "2"), now), 2*time.Second)
	mustEqual(t, "ms wins", parseRetryAfter(h("Retry-After", "2", "retry-after-ms", "150"), now), 150*time.Millisecond)
	mustEqual(t, "date", parseRetryAfter(h("Retry-After", now.Add(5*time.Second).Format(http.TimeFormat)), now), 5*time.Second)
	mustEqual(t, "garbage", parseRetryAfter(h("Retry-After", "soon"), now), time.Duration(-1))
}

// Concurrent Streams on one Client do not share state.
func TestConcurrentStreams(t *testing.T) {
	fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) { okResponses(w) })
	c := NewClient(fs.provider(WireResponses), nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			evs, err := collect(t, c, context.Background(), Request{Model: "m"})
			if err != nil || kinds(evs) != "TextDelta MessageDone Completed" {
				t.Errorf("err %v, events %s", err, kinds(evs))
			}
		})
	}
	wg.Wait()
}
