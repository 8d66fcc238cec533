// `tessera calibrate`: fits the cost model's coefficients to measured runs
// (cli/measurement_file.h) and/or takes the cluster's measured collective
// bandwidth (nccl-tests output or CSV, costmodel/calibration/measured_collectives.h),
// offline, and writes a calibration file (costmodel/calibration/
// calibration_file.h) that `tessera plan|predict --calibration` use.
//
//   tessera calibrate --measurements runs.jsonl
//       --collectives all_gather_perf.2n.txt --collectives bw.csv
//       --out cluster.calibration.json
//
// All runs must share one training stack (with its options) and one GPU;
// the prior is that stack's defaults on that GPU. With collectives alone,
// --stack and --gpu say which defaults the file carries.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace tessera::cli {

int RunCalibrate(const std::vector<std::string>& args, std::ostream& out,
                 std::ostream& err);

}  // namespace tessera::cli
