package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// BlueprintRow is a blueprint (table blueprints). Primary is the version
// blueprint/read shows by default: the newest ready one, or the first while
// it is ingested.
type BlueprintRow struct {
	ID, Cwd, Title, Primary string
	CreatedAt, UpdatedAt    int64 // unix ms
}

// BlueprintVersionRow is one ingestion of a blueprint's document. Document
// is only filled by BlueprintVersion (lists leave it empty).
type BlueprintVersionRow struct {
	ID, BlueprintID       string
	Number                int
	ParentID, ReplacedBy  string
	Status, Error         string
	ChunkTokens           int
	PageNodes             int
	ChunksTotal           int
	ChunksDone, NodeCount int
	Bytes                 int // the document's size
	Document              string
	CreatedAt, UpdatedAt  int64
}

// BlueprintEvent is an entry of a blueprint's event log; Event is opaque
// JSON owned by the caller.
type BlueprintEvent struct {
	Seq       int64
	VersionID string
	Type      string
	Event     json.RawMessage
	At        int64
}

// CreateBlueprintVersion stores a new version and its first event in one
// transaction; bp is created when it does not exist yet (then v becomes
// its primary version).
func (s *Store) CreateBlueprintVersion(ctx context.Context, bp BlueprintRow, v BlueprintVersionRow, event json.RawMessage) error {
	if bp.ID == "" || v.ID == "" || v.Status == "" {
		return errors.New("store: create blueprint version: empty id or status")
	}
	if err := checkJSON("blueprint event", event); err != nil {
		return err
	}
	at := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO blueprints (id, cwd, title, primary_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO UPDATE SET updated_at = excluded.updated_at`, bp.ID, bp.Cwd, bp.Title, v.ID, at, at); err != nil {
			return classify(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO blueprint_versions (id, blueprint_id, number, parent_id, status, chunk_tokens, page_nodes, chunks_total, bytes, document, created_at, updated_at)
			VALUES (?, ?, (SELECT COALESCE(MAX(number), 0) + 1 FROM blueprint_versions WHERE blueprint_id = ?), ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			v.ID, bp.ID, bp.ID, v.ParentID, v.Status, v.ChunkTokens, v.PageNodes, v.ChunksTotal, len(v.Document), v.Document, at, at); err != nil {
			return classify(err)
		}
		return appendBlueprintEvent(ctx, tx, bp.ID, v.ID, "version.created", event, at)
	})
	if err != nil {
		return fmt.Errorf("store: create version %q of blueprint %q: %w", v.ID, bp.ID, err)
	}
	return nil
}

func appendBlueprintEvent(ctx context.Context, tx *sql.Tx, bpID, versionID, typ string, event json.RawMessage, at int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO blueprint_events (blueprint_id, seq, version_id, type, event, at)
		VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM blueprint_events WHERE blueprint_id = ?), ?, ?, ?, ?)`,
		bpID, bpID, versionID, typ, string(event), at)
	return classify(err)
}

// SaveBlueprintChunk records a chunk's outline (opaque JSON) as done.
// Saving a chunk twice keeps the first.
func (s *Store) SaveBlueprintChunk(ctx context.Context, versionID string, idx int, found json.RawMessage, nodes int) error {
	if err := checkJSON("chunk outline", found); err != nil {
		return err
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO blueprint_chunks (version_id, idx, found, nodes) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`,
			versionID, idx, string(found), nodes)
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("store: save chunk %d of version %q: %w", idx, versionID, err)
	}
	return nil
}

// BlueprintChunks returns the outlines of the version's chunks that are
// done, by chunk index.
func (s *Store) BlueprintChunks(ctx context.Context, versionID string) (map[int]json.RawMessage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT idx, found FROM blueprint_chunks WHERE version_id = ?`, versionID)
	if err != nil {
		return nil, fmt.Errorf("store: chunks of version %q: %w", versionID, err)
	}
	defer rows.Close()
	out := map[int]json.RawMessage{}
	for rows.Next() {
		var i int
		var f string
		if err := rows.Scan(&i, &f); err != nil {
			return nil, err
		}
		out[i] = json.RawMessage(f)
	}
	return out, rows.Err()
}

// BlueprintNodeRow is a node of a ready version's tree; Node is opaque JSON.
type BlueprintNodeRow struct {
	Ord  int
	ID   string
	Node json.RawMessage
}

// FinishBlueprintVersion stores a version's tree (and the tasks carried
// into it) and marks it ready, in one transaction: it becomes its blueprint's primary version, and the version
// it was made from is replaced by it.
func (s *Store) FinishBlueprintVersion(ctx context.Context, versionID string, nodes []BlueprintNodeRow, tasks []BlueprintTaskRow, event json.RawMessage) error {
	at := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		var bpID, parent, status string
		if err := tx.QueryRowContext(ctx, `SELECT blueprint_id, parent_id, status FROM blueprint_versions WHERE id = ?`, versionID).Scan(&bpID, &parent, &status); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return ErrNotFound
			}
			return err
		}
		if status != "ingesting" {
			return fmt.Errorf("version is %s", status)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM blueprint_nodes WHERE version_id = ?`, versionID); err != nil {
			return err
		}
		st, err := tx.PrepareContext(ctx, `INSERT INTO blueprint_nodes (version_id, ord, id, node) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer st.Close()
		for _, n := range nodes {
			if _, err := st.ExecContext(ctx, versionID, n.Ord, n.ID, string(n.Node)); err != nil {
				return classify(err)
			}
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM blueprint_tasks WHERE version_id = ?`, versionID); err != nil {
			return err
		}
		for _, t := range tasks {
			if _, err := tx.ExecContext(ctx, `INSERT INTO blueprint_tasks (version_id, node_id, ord, id, task) VALUES (?, ?, ?, ?, ?)`,
				versionID, t.NodeID, t.Ord, t.ID, string(t.Task)); err != nil {
				return classify(err)
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE blueprint_versions SET status = 'ready', node_count = ?, updated_at = ? WHERE id = ?`, len(nodes), at, versionID); err != nil {
			return err
		}
		if parent != "" {
			if _, err := tx.ExecContext(ctx, `UPDATE blueprint_versions SET replaced_by = ?, updated_at = ? WHERE id = ?`, versionID, at, parent); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE blueprints SET primary_version = ?, updated_at = ? WHERE id = ?`, versionID, at, bpID); err != nil {
			return err
		}
		return appendBlueprintEvent(ctx, tx, bpID, versionID, "version.ready", event, at)
	})
	if err != nil {
		return fmt.Errorf("store: finish version %q: %w", versionID, err)
	}
	return nil
}

// EndBlueprintVersion ends an ingestion that did not finish: status is
// "failed" or "cancelled", errMsg says why. A version that already ended
// is left alone.
func (s *Store) EndBlueprintVersion(ctx context.Context, versionID, status, errMsg string, event json.RawMessage) error {
	at := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		var bpID string
		if err := tx.QueryRowContext(ctx, `SELECT blueprint_id FROM blueprint_versions WHERE id = ? AND status = 'ingesting'`, versionID).Scan(&bpID); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE blueprint_versions SET status = ?, error = ?, updated_at = ? WHERE id = ?`, status, errMsg, at, versionID); err != nil {
			return err
		}
		return appendBlueprintEvent(ctx, tx, bpID, versionID, "version."+status, event, at)
	})
	if err != nil {
		return fmt.Errorf("store: end version %q: %w", versionID, err)
	}
	return nil
}

const versionCols = `v.id, v.blueprint_id, v.number, v.parent_id, v.replaced_by, v.status, v.error, v.chunk_tokens, v.page_nodes, v.chunks_total,
	(SELECT COUNT(*) FROM blueprint_chunks c WHERE c.version_id = v.id), v.node_count, v.bytes, v.created_at, v.updated_at`

func scanVersion(sc interface{ Scan(...any) error }, v *BlueprintVersionRow, extra ...any) error {
	return sc.Scan(append([]any{&v.ID, &v.BlueprintID, &v.Number, &v.ParentID, &v.ReplacedBy, &v.Status, &v.Error, &v.ChunkTokens, &v.PageNodes, &v.ChunksTotal,
		&v.ChunksDone, &v.NodeCount, &v.Bytes, &v.CreatedAt, &v.UpdatedAt}, extra...)...)
}

// BlueprintVersion returns a version with its document. An unknown
// version wraps ErrNotFound.
func (s *Store) BlueprintVersion(ctx context.Context, id string) (BlueprintVersionRow, error) {
	var v BlueprintVersionRow
	err := scanVersion(s.r.QueryRowContext(ctx, `SELECT `+versionCols+`, v.document FROM blueprint_versions v WHERE v.id = ?`, id), &v, &v.Document)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return v, fmt.Errorf("store: blueprint version %q: %w", id, err)
	}
	return v, nil
}

// BlueprintVersions returns a blueprint's versions, oldest first, without
// their documents.
func (s *Store) BlueprintVersions(ctx context.Context, bpID string) ([]BlueprintVersionRow, error) {
	return s.versions(ctx, `WHERE v.blueprint_id = ? ORDER BY v.number`, bpID)
}

// IngestingBlueprintVersions returns the versions whose ingestion has not
// ended (to take up after a restart), oldest first.
func (s *Store) IngestingBlueprintVersions(ctx context.Context) ([]BlueprintVersionRow, error) {
	return s.versions(ctx, `WHERE v.status = 'ingesting' ORDER BY v.created_at, v.id`)
}

func (s *Store) versions(ctx context.Context, where string, args ...any) ([]BlueprintVersionRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+versionCols+` FROM blueprint_versions v `+where, args...)
	if err != nil {
		return nil, fmt.Errorf("store: blueprint versions: %w", err)
	}
	defer rows.Close()
	var out []BlueprintVersionRow
	for rows.Next() {
		var v BlueprintVersionRow
		if err := scanVersion(rows, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// Blueprint returns a blueprint. An unknown id wraps ErrNotFound.
func (s *Store) Blueprint(ctx context.Context, id string) (BlueprintRow, error) {
	var b BlueprintRow
	err := s.r.QueryRowContext(ctx, `SELECT id, cwd, title, primary_version, created_at, updated_at FROM blueprints WHERE id = ?`, id).
		Scan(&b.ID, &b.Cwd, &b.Title, &b.Primary, &b.CreatedAt, &b.UpdatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		err = ErrNotFound
	}
	if err != nil {
		return b, fmt.Errorf("store: blueprint %q: %w", id, err)
	}
	return b, nil
}

// Blueprints lists the blueprints (of cwd when not empty), newest first.
func (s *Store) Blueprints(ctx context.Context, cwd string) ([]BlueprintRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, cwd, title, primary_version, created_at, updated_at FROM blueprints
		WHERE ? = '' OR cwd = ? ORDER BY created_at DESC, id DESC`, cwd, cwd)
	if err != nil {
		return nil, fmt.Errorf("store: blueprints: %w", err)
	}
	defer rows.Close()
	var out []BlueprintRow
	for rows.Next() {
		var b BlueprintRow
		if err := rows.Scan(&b.ID, &b.Cwd, &b.Title, &b.Primary, &b.CreatedAt, &b.UpdatedAt); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// BlueprintNodes returns a ready version's tree in reading order.
func (s *Store) BlueprintNodes(ctx context.Context, versionID string) ([]json.RawMessage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT node FROM blueprint_nodes WHERE version_id = ? ORDER BY ord`, versionID)
	if err != nil {
		return nil, fmt.Errorf("store: nodes of version %q: %w", versionID, err)
	}
	defer rows.Close()
	var out []json.RawMessage
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, json.RawMessage(n))
	}
	return out, rows.Err()
}

// UpdateBlueprintNodes rewrites nodes of a version and appends the event
// that changed them, in one transaction. Every node must exist.
func (s *Store) UpdateBlueprintNodes(ctx context.Context, bpID, versionID string, nodes []BlueprintNodeRow, typ string, event json.RawMessage) error {
	return s.UpdateBlueprint(ctx, bpID, versionID, nodes, nil, typ, event)
}

// UpdateBlueprint rewrites nodes and tasks (by id) of a version and
// appends the event that changed them, in one transaction. Every node and
// task must exist (else ErrNotFound, and nothing is written).
func (s *Store) UpdateBlueprint(ctx context.Context, bpID, versionID string, nodes []BlueprintNodeRow, tasks []BlueprintTaskRow, typ string, event json.RawMessage) error {
	if err := checkJSON("blueprint event", event); err != nil {
		return err
	}
	at := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		for _, n := range nodes {
			res, err := tx.ExecContext(ctx, `UPDATE blueprint_nodes SET node = ? WHERE version_id = ? AND id = ?`, string(n.Node), versionID, n.ID)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return fmt.Errorf("node %q: %w", n.ID, ErrNotFound)
			}
		}
		for _, t := range tasks {
			res, err := tx.ExecContext(ctx, `UPDATE blueprint_tasks SET task = ? WHERE version_id = ? AND id = ?`, string(t.Task), versionID, t.ID)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return fmt.Errorf("task %q: %w", t.ID, ErrNotFound)
			}
		}
		return appendBlueprintEvent(ctx, tx, bpID, versionID, typ, event, at)
	})
	if err != nil {
		return fmt.Errorf("store: update version %q: %w", versionID, err)
	}
	return nil
}

// BlueprintEvents returns a blueprint's event log in order.
func (s *Store) BlueprintEvents(ctx context.Context, bpID string) ([]BlueprintEvent, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT seq, version_id, type, event, at FROM blueprint_events WHERE blueprint_id = ? ORDER BY seq`, bpID)
	if err != nil {
		return nil, fmt.Errorf("store: events of blueprint %q: %w", bpID, err)
	}
	defer rows.Close()
	var out []BlueprintEvent
	for rows.Next() {
		var e BlueprintEvent
		var ev string
		if err := rows.Scan(&e.Seq, &e.VersionID, &e.Type, &ev, &e.At); err != nil {
			return nil, err
		}
		e.Event = json.RawMessage(ev)
		out = append(out, e)
	}
	return out, rows.Err()
}

// BlueprintTaskRow is a task made for a node; Task is opaque JSON.
type BlueprintTaskRow struct {
	NodeID string
	Ord    int
	ID     string
	Task   json.RawMessage
}

// ReplaceBlueprintTasks replaces a node's tasks, rewrites nodes (whose
// status follows them), and appends the event, in one transaction.
func (s *Store) ReplaceBlueprintTasks(ctx context.Context, bpID, versionID, nodeID string, tasks []BlueprintTaskRow, nodes []BlueprintNodeRow, event json.RawMessage) error {
	if err := checkJSON("blueprint event", event); err != nil {
		return err
	}
	at := s.now().UnixMilli()
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM blueprint_tasks WHERE version_id = ? AND node_id = ?`, versionID, nodeID); err != nil {
			return err
		}
		for _, t := range tasks {
			if _, err := tx.ExecContext(ctx, `INSERT INTO blueprint_tasks (version_id, node_id, ord, id, task) VALUES (?, ?, ?, ?, ?)`,
				versionID, nodeID, t.Ord, t.ID, string(t.Task)); err != nil {
				return classify(err)
			}
		}
		for _, n := range nodes {
			if _, err := tx.ExecContext(ctx, `UPDATE blueprint_nodes SET node = ? WHERE version_id = ? AND id = ?`, string(n.Node), versionID, n.ID); err != nil {
				return err
			}
		}
		return appendBlueprintEvent(ctx, tx, bpID, versionID, "tasks.replaced", event, at)
	})
	if err != nil {
		return fmt.Errorf("store: tasks of node %q: %w", nodeID, err)
	}
	return nil
}

// BlueprintTasks returns a version's tasks, by node then order.
func (s *Store) BlueprintTasks(ctx context.Context, versionID string) ([]BlueprintTaskRow, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT node_id, ord, id, task FROM blueprint_tasks WHERE version_id = ? ORDER BY node_id, ord`, versionID)
	if err != nil {
		return nil, fmt.Errorf("store: tasks of version %q: %w", versionID, err)
	}
	defer rows.Close()
	var out []BlueprintTaskRow
	for rows.Next() {
		var t BlueprintTaskRow
		var raw string
		if err := rows.Scan(&t.NodeID, &t.Ord, &t.ID, &raw); err != nil {
			return nil, err
		}
		t.Task = json.RawMessage(raw)
		out = append(out, t)
	}
	return out, rows.Err()
}
