package threadsearch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/session/port"
	"github.com/apserver/apserver/store"
)

// Service answers thread/search and thread/search/stream. Any goroutine
// may use it.
type Service struct {
	// Store opens (or waits for) the store (session.Manager.Store).
	Store func() (*store.Store, error)
	// Thread is a stored thread as the wire shows it, with its live status
	// (session.Manager.WireThread).
	Thread func(store.Thread) protocol.Thread
}

const (
	defaultSearchLimit = 25
	maxSearchLimit     = 200
	searchScanPage     = 50 // threads read from the store at a time
	snippetBefore      = 40 // runes of context before a match
	snippetLen         = 160
)

// Search implements thread/search and thread/search/stream: the
// threads whose name, preview, or the text of a user or agent message
// contains the search term (case-insensitive), in the requested order, one
// page of at most limit. partial, when not nil, receives each batch of
// matches as the scan finds them (thread/search/partial), before the
// answer. A ctx canceled mid-scan ends the search with an error wrapping
// port.ErrSearchCancelled; it runs on the caller's goroutine.
func (ts *Service) Search(ctx context.Context, p protocol.ThreadSearchParams, partial func([]protocol.ThreadSearchMatch)) (protocol.ThreadSearchResult, error) {
	res := protocol.ThreadSearchResult{Data: []protocol.ThreadSearchMatch{}}
	db, err := ts.Store()
	if err != nil {
		return res, err
	}
	term := strings.TrimSpace(p.SearchTerm)
	limit := defaultSearchLimit
	if p.Limit != nil && *p.Limit > 0 {
		limit = min(*p.Limit, maxSearchLimit)
	}
	key := "created_at"
	if p.SortKey != nil && *p.SortKey != "created_at" { // recency follows updates
		key = "updated_at"
	}
	asc := p.SortDirection != nil && *p.SortDirection == "asc"
	o := store.ListOptions{Limit: searchScanPage, SortKey: key, Ascending: asc, Archived: p.Archived != nil && *p.Archived}
	if p.Cursor != nil {
		o.Cursor = *p.Cursor
	}
	// The store's prefilter compares the term with the stored JSON: a term
	// with a character JSON may escape is checked on the text alone.
	prefilter := term
	if strings.ContainsAny(term, "\"\\<>&\u2028\u2029") || strings.ContainsFunc(term, func(r rune) bool { return r < 0x20 }) {
		prefilter = ""
	}
	var first *store.Thread
	for {
		rows, next, err := db.ListThreads(ctx, o)
		if err != nil {
			if ctx.Err() != nil {
				return res, fmt.Errorf("%w: %w", port.ErrSearchCancelled, ctx.Err())
			}
			if errors.Is(err, store.ErrBadCursor) {
				return res, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: invalid cursor")
			}
			return res, err
		}
		var batch []protocol.ThreadSearchMatch
		full := false
		for i, r := range rows {
			if ctx.Err() != nil {
				return res, fmt.Errorf("%w: %w", port.ErrSearchCancelled, ctx.Err())
			}
			snippet, ok, err := threadMatch(ctx, db, r, term, prefilter)
			if err != nil {
				if ctx.Err() != nil {
					return res, fmt.Errorf("%w: %w", port.ErrSearchCancelled, ctx.Err())
				}
				return res, err
			}
			if !ok {
				continue
			}
			if first == nil {
				first = &r
			}
			batch = append(batch, protocol.ThreadSearchMatch{Snippet: snippet, Thread: ts.Thread(r)})
			if len(res.Data)+len(batch) == limit {
				if i < len(rows)-1 || next != "" {
					c := store.CursorAfter(r, key, asc)
					res.NextCursor = &c
				}
				full = true
				break
			}
		}
		if len(batch) > 0 {
			res.Data = append(res.Data, batch...)
			if partial != nil {
				partial(batch)
			}
		}
		if full || next == "" {
			break
		}
		o.Cursor = next
	}
	if first != nil {
		// Reversing the direction from here lists what came before this page.
		c := store.CursorAfter(*first, key, !asc)
		res.BackwardsCursor = &c
	}
	return res, nil
}

// threadMatch reports whether thread t matches term, with the snippet
// around its first match: the name, else the preview, else the first
// message.
func threadMatch(ctx context.Context, db *store.Store, t store.Thread, term, prefilter string) (string, bool, error) {
	for _, s := range []string{t.Name, t.Preview} {
		if sn, ok := snippet(s, term); ok {
			return sn, true, nil
		}
	}
	items, err := db.MessageItems(ctx, t.ID, prefilter)
	if err != nil {
		return "", false, err
	}
	for _, it := range items {
		if sn, ok := snippet(messageText(it), term); ok {
			return sn, true, nil
		}
	}
	return "", false, nil
}

// messageText is the visible text of a stored user or agent message.
func messageText(it store.Item) string {
	switch it.Type {
	case "agentMessage":
		var a protocol.AgentMessageItem
		if json.Unmarshal(it.Item, &a) == nil {
			return a.Text
		}
	case "userMessage":
		var u protocol.UserMessageItem
		if json.Unmarshal(it.Item, &u) == nil {
			var b strings.Builder
			for _, c := range u.Content {
				if c.Type == "text" {
					if b.Len() > 0 {
						b.WriteByte('\n')
					}
					b.WriteString(c.Text)
				}
			}
			return b.String()
		}
	}
	return ""
}

// snippet finds term in text (case-insensitive) and returns the text
// around it on one line: up to snippetBefore runes before the match and
// snippetLen runes in all.
func snippet(text, term string) (string, bool) {
	if text == "" {
		return "", false
	}
	at := indexFold(text, term)
	if at < 0 {
		return "", false
	}
	start := at
	for n := 0; n < snippetBefore && start > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(text[:start])
		start -= size
	}
	end := start
	for n := 0; n < snippetLen && end < len(text); n++ {
		_, size := utf8.DecodeRuneInString(text[end:])
		end += size
	}
	return strings.Join(strings.Fields(text[start:end]), " "), true
}

// indexFold is the byte offset of the first case-insensitive occurrence of
// term in text, or -1.
func indexFold(text, term string) int {
	n := len(term)
	for i := 0; i+n <= len(text); {
		if strings.EqualFold(text[i:i+n], term) {
			return i
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	// A fold that changes the byte length (rare): the lowercase forms.
	if j := strings.Index(strings.ToLower(text), strings.ToLower(term)); j >= 0 {
		if j < len(text) && utf8.RuneStart(text[j]) {
			return j
		}
		return 0
	}
	return -1
}
