package store

import (
	"context"
	"fmt"
)

// BlueprintEventSeq returns the seq of a blueprint's newest event (0 when
// it has none). Every write of a version's nodes or tasks appends an event
// in the same transaction, so while this seq is unchanged the blueprint's
// nodes and tasks are too: a cheap key for caches of what is computed
// from them, good across processes sharing the database.
func (s *Store) BlueprintEventSeq(ctx context.Context, bpID string) (int64, error) {
	var seq int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM blueprint_events WHERE blueprint_id = ?`, bpID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("store: event seq of blueprint %q: %w", bpID, err)
	}
	return seq, nil
}
