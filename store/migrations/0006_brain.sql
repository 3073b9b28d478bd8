-- 0007: the project brain (docs/brain.md). decisions is the projection of
-- decision_events, the append-only log of what changed a project's
-- decisions, written in the same transaction as the row it changes.
-- brain_dirty holds each project whose projections (.apserver/memory.md,
-- .apserver/snapshot.md) are older than the store: marked in the
-- transaction of the change, cleared once the files are written, and
-- regenerated at start for every project still marked, so a crash between
-- a change and its projection loses nothing.

CREATE TABLE decisions (
    id         TEXT PRIMARY KEY NOT NULL,
    cwd        TEXT NOT NULL,
    status     TEXT NOT NULL,
    decision   TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX decisions_by_cwd ON decisions (cwd, created_at, id);

CREATE TABLE decision_events (
    cwd         TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    decision_id TEXT NOT NULL,
    type        TEXT NOT NULL,
    event       TEXT NOT NULL,
    at          INTEGER NOT NULL,
    PRIMARY KEY (cwd, seq)
);

CREATE TABLE brain_dirty (
    cwd  TEXT PRIMARY KEY NOT NULL,
    mark INTEGER NOT NULL
);
