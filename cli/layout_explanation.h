// Why a layout ranks where it does: its step time part by part (compute,
// exposed communication by parallelism, pipeline bubble), its memory by what
// holds it, and what separates it from the best candidate, with whether the
// cost model can tell the two apart at all. `tessera plan` prints it for
// its top candidates; `tessera explain LAYOUT` for one layout in full.
//
//   PrintWhyTopCandidates(result, &uncertainty, 3, std::cout);
//   //  1 tp=2,...: 1.234 s = compute 1.000 + exposed comm 0.200 (tp 0.150,
//   //    dp 0.050) + bubble 0.034 | memory 61.2 GiB: weights 12.1, ...
//   //  2 tp=4,...: 1.260 s, +2.1% vs rank 1: exposed tp comm +0.050 s, ...
//   //    within the model's error of rank 1
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "core/workload.h"
#include "costmodel/prediction.h"
#include "costmodel/search/plan_uncertainty.h"
#include "costmodel/search/search.h"

namespace tessera::cli {

// "1.2340 s = compute 1.0000 + exposed comm 0.2000 (tp 0.1500, dp 0.0500) +
// bubble 0.0340": the kinds with exposed time, largest first; the compute's
// slowdown beside hidden collectives, when there is one, inside the compute
// ("compute 1.0000 (0.0500 of it slowed by hidden comm)").
std::string StepAccount(const costmodel::Prediction& p);

// "61.2 GiB: weights 12.1, master weights 6.0, ..., overhead 3.1" (GiB).
std::string MemoryAccount(const costmodel::MemoryBreakdown& m);

// What makes `p` slower (or faster) than `best`, parts that differ by more
// than 0.5% of the best step, largest first, and memory when it differs by
// half a GiB or more: "+2.1% step time vs the best: exposed tp comm
// +0.0500 s, bubble +0.0100 s, compute -0.0050 s; memory -10.0 GiB per
// GPU". The same step: "the same step time as the best".
std::string WhatSeparates(const costmodel::Prediction& p,
                          const costmodel::Prediction& best);

// For the first `top` candidates of `result`: each one's step account and
// memory account, and for each after the first what separates it from
// rank 1 and (with `uncertainty`) whether it is within the model's error of
// rank 1. Nothing when there are no candidates.
void PrintWhyTopCandidates(const costmodel::SearchResult& result,
                           const costmodel::PlanUncertainty* uncertainty,
                           int64_t top, std::ostream& out);

}  // namespace tessera::cli
