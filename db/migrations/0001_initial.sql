-- 0001_initial: studies, their trials and per-step metrics, the agents that
-- run trials, the agents' probes, and calibrations of the cost model.
--
-- Conventions: times are microseconds since the Unix epoch (UTC) in columns
-- named *_at_us; booleans are 0/1; statuses are lower-case names checked by
-- CHECK constraints; NULL means "not known yet" (no lease, no result).

CREATE TABLE studies (
  id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused
  name TEXT NOT NULL,
  spec_json TEXT NOT NULL,               -- the StudySpec as JSON
  model TEXT NOT NULL,                   -- preset name or "custom"
  gpu TEXT NOT NULL,                     -- GPU name, e.g. "H100-SXM"
  nodes INTEGER NOT NULL CHECK (nodes >= 1),
  gpus_per_node INTEGER NOT NULL CHECK (gpus_per_node >= 1),
  trial_budget INTEGER NOT NULL DEFAULT 0 CHECK (trial_budget >= 0),
  time_budget_s REAL NOT NULL DEFAULT 0 CHECK (time_budget_s >= 0),
  status TEXT NOT NULL
    CHECK (status IN ('queued', 'running', 'done', 'cancelled', 'failed')),
  status_reason TEXT NOT NULL DEFAULT '',
  recommendation_json TEXT,              -- NULL until the planner sets one
  created_at_us INTEGER NOT NULL,
  updated_at_us INTEGER NOT NULL
);
-- ListStudies: newest first, optionally by status, model, gpu.
CREATE INDEX studies_by_created ON studies (created_at_us, id);
CREATE INDEX studies_by_status ON studies (status, created_at_us, id);
CREATE INDEX studies_by_model ON studies (model, gpu, created_at_us, id);
CREATE INDEX studies_by_gpu ON studies (gpu, nodes, gpus_per_node);

CREATE TABLE agents (
  id TEXT PRIMARY KEY NOT NULL,
  hostname TEXT NOT NULL,
  backend TEXT NOT NULL CHECK (backend IN ('cpu', 'cuda')),
  gpu_name TEXT NOT NULL DEFAULT '',
  gpu_count INTEGER NOT NULL CHECK (gpu_count >= 0),
  memory_bytes INTEGER NOT NULL CHECK (memory_bytes >= 0),  -- per GPU (cuda)
  driver TEXT NOT NULL DEFAULT '',
  interconnect TEXT NOT NULL DEFAULT '',  -- "nvlink", "pcie", "none", ...
  cpu_ranks INTEGER NOT NULL DEFAULT 0 CHECK (cpu_ranks >= 0),
  state TEXT NOT NULL CHECK (state IN ('active', 'gone')),
  registered_at_us INTEGER NOT NULL,
  last_heartbeat_at_us INTEGER NOT NULL
);
-- ListStale: active agents by last heartbeat.
CREATE INDEX agents_by_heartbeat ON agents (state, last_heartbeat_at_us);

CREATE TABLE trials (
  id INTEGER PRIMARY KEY AUTOINCREMENT,  -- never reused
  study_id INTEGER NOT NULL REFERENCES studies (id),
  -- The layout: the JSON is what is read back; the columns are for filters.
  layout_json TEXT NOT NULL,
  tp INTEGER NOT NULL,
  sp INTEGER NOT NULL CHECK (sp IN (0, 1)),
  pp INTEGER NOT NULL,
  vpp INTEGER NOT NULL,
  cp INTEGER NOT NULL,
  dp INTEGER NOT NULL,
  zero INTEGER NOT NULL,
  shard_group INTEGER NOT NULL,
  micro_batch INTEGER NOT NULL,
  grad_accum INTEGER NOT NULL,
  recompute TEXT NOT NULL CHECK (recompute IN ('none', 'selective', 'full')),
  -- What to run.
  rung INTEGER NOT NULL CHECK (rung >= 0),  -- successive-halving level
  steps INTEGER NOT NULL CHECK (steps >= 1),
  warmup_steps INTEGER NOT NULL CHECK (warmup_steps >= 0),
  gang_size INTEGER NOT NULL CHECK (gang_size >= 1),  -- agents needed
  status TEXT NOT NULL CHECK (status IN ('queued', 'leased', 'ok', 'oom', 'nan',
                                         'timeout', 'crash', 'invalid',
                                         'cancelled')),
  reason TEXT NOT NULL DEFAULT '',
  -- The cost model's prediction (NULL when none was given).
  predicted_tokens_per_s REAL,
  predicted_tokens_per_joule REAL,
  predicted_step_time_s REAL,
  predicted_peak_memory_bytes INTEGER,
  -- The lease (holders in trial_leases); set exactly while status is leased.
  lease_expires_at_us INTEGER,
  attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),  -- leases lost
  -- The reported result; set exactly when a report was stored.
  reported_by TEXT REFERENCES agents (id),
  result_json TEXT,
  backend TEXT,
  device TEXT,
  ranks INTEGER,
  measured_steps INTEGER,
  step_time_s REAL,        -- median over the measured steps
  step_time_p10_s REAL,
  step_time_p90_s REAL,
  tokens_per_s REAL,
  tokens_per_s_per_gpu REAL,
  tflops_per_gpu REAL,
  mfu REAL,
  peak_memory_bytes INTEGER,  -- the largest over the ranks
  compute_s REAL,
  comm_s REAL,
  exposed_comm_s REAL,
  watts_per_gpu REAL,         -- NULL: power not measured
  tokens_per_joule REAL,      -- NULL: power not measured
  created_at_us INTEGER NOT NULL,
  started_at_us INTEGER,      -- the current or last lease's start
  finished_at_us INTEGER,     -- reported, cancelled or given up
  CHECK ((status = 'leased') = (lease_expires_at_us IS NOT NULL)),
  CHECK ((reported_by IS NULL) = (result_json IS NULL))
);
-- A study's trials and their counts by status.
CREATE INDEX trials_by_study ON trials (study_id, status);
-- RequeueExpiredLeases: leased trials by expiry.
CREATE INDEX trials_by_lease ON trials (status, lease_expires_at_us);
-- History: by time, by layout.
CREATE INDEX trials_by_created ON trials (created_at_us);
CREATE INDEX trials_by_finished ON trials (finished_at_us);
CREATE INDEX trials_by_layout ON trials (tp, pp, cp, dp, zero, micro_batch);

-- The agents that hold a trial's lease; several for a gang. gang_rank orders
-- them (rank 0 hosts the rendezvous).
CREATE TABLE trial_leases (
  trial_id INTEGER NOT NULL REFERENCES trials (id),
  agent_id TEXT NOT NULL REFERENCES agents (id),
  gang_rank INTEGER NOT NULL CHECK (gang_rank >= 0),
  PRIMARY KEY (trial_id, agent_id),
  UNIQUE (trial_id, gang_rank)
) WITHOUT ROWID;
-- RequeueTrialsOf, and trials leased to an agent.
CREATE INDEX trial_leases_by_agent ON trial_leases (agent_id);

-- One row per step of a reported trial, warm-up steps included (steps below
-- the result's warmup_steps). NULL loss: not finite (NaN) or not recorded.
CREATE TABLE trial_metrics (
  trial_id INTEGER NOT NULL REFERENCES trials (id),
  step INTEGER NOT NULL CHECK (step >= 0),
  loss REAL,
  step_time_s REAL,
  PRIMARY KEY (trial_id, step)
) WITHOUT ROWID;

CREATE TABLE probes (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  agent_id TEXT NOT NULL REFERENCES agents (id),
  kind TEXT NOT NULL,  -- gemm, allreduce, allgather, reducescatter, ...
  group_size INTEGER NOT NULL CHECK (group_size >= 1),
  bytes INTEGER NOT NULL CHECK (bytes >= 0),
  value REAL NOT NULL,
  unit TEXT NOT NULL,  -- "GFLOP/s", "GB/s", ...
  measured_at_us INTEGER NOT NULL
);
CREATE INDEX probes_by_agent ON probes (agent_id, kind, measured_at_us);
CREATE INDEX probes_by_kind ON probes (kind, group_size, measured_at_us);

CREATE TABLE calibrations (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scope TEXT NOT NULL,  -- "study:<id>" or "gpu:<name>"
  coefficients_json TEXT NOT NULL,  -- {"name": value, ...}
  samples INTEGER NOT NULL CHECK (samples >= 0),
  fit_error REAL NOT NULL,
  created_at_us INTEGER NOT NULL
);
CREATE INDEX calibrations_by_scope ON calibrations (scope, id);
