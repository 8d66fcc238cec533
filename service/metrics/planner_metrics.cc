#include "service/metrics/planner_metrics.h"

#include "core/status_macros.h"
#include "service/metrics/exposition.h"
#include "service/metrics/store_metrics.h"

namespace tessera::service::metrics {

absl::StatusOr<std::string> PlannerMetricsText(db::TrialStore& store,
                                               const std::string& db_path,
                                               const RpcMetrics& rpc_metrics) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<MetricFamily> families,
                           StoreMetrics(store, db_path));
  families.push_back(rpc_metrics.Collect());
  return ExpositionText(families);
}

}  // namespace tessera::service::metrics
