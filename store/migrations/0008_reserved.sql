-- 0008: reserved for another change of this release; it does nothing
-- here. Migrations are numbered 1..n without a gap, and 0009 (thread
-- summaries) comes after it.
SELECT 1;
