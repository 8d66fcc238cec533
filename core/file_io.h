// Whole files: read at once, and written atomically (a reader sees the old
// file or the whole new one, never half of it).
//
//   TESSERA_ASSIGN_OR_RETURN(std::string text, ReadFile("study.json"));
//   TESSERA_RETURN_IF_ERROR(WriteFileAtomically("report.html", html));
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera {

// UNAVAILABLE "<what> '<path>': <strerror(err)>", for a failed system call
// on a file (err: its errno).
absl::Status ErrnoError(absl::string_view what, const std::string& path,
                        int err);

// The whole file. NOT_FOUND when it does not exist, UNAVAILABLE when it
// cannot be read (the message names the path and why).
absl::StatusOr<std::string> ReadFile(const std::string& path);

// Writes `content` to a temporary file in the same folder, then renames it
// over `path`. UNAVAILABLE naming the path and why; no temporary file is
// left behind.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content);

}  // namespace tessera
