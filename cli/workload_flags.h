// The workload flags that `tessera plan` and `tessera predict` (and later
// commands) share: a study file (--spec), or the model, cluster and training
// as flags, or a study file with flags over it. They become a StudySpec (the
// message the service takes too) and, validated, a Workload.
//
//   WorkloadFlags workload;
//   FlagSet flags("tessera plan");
//   workload.Register(&flags);
//   TESSERA_RETURN_IF_ERROR(flags.Parse(args));
//   TESSERA_ASSIGN_OR_RETURN(Study study, workload.Resolve());
//   // study.workload.cluster.world_size() == 256 for --nodes 32
//   //   --gpus-per-node 8
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/flags.h"
#include "core/workload.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::cli {

// A study as given and as resolved.
struct Study {
  v1::StudySpec spec;  // the file's spec with the flags applied
  Workload workload;   // presets resolved, validated
};

struct WorkloadFlags {
  std::optional<std::string> spec_path;
  // Model: a preset, or explicit dimensions (over the preset when both).
  std::optional<std::string> model;
  std::optional<int64_t> layers, hidden, heads, kv_heads, ffn_hidden, vocab;
  std::optional<std::string> mlp;
  std::optional<bool> tie_embeddings;
  // Cluster.
  std::optional<std::string> gpu;
  std::optional<int64_t> nodes, gpus_per_node;
  std::optional<double> intra_node_gbs, inter_node_gbs, inter_node_latency_us;
  // --headroom: "8" or "8GiB" (GiB kept free per GPU), "0.1" or "10%" (a
  // fraction of its memory), "0" (none).
  std::optional<std::string> headroom;
  // Training.
  std::optional<int64_t> global_batch, seq_len;
  std::optional<int64_t> total_tokens;
  std::optional<std::string> stack;
  std::optional<std::string> stack_options;  // comma-separated changes
  std::optional<std::string> precision;

  // Adds the flags above to `flags` under a "Workload" section, and the
  // requirement that, without --spec, the model, GPU, nodes, GPUs per node,
  // global batch and sequence length are given (MissingFlags), so that
  // Parse reports each missing one beside any bad value.
  void Register(FlagSet* flags);

  // One line per required flag that `given` says is missing (none with
  // --spec): "cluster.nodes: required (--nodes N)".
  static std::vector<std::string> MissingFlags(
      const std::function<bool(absl::string_view)>& given);

  // The study file (if any) with each given flag over it: --model and --gpu
  // replace the file's whole model / GPU; the other flags set one field.
  // Without --spec, the required flags must be there: one line per missing
  // one, "cluster.nodes: required (--nodes N)". A bad file is the file's error
  // (proto/spec_json.h).
  absl::StatusOr<v1::StudySpec> ToSpec() const;

  // ToSpec, then the workload (proto/convert.h). An invalid value is an
  // INVALID_ARGUMENT naming the field, followed by the flag that gave it
  // ("cluster.nodes: must be ... got 0 (--nodes)") or preceded by the file
  // ("spec: study.json: cluster.nodes: ...").
  absl::StatusOr<Study> Resolve() const;

 private:
  // Whether flag `flag` ("seq-len") has a value.
  bool Given(absl::string_view flag) const;
};

}  // namespace tessera::cli
