// The fuzz entry point over the layout and spec parsers, shared by the
// libFuzzer binary (TESSERA_FUZZ with Clang) and the smoke driver that ctest
// runs with any compiler.
//
// An input is "<layout text>\n<study spec JSON>"; without a newline it is a
// layout only. Each part goes through everything a user's input reaches:
//   layout: ParseLayout, the JSON round trip, ResolveLayout for several
//           world sizes and batches, the text round trip of the resolved
//           layout, CheckLayoutFitsModel, PredictLayout on three preset
//           workloads;
//   spec:   StudySpecFromJson, WorkloadFromSpec, SpecFromWorkload round
//           trip, and PredictLayout of the parsed layout on the workload.
// Invariants that must hold for any input abort (a fuzzer finding).
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
