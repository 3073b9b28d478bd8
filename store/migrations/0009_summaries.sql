-- 0009: conversation summaries of the project brain (docs/brain.md). Each
-- thread that belongs to a project keeps one rolling summary, rewritten
-- when the thread goes idle after new turns; turns is how many turns it
-- covers. It goes with its thread.

CREATE TABLE thread_summaries (
    thread_id  TEXT PRIMARY KEY NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    cwd        TEXT NOT NULL,
    summary    TEXT NOT NULL,
    turns      INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX thread_summaries_by_cwd ON thread_summaries (cwd, updated_at);
