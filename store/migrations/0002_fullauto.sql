-- 0002: full auto. A run per thread, its receipts (every decision and every
-- automatic approval, with the full inputs), the server requests a run is
-- waiting on (re-sent with the same id after a restart) and the hidden
-- inputs that started continuation turns (part of the model history, never
-- shown as items).

CREATE TABLE fullauto_runs (
    thread_id  TEXT PRIMARY KEY NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    state      TEXT NOT NULL,
    run        TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE receipts (
    thread_id   TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    id          TEXT NOT NULL UNIQUE,
    kind        TEXT NOT NULL,
    turn_id     TEXT NOT NULL DEFAULT '',
    input       TEXT NOT NULL,
    output      TEXT NOT NULL,
    policy_hash TEXT NOT NULL DEFAULT '',
    executed    INTEGER NOT NULL DEFAULT 0,
    override    TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
);

CREATE TABLE pending_requests (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    request_id INTEGER NOT NULL,
    method     TEXT NOT NULL,
    params     TEXT NOT NULL,
    resume     TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, request_id)
);

CREATE TABLE hidden_inputs (
    thread_id  TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    turn_id    TEXT NOT NULL,
    text       TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (thread_id, turn_id)
);
