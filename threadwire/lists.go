package threadwire

import (
	"github.com/apserver/apserver/protocol"
	"github.com/apserver/apserver/store"
)

// Page cuts a list after the element whose key is cursor, limit long; the
// next cursor is the key of the last element returned when more follow.
func Page[T any](all []T, cursor *string, limit *int, key func(T) string) (protocol.PageResult[T], error) {
	start := 0
	if cursor != nil && *cursor != "" {
		start = -1
		for i, x := range all {
			if key(x) == *cursor {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return protocol.PageResult[T]{}, protocol.Errorf(protocol.ErrInvalidParams, "Invalid params: invalid cursor")
		}
	}
	rest := all[start:]
	res := protocol.PageResult[T]{Data: rest}
	if limit != nil && *limit > 0 && *limit < len(rest) {
		res.Data = rest[:*limit]
		next := key(res.Data[len(res.Data)-1])
		res.NextCursor = &next
	}
	if res.Data == nil {
		res.Data = []T{}
	}
	return res, nil
}

// ItemEntries are the items of turns (of the one turn turnID when it is
// given), oldest first, each with its turn; ok is false when turnID names
// none of them.
func ItemEntries(turns []protocol.Turn, turnID *string) (items []protocol.ThreadItemEntry, ok bool) {
	items = []protocol.ThreadItemEntry{}
	ok = turnID == nil
	for _, t := range turns {
		if turnID != nil && t.ID != *turnID {
			continue
		}
		ok = true
		for _, it := range t.Items {
			items = append(items, protocol.ThreadItemEntry{Item: it, TurnID: t.ID})
		}
	}
	return items, ok
}

// ListOptions are the store's options of thread/list's params.
func ListOptions(p protocol.ThreadListParams) store.ListOptions {
	o := store.ListOptions{}
	if p.Cursor != nil {
		o.Cursor = *p.Cursor
	}
	if p.Limit != nil {
		o.Limit = *p.Limit
	}
	if p.SortKey != nil && *p.SortKey != "created_at" { // recency and (without sections) section position follow updates
		o.SortKey = "updated_at"
	}
	o.Ascending = p.SortDirection != nil && *p.SortDirection == "asc"
	o.Archived = p.Archived != nil && *p.Archived
	o.Cwds, _ = p.Cwds()
	if p.SearchTerm != nil {
		o.SearchTerm = *p.SearchTerm
	}
	o.ModelProviders = p.ModelProviders
	if p.IncludedThreadIDs != nil {
		o.OnlyIDs, o.IDs = true, *p.IncludedThreadIDs
	}
	return o
}
