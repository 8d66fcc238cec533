-- 0007_study_owner: who submitted each study (the caller's principal name,
-- proto/principals.h), so that only its owner or an admin may cancel it.
-- '' for studies submitted before, or to a planner that does not tell
-- callers apart: those any caller that may cancel studies may cancel.
ALTER TABLE studies ADD COLUMN owner TEXT NOT NULL DEFAULT '';
