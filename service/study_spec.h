// A submitted StudySpec, checked as one: the workload (proto/convert.h), the
// search options and the trial options, every error INVALID_ARGUMENT naming
// the field under "study." ("study.cluster.nodes: must be an integer in
// [1, 131072], got 0"). For the "agents" GPU preset (agents_gpu.h) the
// workload is checked with a stand-in GPU and resolved later
// (WorkloadWithGpu), once an agent has reported its probes. Also how a spec
// is kept in the store (protobuf JSON) and read back.
//
//   TESSERA_ASSIGN_OR_RETURN(CheckedStudy study, CheckStudySpec(spec));
//   if (study.agents_gpu) { ... wait for probes ... }
//   TESSERA_ASSIGN_OR_RETURN(Workload w, WorkloadWithGpu(study.spec, gpu));
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/workload.h"
#include "costmodel/search/search.h"
#include "service/trial_options.h"
#include "tessera/v1/specs.pb.h"

namespace tessera::service {

struct CheckedStudy {
  v1::StudySpec spec;       // as submitted, with a name (a default if empty)
  bool agents_gpu = false;  // cluster.gpu.preset is "agents"
  // The workload; with agents_gpu, its GPU is a stand-in until resolved.
  Workload workload;
  costmodel::SearchOptions search;
  TrialOptions trials;
};

// A study's name is printed in every user's `tessera studies`: at most this
// many bytes, and no control characters.
inline constexpr size_t kMaxStudyNameBytes = 200;
absl::Status CheckStudyName(absl::string_view name);

// Checks every part of `spec`. Nothing else happens.
absl::StatusOr<CheckedStudy> CheckStudySpec(const v1::StudySpec& spec);

// The workload of `spec` with its GPU replaced by `gpu` (every figure
// explicit): how an "agents" study's workload is resolved.
absl::StatusOr<Workload> WorkloadWithGpu(const v1::StudySpec& spec,
                                         const v1::GpuSpec& gpu);

// The explicit GpuSpec message of a resolved GPU (no preset).
v1::GpuSpec GpuSpecToProto(const GpuSpec& gpu);

// The JSON the store keeps (protobuf JSON, field names as in the .proto).
std::string StudySpecToJson(const v1::StudySpec& spec);
// Reads it back; INVALID_ARGUMENT naming `source` when it does not parse.
absl::StatusOr<v1::StudySpec> StudySpecFromStoredJson(absl::string_view json,
                                                      absl::string_view source);

// Prefixes an INVALID_ARGUMENT message with "study." (other codes pass).
absl::Status InStudy(const absl::Status& status);

}  // namespace tessera::service
