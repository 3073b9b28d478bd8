-- 0011: the tokens each run used (docs/manager.md#budgets). One row per
-- model response of a run's threads: the stage (planning, task, review),
-- the task, the model that answered and its usage. The manager sums a
-- project's rows of the day against its token and cost budgets.

CREATE TABLE run_usage (
    run_id        TEXT NOT NULL,
    stage         TEXT NOT NULL,
    task_id       TEXT NOT NULL DEFAULT '',
    model         TEXT NOT NULL DEFAULT '',
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    at            INTEGER NOT NULL
);
CREATE INDEX run_usage_run ON run_usage (run_id, at);
