-- 0010_trials_by_study_in_lease_order: a study's trials by status, and its
-- queued ones in the order leases take them (ListQueuedTrials: study, rung,
-- predicted tokens/s best first, id), so that an idle agent's poll reads
-- the first few rows of each study from the index instead of sorting every
-- queued trial of every open study (about 5,000 rows for 20 studies of 256
-- trials; a fleet of 2,000 agents polls ~500 times/s). It leads with
-- trials_by_study's columns, which it replaces.
CREATE INDEX trials_by_study_in_lease_order
  ON trials (study_id, status, rung, predicted_tokens_per_s DESC, id);
DROP INDEX trials_by_study;
