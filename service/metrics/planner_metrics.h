// The planner's whole /metrics page: the store's gauges (store_metrics.h)
// and the RPC latency histogram (rpc_metrics.h).
//
//   endpoint = MetricsEndpoint::Start(listen, [&] {
//     return PlannerMetricsText(store, db_path, rpc_metrics);
//   });
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "db/trial_store.h"
#include "service/metrics/rpc_metrics.h"

namespace tessera::service::metrics {

// The exposition text; the store's errors pass through.
absl::StatusOr<std::string> PlannerMetricsText(db::TrialStore& store,
                                               const std::string& db_path,
                                               const RpcMetrics& rpc_metrics);

}  // namespace tessera::service::metrics
