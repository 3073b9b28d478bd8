-- 0006: blueprints (docs/blueprints.md). A blueprint is a specification
-- ingested into a plan tree; each ingestion is a version that keeps its
-- document (so an ingestion resumes after a crash from its own bytes).
-- blueprint_chunks records each chunk whose outline is done: a resumed job
-- never asks the model for those again. blueprint_nodes is the tree of a
-- ready version in reading order; blueprint_tasks the tasks made for a
-- node (blueprint/node/tasks); blueprint_events is the append-only log
-- of what changed a blueprint (ingestions, human edits, statuses), written
-- in the same transaction as the rows it changes.

CREATE TABLE blueprints (
    id              TEXT PRIMARY KEY NOT NULL,
    cwd             TEXT NOT NULL,
    title           TEXT NOT NULL,
    primary_version TEXT NOT NULL,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);

CREATE TABLE blueprint_versions (
    id           TEXT PRIMARY KEY NOT NULL,
    blueprint_id TEXT NOT NULL REFERENCES blueprints (id) ON DELETE CASCADE,
    number       INTEGER NOT NULL,
    parent_id    TEXT NOT NULL DEFAULT '',
    replaced_by  TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    chunk_tokens INTEGER NOT NULL,
    page_nodes   INTEGER NOT NULL,
    chunks_total INTEGER NOT NULL,
    node_count   INTEGER NOT NULL DEFAULT 0,
    bytes        INTEGER NOT NULL,
    document     TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX blueprint_versions_by_blueprint ON blueprint_versions (blueprint_id, number);

CREATE TABLE blueprint_chunks (
    version_id TEXT NOT NULL REFERENCES blueprint_versions (id) ON DELETE CASCADE,
    idx        INTEGER NOT NULL,
    found      TEXT NOT NULL,
    nodes      INTEGER NOT NULL,
    PRIMARY KEY (version_id, idx)
);

CREATE TABLE blueprint_nodes (
    version_id TEXT NOT NULL REFERENCES blueprint_versions (id) ON DELETE CASCADE,
    ord        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    node       TEXT NOT NULL,
    PRIMARY KEY (version_id, ord)
);
CREATE UNIQUE INDEX blueprint_nodes_by_id ON blueprint_nodes (version_id, id);

CREATE TABLE blueprint_tasks (
    version_id TEXT NOT NULL REFERENCES blueprint_versions (id) ON DELETE CASCADE,
    node_id    TEXT NOT NULL,
    ord        INTEGER NOT NULL,
    id         TEXT NOT NULL,
    task       TEXT NOT NULL,
    PRIMARY KEY (version_id, node_id, ord)
);
CREATE UNIQUE INDEX blueprint_tasks_by_id ON blueprint_tasks (version_id, id);

CREATE TABLE blueprint_events (
    blueprint_id TEXT NOT NULL REFERENCES blueprints (id) ON DELETE CASCADE,
    seq          INTEGER NOT NULL,
    version_id   TEXT NOT NULL,
    type         TEXT NOT NULL,
    event        TEXT NOT NULL,
    at           INTEGER NOT NULL,
    PRIMARY KEY (blueprint_id, seq)
);
