-- 0009_result_checksums: a checksum of each stored result (the trial's
-- result columns, db/result_checksum.h), set with the result and checked
-- when the store opens with its integrity check, so that a silent change
-- (a digit of tokens_per_s edited outside the planner) is refused like a
-- damaged page. NULL: no result yet, or a result stored before this
-- migration (sealed at the next open).
ALTER TABLE trials ADD COLUMN result_checksum TEXT;
