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
#include <optional>
#include <string>

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
  // Training.
  std::optional<int64_t> global_batch, seq_len;
  std::optional<double> total_tokens;
  std::optional<std::string> stack;
  std::optional<std::string> stack_options;  // comma-separated changes
  std::optional<std::string> precision;

  // Adds the flags above to `flags` under a "Workload" section.
  void Register(FlagSet* flags);

  // The study file (if any) with each given flag over it: --model and --gpu
  // replace the file's whole model / GPU; the other flags set one field.
  // Without --spec, the required flags must be there: errors like
  // "cluster.nodes: required (--nodes N)". A bad file is the file's error
  // (proto/spec_json.h).
  absl::StatusOr<v1::StudySpec> ToSpec() const;

  // ToSpec, then the workload (proto/convert.h). An invalid value is an
  // INVALID_ARGUMENT naming the field, followed by the flag that gave it
  // ("cluster.nodes: must be ... got 0 (--nodes)") or preceded by the file
  // ("spec: study.json: cluster.nodes: ...").
  absl::StatusOr<Study> Resolve() const;
};

}  // namespace tessera::cli
