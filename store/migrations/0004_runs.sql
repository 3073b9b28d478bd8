-- 0003: runs (docs/runs.md). A run is its event log: run_events is
-- append-only, one row per event in the order applied; runs is a
-- projection for listing (status, repository, the client's view as JSON),
-- rewritten with each event in the same transaction.

CREATE TABLE runs (
    id         TEXT PRIMARY KEY NOT NULL,
    cwd        TEXT NOT NULL,
    status     TEXT NOT NULL,
    run        TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE run_events (
    run_id  TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    type    TEXT NOT NULL,
    event   TEXT NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (run_id, seq)
);
