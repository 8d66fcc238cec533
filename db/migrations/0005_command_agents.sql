-- 0005_command_agents: agents of the command backend (tessera-agent
-- --backend command: they run a study's own training command). SQLite
-- cannot change a CHECK in place, so the table is rebuilt with its rows and
-- index: the rows wait in a copy while the table is dropped and made again,
-- and the foreign keys into it (trials.reported_by, the leases, the probes)
-- are checked at the commit, once every id is back in `agents`.
PRAGMA defer_foreign_keys = ON;
CREATE TEMP TABLE agents_copy AS SELECT * FROM agents;
DROP TABLE agents;
CREATE TABLE agents (
  id TEXT PRIMARY KEY NOT NULL,
  hostname TEXT NOT NULL,
  backend TEXT NOT NULL CHECK (backend IN ('cpu', 'cuda', 'command')),
  gpu_name TEXT NOT NULL DEFAULT '',
  gpu_count INTEGER NOT NULL CHECK (gpu_count >= 0),
  memory_bytes INTEGER NOT NULL CHECK (memory_bytes >= 0),  -- per GPU (rank)
  driver TEXT NOT NULL DEFAULT '',
  interconnect TEXT NOT NULL DEFAULT '',  -- "nvlink", "pcie", "none", ...
  cpu_ranks INTEGER NOT NULL DEFAULT 0 CHECK (cpu_ranks >= 0),
  state TEXT NOT NULL CHECK (state IN ('active', 'gone')),
  registered_at_us INTEGER NOT NULL,
  last_heartbeat_at_us INTEGER NOT NULL,
  address TEXT NOT NULL DEFAULT ''
);
INSERT INTO agents (id, hostname, backend, gpu_name, gpu_count, memory_bytes,
                    driver, interconnect, cpu_ranks, state, registered_at_us,
                    last_heartbeat_at_us, address)
  SELECT id, hostname, backend, gpu_name, gpu_count, memory_bytes, driver,
         interconnect, cpu_ranks, state, registered_at_us,
         last_heartbeat_at_us, address
  FROM agents_copy;
DROP TABLE agents_copy;
CREATE INDEX agents_by_heartbeat ON agents (state, last_heartbeat_at_us);
