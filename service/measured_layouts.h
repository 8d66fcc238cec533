// What the trials of a study measured, per trialed layout: every ok trial of
// the layout together, the steps-weighted geometric mean of their tokens/s
// per GPU (a layout measured twice is known better than once: run-to-run
// noise averages out), standing for the layout with its longest trial (the
// highest rung, then the latest). Trials of different layouts may run on
// different trial worlds when the study is scaled down, so layouts are
// compared by tokens/s per GPU.
//
//   std::map<std::string, MeasuredLayout> measured = MeasuredLayouts(trials);
//   const MeasuredLayout* best = BestMeasured(measured);
//   std::vector<const MeasuredLayout*> ranked = RankMeasured(measured);
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "db/trial_store.h"

namespace tessera::service {

struct MeasuredLayout {
  db::Trial trial;  // the ok trial that stands for the layout
  double tokens_per_s_per_gpu = 0;
  int64_t trials = 0;  // ok trials of the layout
  int64_t steps = 0;   // their measured steps
};

// Tokens/s per GPU of an ok trial (its reported figure, else tokens/s over
// its world); 0 without a measurement.
double MeasuredTokensPerSPerGpu(const db::Trial& trial);

// LayoutKey(trial.layout) -> the layout's measurement, over the ok trials.
std::map<std::string, MeasuredLayout> MeasuredLayouts(
    const std::vector<db::Trial>& trials);

// The fastest per GPU (the lowest trial id of equals); nullptr when empty.
const MeasuredLayout* BestMeasured(
    const std::map<std::string, MeasuredLayout>& measured);

// Every measured layout, the fastest first (ties: the lower trial id).
std::vector<const MeasuredLayout*> RankMeasured(
    const std::map<std::string, MeasuredLayout>& measured);

}  // namespace tessera::service
