-- 0007: reserved (another change of this release lands here).
SELECT 1;
