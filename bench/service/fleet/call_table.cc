#include "bench/service/fleet/call_table.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace tessera::bench {

double Percentile(std::vector<float>& ms, double q) {
  if (ms.empty()) return 0;
  const size_t k = static_cast<size_t>(q * static_cast<double>(ms.size() - 1));
  std::nth_element(ms.begin(), ms.begin() + static_cast<ptrdiff_t>(k),
                   ms.end());
  return ms[k];
}

CallStats StatsOf(const std::vector<CallSample>& samples, int64_t from_ns,
                  int64_t to_ns) {
  CallStats out;
  std::vector<float> ms;
  for (const CallSample& s : samples) {
    if (s.start_ns < from_ns || s.start_ns >= to_ns) continue;
    ms.push_back(s.ms);
    out.errors += s.ok ? 0 : 1;
  }
  out.calls = static_cast<int64_t>(ms.size());
  if (ms.empty()) return out;
  out.max_ms = *std::max_element(ms.begin(), ms.end());
  out.p50_ms = Percentile(ms, 0.50);
  out.p99_ms = Percentile(ms, 0.99);
  return out;
}

void PrintCallTable(const std::string& title,
                    const std::map<std::string, std::vector<CallSample>>& calls,
                    int64_t from_ns, int64_t to_ns) {
  const double span_s = 1e-9 * static_cast<double>(to_ns - from_ns);
  absl::PrintF("%s: %.1f s\n", title, span_s);
  if (span_s <= 0) return;
  absl::PrintF("  %-12s %8s %7s %9s %9s %9s %9s\n", "rpc", "calls", "errors",
               "calls/s", "p50_ms", "p99_ms", "max_ms");
  for (const auto& [name, samples] : calls) {
    const CallStats s = StatsOf(samples, from_ns, to_ns);
    if (s.calls == 0) continue;
    absl::PrintF("  %-12s %8d %7d %9.1f %9.2f %9.2f %9.2f\n", name, s.calls,
                 s.errors, static_cast<double>(s.calls) / span_s, s.p50_ms,
                 s.p99_ms, s.max_ms);
  }
}

}  // namespace tessera::bench
