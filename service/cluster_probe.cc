#include "service/cluster_probe.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/trial_backend.h"
#include "db/validation.h"
#include "nlohmann/json.hpp"

namespace tessera::service {

std::vector<int64_t> ClusterProbeNodeCounts(int64_t agents,
                                            int64_t ranks_per_agent,
                                            absl::string_view backend) {
  std::vector<int64_t> out;
  if (agents < 1) return out;
  absl::StatusOr<const TrialBackend*> kind = FindTrialBackend(backend);
  if (kind.ok() && (*kind)->one_agent_sweep && ranks_per_agent >= 2) {
    out.push_back(1);
  }
  for (int64_t n = 2; n <= agents; n *= 2) out.push_back(n);
  if (agents >= 2 && out.back() != agents) out.push_back(agents);
  return out;
}

std::vector<db::CollectiveSample> OneNodeSamplesOfProbes(
    const std::vector<db::Probe>& probes, const std::string& cluster,
    int64_t ranks_per_node, const std::string& agent_id) {
  static const std::pair<const char*, const char*> kKinds[] = {
      {"allreduce", "all_reduce"},
      {"allgather", "all_gather"},
      {"reducescatter", "reduce_scatter"}};
  // The newest probe of each (collective, bytes).
  std::map<std::pair<std::string, int64_t>, db::CollectiveSample> newest;
  for (const db::Probe& p : probes) {
    std::string collective;
    for (const auto& [kind, name] : kKinds) {
      if (p.kind == kind && p.group_size == ranks_per_node) collective = name;
    }
    // One rank's copies are what a send to a rank of the same process costs.
    if (p.kind == "memcpy" && ranks_per_node >= 2) collective = "sendrecv";
    if (collective.empty() || p.bytes <= 0 || !(p.value > 0)) continue;
    db::CollectiveSample s;
    s.cluster = cluster;
    s.collective = collective;
    s.nodes = 1;
    s.gpus_per_node = ranks_per_node;
    s.bytes = p.bytes;
    s.busbw_gbs = p.value;
    s.agent_ids = agent_id;
    newest[{collective, p.bytes}] = std::move(s);  // oldest first: last wins
  }
  // The copy rate alone says nothing of the collectives at this size.
  if (newest.size() == 1 && newest.begin()->first.first == "sendrecv") {
    return {};
  }
  std::vector<db::CollectiveSample> out;
  for (auto& [key, s] : newest) out.push_back(std::move(s));
  return out;
}

std::vector<int64_t> UnprobedNodeCounts(
    const std::vector<int64_t>& wanted,
    const std::vector<db::CollectiveSample>& stored, int64_t ranks_per_agent) {
  std::set<int64_t> have;
  for (const db::CollectiveSample& s : stored) {
    if (s.gpus_per_node == ranks_per_agent) have.insert(s.nodes);
  }
  std::vector<int64_t> out;
  for (int64_t n : wanted) {
    if (have.count(n) == 0) out.push_back(n);
  }
  return out;
}

absl::StatusOr<std::vector<db::CollectiveSample>> SamplesOfSweep(
    absl::string_view json_text, const std::string& cluster, int64_t nodes,
    int64_t ranks_per_node, const std::string& agent_ids) {
  const nlohmann::json json = nlohmann::json::parse(json_text, nullptr, false);
  if (!json.is_object()) {
    return absl::InvalidArgumentError("result_json: not a JSON object");
  }
  if (json.contains("error")) {
    return absl::UnavailableError(absl::StrCat(
        "the sweep failed: ", json["error"].is_string()
                                  ? json["error"].get<std::string>()
                                  : json["error"].dump()));
  }
  if (!json.contains("collectives") || !json["collectives"].is_array() ||
      json["collectives"].empty()) {
    return absl::InvalidArgumentError(
        "result_json.collectives: a non-empty array is required");
  }
  std::vector<db::CollectiveSample> out;
  const nlohmann::json& list = json["collectives"];
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string field = absl::StrCat("collectives[", i, "]");
    const nlohmann::json& p = list[i];
    if (!p.is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": not an object"));
    }
    auto number = [&](const char* key) -> absl::StatusOr<double> {
      if (!p.contains(key) || !p[key].is_number()) {
        return absl::InvalidArgumentError(
            absl::StrCat(field, ".", key, ": a number is required"));
      }
      return p[key].get<double>();
    };
    if (!p.contains("collective") || !p["collective"].is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".collective: a string is required"));
    }
    db::CollectiveSample s;
    s.cluster = cluster;
    s.collective = p["collective"].get<std::string>();
    s.agent_ids = agent_ids;
    absl::StatusOr<double> n = number("nodes");
    absl::StatusOr<double> g = number("gpus_per_node");
    absl::StatusOr<double> bytes = number("bytes");
    absl::StatusOr<double> busbw = number("busbw_gbs");
    for (const absl::StatusOr<double>* v : {&n, &g, &bytes, &busbw}) {
      if (!v->ok()) return v->status();
    }
    s.nodes = static_cast<int64_t>(*n);
    s.gpus_per_node = static_cast<int64_t>(*g);
    s.bytes = static_cast<int64_t>(*bytes);
    s.busbw_gbs = *busbw;
    if (s.nodes != nodes || s.gpus_per_node != ranks_per_node) {
      return absl::InvalidArgumentError(absl::StrCat(
          field, ": measured on ", s.nodes, " nodes of ", s.gpus_per_node,
          " ranks, but the probe ran ", nodes, " of ", ranks_per_node));
    }
    if (absl::Status ok = db::ValidateCollectiveSample(s, field); !ok.ok()) {
      return ok;
    }
    out.push_back(std::move(s));
  }
  return out;
}

std::shared_ptr<const costmodel::MeasuredCollectives> MergeProbedCollectives(
    const costmodel::MeasuredCollectives* imported,
    std::optional<absl::Time> imported_at,
    const std::vector<db::CollectiveSample>& probed) {
  using Key = std::pair<costmodel::CollectiveOp, int64_t>;  // op, nodes
  // The newest sweep of each pair measured after the import: its samples
  // share its time (one store write).
  std::map<Key, absl::Time> newest;
  std::vector<std::pair<costmodel::CollectiveMeasurement, absl::Time>> points;
  for (const db::CollectiveSample& s : probed) {
    absl::StatusOr<costmodel::CollectiveOp> op =
        costmodel::ParseCollectiveOp(s.collective);
    if (!op.ok()) continue;  // the store validated it: another version's name
    if (imported_at.has_value() && s.measured_at <= *imported_at) continue;
    const Key key{*op, s.nodes};
    auto it = newest.find(key);
    if (it == newest.end() || s.measured_at > it->second) {
      newest[key] = s.measured_at;
    }
    points.push_back({{*op, s.nodes, s.gpus_per_node,
                       static_cast<double>(s.bytes), s.busbw_gbs},
                      s.measured_at});
  }
  std::vector<costmodel::CollectiveMeasurement> merged;
  if (imported != nullptr) {
    for (const costmodel::CollectiveMeasurement& m : imported->measurements()) {
      if (newest.count({m.op, m.nodes}) == 0) merged.push_back(m);
    }
  }
  for (const auto& [m, at] : points) {
    if (newest[{m.op, m.nodes}] == at) merged.push_back(m);
  }
  if (merged.empty()) return nullptr;
  return std::make_shared<const costmodel::MeasuredCollectives>(
      std::move(merged));
}

}  // namespace tessera::service
