package store

import (
	"context"
	"fmt"
)

// CursorAfter is the ListThreads cursor whose page starts just after t in
// the ordering (sortKey, ascending): the cursor of a page that a caller cut
// short at t (thread/search stops at its limit in the middle of a page).
func CursorAfter(t Thread, sortKey string, ascending bool) string {
	if sortKey == "" {
		sortKey = "created_at"
	}
	val := t.CreatedAt
	if sortKey == "updated_at" {
		val = t.UpdatedAt
	}
	return encodeCursor(cursor{Key: sortKey, Asc: ascending, Val: val, ID: t.ID})
}

// MessageItems returns, in order, the thread's user and agent messages
// whose stored JSON contains term (case-insensitive): a superset of the
// messages whose text does, which the caller checks.
func (s *Store) MessageItems(ctx context.Context, threadID, term string) ([]Item, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+itemCols+` FROM items WHERE thread_id = ?1
		AND type IN ('userMessage', 'agentMessage') AND (apserver_contains_fold(item, ?2) OR item = ?3) ORDER BY seq`, threadID, term, textArg(sideMarkers["item"]))
	if err != nil {
		return nil, fmt.Errorf("store: messages of %q: %w", threadID, err)
	}
	out, err := scanItems(rows)
	if err == nil {
		err = s.resolveItems(out)
	}
	if err != nil {
		return nil, fmt.Errorf("store: messages of %q: %w", threadID, err)
	}
	// An item read back from its side file was selected by its marker.
	kept := out[:0]
	for _, it := range out {
		if len(it.Item) < sideMin || containsFold(string(it.Item), term) {
			kept = append(kept, it)
		}
	}
	return kept, nil
}
