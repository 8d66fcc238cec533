// Trials as `tessera trials` prints them: a table for people (id, study,
// rung, state, layout, steps, tokens/s, MFU, memory, exposed comm, watts,
// predicted tokens/s, reason; "—" where nothing was measured, the reason
// cut to fit) or CSV with raw numbers (empty where nothing was measured)
// and the whole reason.
//
//   PrintTrialTable(response.trials(), std::cout);
//   PrintTrialCsv(response.trials(), std::cout);
//   // id,study_id,rung,state,layout,steps,tokens_per_s,mfu,...
#pragma once

#include <optional>
#include <ostream>
#include <string>

#include "cli/output_format.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "tessera/v1/service.pb.h"

namespace tessera::cli {

using Trials = google::protobuf::RepeatedPtrField<v1::Trial>;

// The longest reason the table shows (-o wide, the CSV and JSON keep all of
// it).
inline constexpr size_t kReasonWidth = 40;

// The table's placeholder for a number that was not measured.
inline constexpr char kNotMeasured[] = "—";

// The header and one row per trial, in the order given; lines fit
// `max_width` characters (wrapping the layout, cutting the reason, then
// dropping the least important columns) when it is not 0 (every column).
void PrintTrialTable(const Trials& trials, std::ostream& out,
                     size_t max_width = 0);
// A header line (id, study_id, rung, state, layout, steps, tokens_per_s,
// mfu, peak_memory_bytes, exposed_comm_s, watts_per_gpu,
// predicted_tokens_per_s, reason, model, gpu, created) and one line per
// trial.
void PrintTrialCsv(const Trials& trials, std::ostream& out);

}  // namespace tessera::cli
