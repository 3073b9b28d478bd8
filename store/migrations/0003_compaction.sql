-- 0003: context compaction. A compaction is a tombstone, not a deletion:
-- every item stays in `items` (thread/read and thread/resume show them
-- all); a row here says that, for the model's prompt, the items before
-- item_seq are replaced by `history` (the summary and what is kept
-- verbatim). The prompt is built from the latest row on. Reverting the
-- compaction's turn drops the row, which undoes the compaction.

CREATE TABLE compactions (
    thread_id     TEXT NOT NULL,
    turn_id       TEXT NOT NULL,
    item_id       TEXT NOT NULL,
    item_seq      INTEGER NOT NULL, -- seq of the contextCompaction item
    summary       TEXT NOT NULL,
    history       TEXT NOT NULL,    -- JSON: the model history standing in for items before item_seq
    tokens_before INTEGER NOT NULL DEFAULT 0,
    tokens_after  INTEGER NOT NULL DEFAULT 0,
    auto          INTEGER NOT NULL DEFAULT 0,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (thread_id, item_seq),
    FOREIGN KEY (thread_id, turn_id) REFERENCES turns (thread_id, id) ON DELETE CASCADE
);
