package model

import (
	"context"
	"testing"
	"time"
)

// TestBadBaseURLNotRetried: a base URL that cannot work fails the first
// attempt with a configuration error, without retries or backoff.
func TestBadBaseURLNotRetried(t *testing.T) {
	for _, u := range []string{"/v1", "ftp://x", "localhost:8080", "http://", "https:///v1"} {
		for _, wire := range []Wire{WireResponses, WireChat} {
			c := NewClient(Provider{BaseURL: u, Wire: wire, MaxRetries: 5}, nil)
			slept := 0
			c.sleep = func(context.Context, time.Duration) error { slept++; return nil }
			var evs []Event
			err := c.Stream(context.Background(), Request{Model: "m"}, func(e Event) { evs = append(evs, e) })
			e := asModelError(t, err)
			if e.Kind != ErrKindConfig || e.Retryable {
				t.Errorf("Stream with base URL %q (%s) = %v (kind %s, retryable %v), want a configuration error", u, wire, err, e.Kind, e.Retryable)
			}
			if len(evs) != 0 || slept != 0 {
				t.Errorf("Stream with base URL %q (%s): %d events, %d sleeps, want none", u, wire, len(evs), slept)
			}
		}
	}
}

func TestCheckBaseURL(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://api.openai.com/v1", true},
		{"http://localhost:8080/v1", true},
		{"http://127.0.0.1:1234", true},
		{"/v1", false},
		{"ftp://x", false},
		{"localhost:8080", false},
		{"api.openai.com/v1", false},
		{"http://", false},
		{"", false},
	} {
		if err := CheckBaseURL(tc.url); (err == nil) != tc.ok {
			t.Errorf("CheckBaseURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
}
