-- 0005 is reserved for a change made alongside the blueprints (0006).
-- This placeholder only keeps the numbers gapless on its own; the file
-- that owns the number replaces it (delete this one when it lands).
SELECT 1;
