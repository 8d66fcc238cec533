// The `tessera` command's exit status, shared by every subcommand, and the one
// way a subcommand reports an error: one line on stderr, "tessera <command>:
// <field>: <what is wrong>".
//
//   if (!status.ok()) return ReportError(err, "tessera plan", status);
#pragma once

#include <ostream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace tessera::cli {

inline constexpr int kExitOk = 0;        // success (predict: also infeasible)
inline constexpr int kExitFailure = 1;   // internal or service failure
inline constexpr int kExitBadInput = 2;  // unknown command or flag, bad value,
                                         // invalid spec, unreachable batch
inline constexpr int kExitNoFeasible = 3;    // plan: every layout was rejected
inline constexpr int kExitStudyNotDone = 4;  // watch, submit --wait: the study
                                             // ended cancelled or failed

// The exit status section of every help text.
inline constexpr absl::string_view kExitStatusHelp =
    "Exit status:\n"
    "  0  success (predict: also when the layout is infeasible; the output\n"
    "     says why)\n"
    "  1  internal failure, or the planner service cannot be reached, did\n"
    "     not answer in time, or failed\n"
    "  2  bad input: unknown command or flag, missing or malformed value,\n"
    "     invalid spec (unknown preset, zero GPUs, ...), a global batch no\n"
    "     layout can reach, a malformed layout; one line on stderr names the\n"
    "     field\n"
    "  3  plan: no layout is feasible (the output lists why they were\n"
    "     rejected)\n"
    "  4  watch, submit --wait: the study ended cancelled or failed\n";

// --out's error for `path` as the user gave it (not the temporary file the
// write went through): INVALID_ARGUMENT "--out: cannot write PATH: <why>",
// since a path that cannot be written is bad input.
inline absl::Status OutPathError(absl::string_view path,
                                 const absl::Status& write_error) {
  absl::string_view why = write_error.message();
  const size_t at = why.rfind("': ");
  if (at != absl::string_view::npos) why = why.substr(at + 3);
  return absl::InvalidArgumentError(
      absl::StrCat("--out: cannot write ", path, ": ", why));
}

// Writes "<command>: <message>" as one line to `err` (an INVALID_ARGUMENT
// that lists several problems, one per line as FlagSet::Parse does, as one
// such line each) and returns the exit status for `status`: kExitBadInput
// for INVALID_ARGUMENT, NOT_FOUND and OUT_OF_RANGE, kExitFailure otherwise.
inline int ReportError(std::ostream& err, absl::string_view command,
                       const absl::Status& status) {
  if (status.code() == absl::StatusCode::kInvalidArgument) {
    for (absl::string_view line : absl::StrSplit(
             status.message(), absl::ByAnyChar("\r\n"), absl::SkipEmpty())) {
      err << command << ": " << line << "\n";
    }
  } else {
    err << command << ": "
        << absl::StrReplaceAll(status.message(), {{"\n", " "}, {"\r", " "}})
        << "\n";
  }
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
      return kExitBadInput;
    default:
      return kExitFailure;
  }
}

}  // namespace tessera::cli
