#include "costmodel/search/plan_uncertainty.h"

namespace tessera::costmodel {

PlanUncertainty AssessPlan(const Workload& w, const SearchResult& r,
                           const Calibration& calibration,
                           const PredictionUncertainty& spreads) {
  PlanUncertainty u;
  u.spreads = spreads;
  u.ranking = AssessRanking(w, r.candidates, calibration, spreads);
  if (r.feasible > 0) {
    u.best_throughput = IntervalOf(w, r.best_throughput, calibration, spreads);
    u.best_energy = IntervalOf(w, r.best_energy, calibration, spreads);
  }
  return u;
}

}  // namespace tessera::costmodel
