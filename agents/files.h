// The few file operations the agent needs around its trials beyond
// core/file_io.h's whole files (ReadFile, WriteFileAtomically): the tail of
// a log, and folders.
//
//   TESSERA_RETURN_IF_ERROR(WriteFileAtomically(dir + "/rdv", "host:1234\n"));
//   std::string tail = ReadFileTail(dir + "/rank-0.err", 4096);
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/file_io.h"

namespace tessera::agents {

// The last `max_bytes` bytes of the file ("" when it is missing or empty).
std::string ReadFileTail(const std::string& path, int64_t max_bytes);

// Creates `path` and its missing parents (mode 0755); OK when it exists.
absl::Status MakeDirectories(const std::string& path);

// A new, empty folder under `parent` named `prefix` plus a unique suffix.
absl::StatusOr<std::string> MakeUniqueDirectory(const std::string& parent,
                                                absl::string_view prefix);

// Removes `path` and everything under it; OK when it does not exist.
absl::Status RemoveTree(const std::string& path);

}  // namespace tessera::agents
