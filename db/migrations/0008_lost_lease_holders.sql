-- 0008_lost_lease_holders: who held a trial's last lease when it ended
-- without a report (expired, agent gone, infrastructure failure), so that
-- a late report of a trial not leased again is taken instead of refused
-- (issue 28: a finished result is never lost). Agent ids joined by ',' in
-- gang-rank order; '' once the trial is leased again or reported.
ALTER TABLE trials ADD COLUMN lost_lease_agents TEXT NOT NULL DEFAULT '';
