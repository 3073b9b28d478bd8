package model

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestErrorHints: the errors a newcomer meets first name what to change.
// A provider's 401 says "You didn't provide an API key" without the
// variable apserver reads; a base URL without /v1 gets "404 page not
// found" without the URL that was called.
func TestErrorHints(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		setup  func(*Provider, *fakeServer)
		want   []string
		absent []string
	}{
		{name: "no key", status: 401, body: `{"error":{"message":"You didn't provide an API key."}}`,
			setup: func(p *Provider, _ *fakeServer) { p.APIKey, p.APIKeyEnv = "", "OPENAI_API_KEY" },
			want:  []string{"You didn't provide an API key.", "set OPENAI_API_KEY", `provider "fake"`}},
		{name: "no key, no variable", status: 401, body: `{"error":{"message":"missing key"}}`,
			setup: func(p *Provider, _ *fakeServer) { p.APIKey, p.APIKeyEnv = "", "" },
			want:  []string{"missing key", "api_key_env"}},
		{name: "refused key", status: 401, body: `{"error":{"message":"Incorrect API key provided"}}`,
			setup: func(p *Provider, _ *fakeServer) { p.APIKeyEnv = "MY_KEY" },
			want:  []string{"Incorrect API key provided", "the key in MY_KEY was refused"}, absent: []string{"sk-test"}},
		{name: "no /v1", status: 404, body: "404 page not found",
			setup: func(p *Provider, fs *fakeServer) { p.BaseURL = fs.URL },
			want:  []string{"404 page not found", "POST ", "/responses", "serve under /v1"}},
		{name: "with /v1", status: 404, body: "404 page not found",
			setup:  func(p *Provider, fs *fakeServer) {},
			want:   []string{"POST ", "/v1/responses", "base URL"},
			absent: []string{"/v1/v1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, _ int) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			})
			p := fs.provider(WireResponses)
			p.MaxRetries = -1
			tc.setup(&p, fs)
			err := NewClient(p, nil).Stream(context.Background(), Request{Model: "m"}, func(Event) {})
			if err == nil {
				t.Fatal("Stream succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(err.Error(), a) {
					t.Errorf("error %q contains %q", err, a)
				}
			}
		})
	}
}
