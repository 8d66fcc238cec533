// What the trials of a study measured, per trialed layout: the ok trial at
// the highest rung it reached (the longest measurement; the faster of two at
// one rung). Trials of different layouts may run on different trial worlds
// when the study is scaled down, so layouts are compared by tokens/s per GPU.
//
//   std::map<std::string, MeasuredLayout> measured = MeasuredLayouts(trials);
//   const MeasuredLayout* best = BestMeasured(measured);
#pragma once

#include <map>
#include <string>
#include <vector>

#include "db/trial_store.h"

namespace tessera::service {

struct MeasuredLayout {
  db::Trial trial;  // the ok trial that stands for the layout
  double tokens_per_s_per_gpu = 0;
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

}  // namespace tessera::service
