-- 0006_calibration_trials: the trials each calibration was fitted to, and
-- those its fit left out as outliers, so that a calibration can be recomputed
-- without one of them (tessera-planner --invalidate-trial).
CREATE TABLE calibration_trials (
  calibration_id INTEGER NOT NULL REFERENCES calibrations (id),
  trial_id INTEGER NOT NULL REFERENCES trials (id),
  excluded INTEGER NOT NULL CHECK (excluded IN (0, 1)),  -- an outlier
  PRIMARY KEY (calibration_id, trial_id)
) WITHOUT ROWID;
CREATE INDEX calibration_trials_by_trial ON calibration_trials (trial_id);
