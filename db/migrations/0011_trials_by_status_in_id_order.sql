-- 0011_trials_by_status_in_id_order: trials by status, in id order within
-- a status (an index keeps its rows in key order and then rowid, which is
-- the trial id). A study's refit reads the newest max_calibration_samples
-- ok trials of its GPU (status = 'ok' ORDER BY id DESC LIMIT n): with only
-- trials_by_lease (status, lease_expires_at_us) sqlite read every ok trial
-- of the history and sorted them (0.18 s a refit at 48,000 trials, once
-- per advance); this index walks the newest ones first and stops at n.
CREATE INDEX trials_by_status_in_id_order ON trials (status);
