// Latency tables of the fleet bench: per RPC, the calls that started in a
// window, their rate, failures and p50 / p99 / max latency.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/service/fleet/simulated_fleet.h"

namespace tessera::bench {

struct CallStats {
  int64_t calls = 0;
  int64_t errors = 0;
  double p50_ms = 0;
  double p99_ms = 0;
  double max_ms = 0;
};

// The q-quantile of `ms` (nearest rank below); 0 when empty. Reorders ms.
double Percentile(std::vector<float>& ms, double q);

// Calls of `samples` that started in [from_ns, to_ns).
CallStats StatsOf(const std::vector<CallSample>& samples, int64_t from_ns,
                  int64_t to_ns);

// Prints one line per RPC of `calls` in [from_ns, to_ns) under `title`.
void PrintCallTable(const std::string& title,
                    const std::map<std::string, std::vector<CallSample>>& calls,
                    int64_t from_ns, int64_t to_ns);

}  // namespace tessera::bench
