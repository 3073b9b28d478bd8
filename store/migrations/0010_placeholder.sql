-- 0010: reserved for another branch's migration (this file is a placeholder so
-- that migrations stay numbered 1..n; the merge takes that branch's file).
SELECT 1;
