-- 0006: reserved (a placeholder; another change takes this number).
SELECT 1;
