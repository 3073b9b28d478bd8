-- 0001: threads, turns, items, the per-thread event log and a small KV table.
-- JSON columns are stored as TEXT and never interpreted by the store.

CREATE TABLE threads (
    id              TEXT PRIMARY KEY NOT NULL,
    name            TEXT NOT NULL DEFAULT '',
    preview         TEXT NOT NULL DEFAULT '',
    cwd             TEXT NOT NULL DEFAULT '',
    model           TEXT NOT NULL DEFAULT '',
    model_provider  TEXT NOT NULL DEFAULT '',
    approval_policy TEXT NOT NULL DEFAULT '',
    sandbox         TEXT NOT NULL DEFAULT '',
    forked_from_id  TEXT NOT NULL DEFAULT '',
    ephemeral       INTEGER NOT NULL DEFAULT 0,
    archived        INTEGER NOT NULL DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    settings        TEXT
);
CREATE INDEX threads_by_created ON threads (archived, created_at, id);
CREATE INDEX threads_by_updated ON threads (archived, updated_at, id);

CREATE TABLE turns (
    thread_id    TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    status       TEXT NOT NULL,
    error        TEXT,
    started_at   INTEGER NOT NULL,
    completed_at INTEGER NOT NULL DEFAULT 0,
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (thread_id, id),
    UNIQUE (thread_id, seq)
);
CREATE INDEX turns_in_progress ON turns (status) WHERE status = 'inProgress';

CREATE TABLE items (
    thread_id    TEXT NOT NULL,
    turn_id      TEXT NOT NULL,
    id           TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    type         TEXT NOT NULL,
    item         TEXT NOT NULL,
    history      TEXT,
    completed_at INTEGER NOT NULL,
    UNIQUE (thread_id, id),
    UNIQUE (thread_id, seq),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
);
-- No (thread_id, turn_id) index: TurnItems walks the thread by seq, and every
-- index is one more page written per item.

CREATE TABLE events (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    kind      TEXT NOT NULL,
    turn_id   TEXT NOT NULL DEFAULT '',
    item_id   TEXT NOT NULL DEFAULT '',
    payload   TEXT,
    at        INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
) WITHOUT ROWID; -- rows are small; one b-tree, one page written per append

CREATE TABLE state (
    key   TEXT PRIMARY KEY NOT NULL,
    value TEXT NOT NULL
);
