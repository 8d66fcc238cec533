// How the planner service runs: agent intervals and timeouts, the reaper,
// the clock (tests drive one by hand) and where the history is kept.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "db/trial_store.h"
#include "grpcpp/security/server_credentials.h"
#include "service/background_pool.h"
#include "service/log.h"
#include "proto/principals.h"

namespace tessera::service {

struct PlannerOptions {
  // What Recommendation.history_db says (the --db path).
  std::string db_path;
  // Agents heartbeat this often (RegisterResponse.heartbeat_interval_ms).
  absl::Duration heartbeat_interval = absl::Seconds(1);
  // Idle agents poll LeaseTrial this often (lease_poll_interval_ms). An agent
  // waits for a gang only while it polled within twice this interval.
  absl::Duration lease_poll_interval = absl::Seconds(1);
  // A lease lasts this long past the last heartbeat that extended it.
  absl::Duration lease_timeout = absl::Seconds(10);
  // An agent silent this long is marked gone and its trials re-queued.
  absl::Duration agent_timeout = absl::Seconds(30);
  // The fleet paces itself (fleet_pace.h): the heartbeat and lease poll
  // intervals told to agents grow so that the fleet makes at most this many
  // heartbeats (polls) a second, and the lease and agent timeouts with the
  // heartbeat interval; 0: the intervals above, whatever the fleet's size.
  double max_heartbeats_per_s = 2000;
  double max_lease_polls_per_s = 2000;
  // The reaper thread's period; zero: no thread (call Leases::Reap).
  absl::Duration reaper_period = absl::Seconds(1);
  // The longest a rendezvous fetch waits, whatever it asks for.
  absl::Duration max_rendezvous_wait = absl::Seconds(60);
  // Cluster probes (cluster_probe.h): whether studies queue them, the time
  // limit each agent's sweep gets, and its largest message by backend. Off
  // here so that tests which drive leases by hand opt in; tessera-planner
  // turns them on (--no-cluster-probes turns them off).
  bool cluster_probes = false;
  absl::Duration probe_time_limit = absl::Minutes(2);
  int64_t probe_max_bytes_cpu = int64_t{16} << 20;
  int64_t probe_max_bytes_cuda = int64_t{1} << 30;
  // Plan and Predict run on their own pool (background_pool.h): this many
  // searches at once, at a lower CPU priority, and this many waiting;
  // beyond, RESOURCE_EXHAUSTED.
  BackgroundPoolOptions search_pool;
  // Ok trials a refit uses at most (the newest).
  int64_t max_calibration_samples = 200;
  // The time source of leases, heartbeats and budgets; empty: absl::Now.
  // Give the store the same clock.
  db::Clock clock;
  Log log;
  // How the server's port is secured (proto/transport_security.h); null:
  // plaintext, no token.
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Who each call is, from the same files (ServerSecurityFromFiles); null:
  // callers are not told apart and each may do everything.
  std::shared_ptr<const Callers> callers;
  // Where PlannerServer serves Prometheus metrics (GET /metrics, HOST:PORT;
  // port 0 picks a free one); empty: nowhere.
  std::string metrics_listen;
};

}  // namespace tessera::service
