-- 0008: the manager (docs/manager.md). project_settings holds a
-- workspace's manager settings (JSON owned by package manager);
-- manager_ticks is the append-only log of ticks: each tick's input (the
-- state it decided on) and its decision, so that a tick replays;
-- manager_claims records each blueprint task the manager started a run
-- for: the primary key makes "never twice the same task" hold across
-- processes and crashes.

CREATE TABLE project_settings (
    cwd        TEXT PRIMARY KEY NOT NULL,
    settings   TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE manager_ticks (
    cwd      TEXT NOT NULL,
    seq      INTEGER NOT NULL,
    input    TEXT NOT NULL,
    decision TEXT NOT NULL,
    result   TEXT NOT NULL,
    at       INTEGER NOT NULL,
    PRIMARY KEY (cwd, seq)
);

CREATE TABLE manager_claims (
    blueprint_id TEXT NOT NULL,
    task_id      TEXT NOT NULL,
    cwd          TEXT NOT NULL,
    run_id       TEXT NOT NULL DEFAULT '',
    at           INTEGER NOT NULL,
    PRIMARY KEY (blueprint_id, task_id)
);
CREATE INDEX manager_claims_cwd ON manager_claims (cwd, at);
