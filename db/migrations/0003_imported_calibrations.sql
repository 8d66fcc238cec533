-- 0003_imported_calibrations: calibration files a user imported for a GPU
-- type (`tessera calibration import`, `tessera submit --calibration`), kept
-- whole as tessera-calibration/1 JSON: the coefficients, their spreads and
-- the measured collectives every later study on that GPU starts from.
CREATE TABLE imported_calibrations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  gpu TEXT NOT NULL CHECK (gpu <> ''),
  file_json TEXT NOT NULL,
  source TEXT NOT NULL,  -- what the user named it (a file name)
  imported_at_us INTEGER NOT NULL
);
CREATE INDEX imported_calibrations_by_gpu ON imported_calibrations (gpu, id);
