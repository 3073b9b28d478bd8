package contextwindow

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/model"
	"github.com/apserver/apserver/model/scripted"
)

func plainStream(ctx context.Context, c *model.Client, req model.Request, fn func(model.Event)) error {
	return c.Stream(ctx, req, fn)
}

func scriptedClient(t *testing.T, sc scripted.Script) (*model.Client, *scripted.Server) {
	t.Helper()
	srv, err := scripted.Start(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return model.NewClient(model.Provider{Name: "s", BaseURL: srv.URL(), IdleTimeout: 5 * time.Second}, nil), srv
}

// TestSummarize: the summary is the model's text, trimmed; a refusal as
// too long drops the oldest entry and asks again; an empty answer is an
// error.
func TestSummarize(t *testing.T) {
	entries := []compaction.Entry{{Kind: compaction.User, Text: "OLDEST question"}, {Kind: compaction.Assistant, Text: "newest answer"}}
	c, srv := scriptedClient(t, scripted.Script{Rules: []scripted.Rule{
		{Match: "OLDEST", Steps: []scripted.Step{{HTTPError: 400, ErrorMessage: "This model's maximum context length is 8192 tokens."}}},
		{Match: "newest", Steps: []scripted.Step{{Text: "  The work so far.  "}}},
	}})
	got, err := Summarize(context.Background(), plainStream, c, "m", entries)
	if err != nil || got != "The work so far." {
		t.Fatalf("Summarize = %q, %v; want the trimmed summary", got, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[0].LastUserText, "OLDEST") || strings.Contains(reqs[1].LastUserText, "OLDEST") {
		t.Errorf("requests: %d; want the second without the oldest entry", len(reqs))
	}

	empty, _ := scriptedClient(t, scripted.Script{Default: []scripted.Step{{Text: "   "}}})
	if got, err := Summarize(context.Background(), plainStream, empty, "m", entries); err == nil || !strings.Contains(err.Error(), "empty summary") {
		t.Errorf("Summarize of a blank answer = %q, %v; want the empty-summary error", got, err)
	}
}

func TestCompacted(t *testing.T) {
	h := []model.Entry{
		{Kind: model.EntryUser, Text: "first", Images: []string{"data:image/png;base64,AA=="}},
		{Kind: model.EntryAssistant, Text: "a"},
		{Kind: model.EntryUser, Text: "second"},
		{Kind: model.EntryToolCall, CallID: "c", Name: "exec_command"},
		{Kind: model.EntryToolOutput, CallID: "c", Output: "ok"},
	}
	p := compaction.Plan{Summary: "SUMMARY", Pinned: "PINNED", Users: []compaction.Kept{{Index: 0, Text: "first (handled)"}, {Index: 2, Text: "second"}}, Tail: 3}
	hist, inflight := Compacted(h, p)
	want := []model.Entry{
		{Kind: model.EntryUser, Text: "SUMMARY"}, {Kind: model.EntryUser, Text: "PINNED"},
		{Kind: model.EntryUser, Text: "first (handled)", Images: []string{"data:image/png;base64,AA=="}},
		{Kind: model.EntryUser, Text: "second"}, h[3], h[4],
	}
	if !reflect.DeepEqual(hist, want) || inflight != 2 {
		t.Errorf("Compacted = %+v, %d; want %+v, 2", hist, inflight, want)
	}
	if h[0].Text != "first" {
		t.Error("Compacted changed the history it read")
	}
}
