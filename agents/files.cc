#include "agents/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "core/file_io.h"

namespace tessera::agents {
std::string ReadFileTail(const std::string& path, int64_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || max_bytes <= 0) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff start = size > max_bytes ? size - max_bytes : 0;
  in.seekg(start);
  std::string tail(static_cast<size_t>(size - start), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<size_t>(in.gcount()));
  return tail;
}

absl::Status MakeDirectories(const std::string& path) {
  std::error_code error;
  std::filesystem::create_directories(path, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot create folder '", path, "': ", error.message()));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> MakeUniqueDirectory(const std::string& parent,
                                                absl::string_view prefix) {
  if (absl::Status s = MakeDirectories(parent); !s.ok()) return s;
  absl::string_view folder = parent;
  while (folder.size() > 1 && folder.back() == '/') folder.remove_suffix(1);
  std::string pattern = absl::StrCat(folder, "/", prefix, "XXXXXX");
  if (::mkdtemp(pattern.data()) == nullptr) {
    return ErrnoError("cannot create a folder like", pattern, errno);
  }
  return pattern;
}

absl::Status RemoveTree(const std::string& path) {
  std::error_code error;
  std::filesystem::remove_all(path, error);
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("cannot remove '", path, "': ", error.message()));
  }
  return absl::OkStatus();
}

}  // namespace tessera::agents
