// The per-target exporters behind ExportLayout (layout_export.h), and what
// they share. Internal to export/. A new target is one file of its own (its
// text and notes functions, declared below), one row of layout_export.cc's
// target table and its ExportTarget value.
//
//   ExportInput in{workload, resolved_layout, "torchtitan", {"compile"}};
//   TESSERA_ASSIGN_OR_RETURN(std::string text, ExportTorchtitan(in));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/layout.h"
#include "core/workload.h"

namespace tessera::exporters {

// What an exporter is given: a layout already resolved for the workload and
// checked against the target's stack (CanRun, CheckLayoutFitsModel).
struct ExportInput {
  const Workload& workload;
  const Layout& layout;
  std::string stack;                 // the target's stack, by name
  std::vector<std::string> options;  // its options that are on, by name

  bool OptionOn(absl::string_view name) const;
};

// What the person running an export must know beyond its file, one
// sentence each: the environment variables the framework checks, the
// warnings it raises at start-up for this configuration, what the file
// leaves to them. Each in its exporter's file; the exporters write them as
// comments where the format has comments.
std::vector<std::string> TorchtitanNotes(const ExportInput& in);
std::vector<std::string> MegatronNotes(const ExportInput& in);
std::vector<std::string> DeepSpeedNotes(const ExportInput& in);
std::vector<std::string> NemoNotes(const ExportInput& in);

// The notes as comment lines, "<prefix>note: ..." wrapped at 79 columns
// with "<prefix>  " continuing.
std::string NoteComments(const std::vector<std::string>& notes,
                         absl::string_view prefix);

// Whether the cluster's GPUs are older than Blackwell (compute capability
// below 10) or of an unknown architecture: where Megatron-LM's
// validate_args requires CUDA_DEVICE_MAX_CONNECTIONS=1 for tensor or
// context parallelism (megatron/training/arguments.py).
bool BeforeBlackwell(const Workload& workload);

// A torchtitan Python config function (torchtitan_export.cc).
absl::StatusOr<std::string> ExportTorchtitan(const ExportInput& in);
// Megatron-LM command-line arguments, one per line (megatron_export.cc).
absl::StatusOr<std::string> ExportMegatron(const ExportInput& in);
// A DeepSpeed config JSON (deepspeed_export.cc).
absl::StatusOr<std::string> ExportDeepSpeed(const ExportInput& in);
// A Megatron-Bridge recipe function (nemo_export.cc).
absl::StatusOr<std::string> ExportNemo(const ExportInput& in);

// The model chunks of a pipeline in Megatron's interleaved order: chunk
// m = v * pp + s is virtual chunk v of pipeline rank s (StageLayers), with
// the layers [begin, end) it holds.
struct ModelChunk {
  int64_t rank = 0;   // pipeline rank s
  int64_t virt = 0;   // virtual chunk v on that rank
  int64_t begin = 0;  // first layer
  int64_t end = 0;    // one past the last layer
};
std::vector<ModelChunk> ModelChunks(const Layout& layout, int64_t layers);

// Whether every model chunk holds layers / (pp * vpp) layers.
bool EvenChunks(const Layout& layout, int64_t layers);

// Megatron-Core's pipeline_model_parallel_layout of those chunks: "E" (the
// embedding) in the first, "t" per layer ("t*7" for seven), "L" (the loss)
// in the last, "|" between chunks: "Et*7|t*8|t*8|t*7L".
std::string MegatronPipelineLayout(const Layout& layout, int64_t layers);

// One comment line per entry of the layout and workload, each starting with
// `prefix` ("# "): the layout, the model, the cluster, the batch.
std::string DescribeRun(const ExportInput& in, absl::string_view prefix);

// FAILED_PRECONDITION "<field>: <what>" for a layout the target's
// configuration cannot express.
absl::Status CannotExpress(absl::string_view field, absl::string_view what);

}  // namespace tessera::exporters
