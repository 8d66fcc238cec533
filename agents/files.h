// The few file operations the agent needs around its trials: whole files,
// the tail of a log, atomic replacement (a reader sees the old file or the
// whole new one, never half), and folders.
//
//   TESSERA_RETURN_IF_ERROR(WriteFileAtomically(dir + "/rdv", "host:1234\n"));
//   std::string tail = ReadFileTail(dir + "/rank-0.err", 4096);
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::agents {

// The whole file. NOT_FOUND when it does not exist, UNAVAILABLE when it
// cannot be read.
absl::StatusOr<std::string> ReadFile(const std::string& path);

// The last `max_bytes` bytes of the file ("" when it is missing or empty).
std::string ReadFileTail(const std::string& path, int64_t max_bytes);

// Writes `content` to a temporary file in the same folder, then renames it
// over `path`.
absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content);

// Creates `path` and its missing parents (mode 0755); OK when it exists.
absl::Status MakeDirectories(const std::string& path);

// A new, empty folder under `parent` named `prefix` plus a unique suffix.
absl::StatusOr<std::string> MakeUniqueDirectory(const std::string& parent,
                                                absl::string_view prefix);

// Removes `path` and everything under it; OK when it does not exist.
absl::Status RemoveTree(const std::string& path);

}  // namespace tessera::agents
