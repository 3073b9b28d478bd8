-- 0008: the event log of a thread's full-auto run. The run's machine
-- (package fullauto) is rebuilt by replaying it; fullauto_runs stays as
-- its projection (listed by state, read by fullAuto/status), and a run
-- stored before this migration, with no log, is read from there. seq 0
-- is the log's base (the thread's turn as the run found it); events
-- follow from 1.

CREATE TABLE fullauto_events (
    thread_id TEXT NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    at_ms     INTEGER NOT NULL,
    entry     TEXT NOT NULL,
    PRIMARY KEY (thread_id, seq)
);
