package contextwindow

import (
	"context"
	"errors"
	"strings"

	"github.com/apserver/apserver/compaction"
	"github.com/apserver/apserver/model"
)

// Stream runs one model request, calling fn with each event (session's
// scheduler caps them across threads).
type Stream func(ctx context.Context, c *model.Client, req model.Request, fn func(model.Event)) error

// Summarize asks the compaction model for the handoff summary of entries
// (already fitted to the window: compaction.FitSummaryInput). One the
// model refuses as too long drops the oldest entry and retries
// (compaction.RetryShorter). An empty summary is an error.
func Summarize(ctx context.Context, stream Stream, client *model.Client, modelName string, entries []compaction.Entry) (string, error) {
	for attempt := 0; ; attempt++ {
		req := model.Request{
			Model:        modelName,
			Instructions: compaction.Instructions,
			Input:        []model.Entry{{Kind: model.EntryUser, Text: compaction.SummaryRequest(entries)}},
		}
		var text, final strings.Builder
		err := stream(ctx, client, req, func(ev model.Event) {
			switch ev.Kind {
			case model.EvTextDelta:
				text.WriteString(ev.Text)
			case model.EvMessageDone:
				final.WriteString(ev.Text)
			}
		})
		var me *model.Error
		if errors.As(err, &me) && me.Kind == model.ErrKindContextWindow {
			if shorter, ok := compaction.RetryShorter(entries, attempt); ok {
				entries = shorter
				continue
			}
		}
		if err != nil {
			return "", err
		}
		s := final.String()
		if s == "" {
			s = text.String()
		}
		if strings.TrimSpace(s) == "" {
			return "", errors.New("the compaction model returned an empty summary")
		}
		return strings.TrimSpace(s), nil
	}
}

// Compacted is the history that replaces h as p plans it
// (compaction.Replace): the summary, the pinned context, the kept user
// messages (their images too) and the tail; inflight is how many of its
// entries are the step in flight.
func Compacted(h []model.Entry, p compaction.Plan) (hist []model.Entry, inflight int) {
	hist = append(hist, model.Entry{Kind: model.EntryUser, Text: p.Summary})
	if p.Pinned != "" {
		hist = append(hist, model.Entry{Kind: model.EntryUser, Text: p.Pinned})
	}
	for _, k := range p.Users {
		e := h[k.Index] // its images too
		e.Text = k.Text
		hist = append(hist, e)
	}
	hist = append(hist, h[p.Tail:]...)
	return hist, p.Inflight(len(h))
}
