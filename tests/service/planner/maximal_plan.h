// The largest Plan the planner service answers: Llama 3 405B on 1024 H100s,
// every stack option open, the 1000 best candidates (kMaxPlanCandidates, the
// most a reply holds); a search of a few hundred milliseconds on one core.
// The heavy caller of HeavyCallersTest and of planner_load_bench
// --plan-callers.
#pragma once

#include "tessera/v1/service.pb.h"

namespace tessera::service::testing {

inline v1::PlanRequest MaximalPlan() {
  v1::PlanRequest r;
  v1::StudySpec* spec = r.mutable_study();
  spec->set_name("maximal-plan");
  spec->mutable_model()->set_preset("llama3-405b");
  spec->mutable_cluster()->mutable_gpu()->set_preset("h100-sxm");
  spec->mutable_cluster()->set_nodes(128);
  spec->mutable_cluster()->set_gpus_per_node(8);
  spec->mutable_training()->set_global_batch(2048);
  spec->mutable_training()->set_seq_len(8192);
  spec->mutable_training()->set_total_tokens(1e12);
  spec->mutable_search()->set_top(1000);
  return r;
}

}  // namespace tessera::service::testing
