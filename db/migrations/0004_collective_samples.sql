-- 0004_collective_samples: the bus bandwidth a cluster probe measured
-- between agents (`tessera-trial --probe-collectives` on 1, 2, 4, ... of
-- them; planner/service/cluster_probe.h), by cluster, in nccl-tests'
-- conventions. Every later study on the cluster plans with the newest sweep
-- of each node count in place of the GPU preset's link figures.
CREATE TABLE collective_samples (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  cluster TEXT NOT NULL CHECK (cluster <> ''),
  collective TEXT NOT NULL
    CHECK (collective IN ('all_gather', 'reduce_scatter', 'all_reduce',
                          'sendrecv')),
  nodes INTEGER NOT NULL CHECK (nodes >= 1),
  gpus_per_node INTEGER NOT NULL CHECK (gpus_per_node >= 1),
  bytes INTEGER NOT NULL CHECK (bytes > 0),
  busbw_gbs REAL NOT NULL CHECK (busbw_gbs > 0),
  agent_ids TEXT NOT NULL,  -- the probe's agents, node ranks in order
  measured_at_us INTEGER NOT NULL
);
CREATE INDEX collective_samples_by_cluster ON collective_samples (cluster, id);
