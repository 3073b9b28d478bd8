package protocol

import (
	"encoding/json"
	"strings"
)

// Methods Codex 0.171 added that its clients call (docs/protocol.md,
// "Codex 0.171"): thread/search and its streaming form, their cancels,
// modelProvider/default/set and thread/realtime/list.

// MaxSearchTermBytes is the longest searchTerm thread/search/stream
// accepts, after trimming surrounding whitespace (Codex's limit).
const MaxSearchTermBytes = 65536

// ThreadSearchParams are the params of thread/search and
// thread/search/stream. sourceKinds, currentAccountOnly and
// includeAttachedThreads are accepted and have no effect: every apserver
// thread is an interactive one of the local user.
type ThreadSearchParams struct {
	SearchTerm             string   `json:"searchTerm"`
	Cursor                 *string  `json:"cursor,omitempty"`
	Limit                  *int     `json:"limit,omitempty"`
	SortKey                *string  `json:"sortKey,omitempty"`       // created_at | updated_at | recency_at
	SortDirection          *string  `json:"sortDirection,omitempty"` // asc | desc
	Archived               *bool    `json:"archived,omitempty"`
	SourceKinds            []string `json:"sourceKinds,omitempty"`
	CurrentAccountOnly     bool     `json:"currentAccountOnly,omitempty"`
	IncludeAttachedThreads bool     `json:"includeAttachedThreads,omitempty"`
}

// Validate checks searchTerm (required, not blank, at most
// MaxSearchTermBytes once trimmed), limit, sortKey and sortDirection.
func (p *ThreadSearchParams) Validate() error {
	term := strings.TrimSpace(p.SearchTerm)
	switch {
	case term == "":
		return Errorf(ErrInvalidParams, "Invalid params: `searchTerm` must not be empty")
	case len(term) > MaxSearchTermBytes:
		return Errorf(ErrInvalidParams, "Invalid params: `searchTerm` is %d bytes, at most %d", len(term), MaxSearchTermBytes)
	case p.Limit != nil && *p.Limit < 0:
		return Errorf(ErrInvalidParams, "Invalid params: `limit` must not be negative")
	}
	if p.SortKey != nil {
		switch *p.SortKey {
		case "created_at", "updated_at", "recency_at":
		default:
			return Errorf(ErrInvalidParams, "Invalid params: unknown `sortKey` %q, expected created_at, updated_at or recency_at", *p.SortKey)
		}
	}
	if p.SortDirection != nil && *p.SortDirection != "asc" && *p.SortDirection != "desc" {
		return Errorf(ErrInvalidParams, "Invalid params: unknown `sortDirection` %q, expected asc or desc", *p.SortDirection)
	}
	return nil
}

// ThreadSearchMatch is one thread found by a search, with the text around
// the first match.
type ThreadSearchMatch struct {
	Snippet string `json:"snippet"`
	Thread  Thread `json:"thread"`
}

// ThreadSearchResult is the answer to thread/search and
// thread/search/stream: one page of matches in the requested order.
type ThreadSearchResult struct {
	Data            []ThreadSearchMatch `json:"data"`
	NextCursor      *string             `json:"nextCursor"`
	BackwardsCursor *string             `json:"backwardsCursor"`
}

// ThreadSearchPartialNotification is thread/search/partial: matches of a
// running thread/search/stream, sent before its answer, in discovery order.
type ThreadSearchPartialNotification struct {
	RequestID json.RawMessage     `json:"requestId"`
	Data      []ThreadSearchMatch `json:"data"`
}

// ThreadSearchCancelParams are the params of thread/search/cancel and
// thread/search/stream/cancel: the id of the search to stop, on the same
// connection.
type ThreadSearchCancelParams struct {
	RequestID json.RawMessage `json:"requestId"`
}

// Validate requires requestId to be a string or an integer.
func (p *ThreadSearchCancelParams) Validate() error {
	r := strings.TrimSpace(string(p.RequestID))
	if r == "" || r == "null" || (r[0] != '"' && !isInteger(r)) {
		return Errorf(ErrInvalidParams, "Invalid params: `requestId` must be a string or an integer")
	}
	return nil
}

func isInteger(s string) bool {
	var n json.Number
	if json.Unmarshal([]byte(s), &n) != nil {
		return false
	}
	_, err := n.Int64()
	return err == nil
}

// ModelProviderDefaultSetParams are modelProvider/default/set's params.
type ModelProviderDefaultSetParams struct {
	ProviderID string `json:"providerId"`
}

// Validate requires providerId.
func (p *ModelProviderDefaultSetParams) Validate() error {
	if p.ProviderID == "" {
		return Errorf(ErrInvalidParams, "Invalid params: missing field `providerId`")
	}
	return nil
}

// ConfigWriteResult is Codex's ConfigWriteResponse, the answer to
// modelProvider/default/set.
type ConfigWriteResult struct {
	Status             string          `json:"status"` // ok | okOverridden
	Version            string          `json:"version"`
	FilePath           string          `json:"filePath"`
	OverriddenMetadata json.RawMessage `json:"overriddenMetadata"`
}

// ThreadRealtimeListParams are thread/realtime/list's params; apserver
// reads only threadId (it has no realtime sessions).
type ThreadRealtimeListParams struct {
	ThreadID string `json:"threadId"`
}

// Validate requires threadId.
func (p *ThreadRealtimeListParams) Validate() error {
	if p.ThreadID == "" {
		return Errorf(ErrInvalidParams, "Invalid params: missing field `threadId`")
	}
	return nil
}

// ThreadRealtimeListResult is thread/realtime/list's answer.
type ThreadRealtimeListResult struct {
	Coverage                  string            `json:"coverage"` // unsupported | pending | ready
	Data                      []json.RawMessage `json:"data"`
	NextCursor                *string           `json:"nextCursor"`
	ProjectedThroughItemIndex int64             `json:"projectedThroughItemIndex"`
	SnapshotEnd               int64             `json:"snapshotEnd"`
}
