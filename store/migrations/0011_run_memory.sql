-- 0011: the runs' sections of a project's .apserver/memory.md
-- (docs/brain.md). In a project that keeps decisions the brain owns the
-- file and renders it from the store: the decisions, then these sections
-- ("## Run …", one per run, replaced when the run writes it again),
-- oldest first. A section is stored, with the project marked in
-- brain_dirty, before it is projected, so a kill -9 between a run's end
-- and the rewrite of memory.md loses nothing.

CREATE TABLE run_memory (
    cwd     TEXT NOT NULL,
    run_id  TEXT NOT NULL,
    section TEXT NOT NULL,
    at      INTEGER NOT NULL,
    PRIMARY KEY (cwd, run_id)
);
