#include "agents/result_spool.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agents/files.h"
#include "core/file_io.h"
#include "core/status_macros.h"
#include "nlohmann/json.hpp"

namespace tessera::agents {
namespace {

constexpr absl::string_view kEntryPrefix = "trial-";
constexpr absl::string_view kEntrySuffix = ".json";
constexpr absl::string_view kTempMarker = ".tmp-";  // in ".trial-7.json.tmp-"
constexpr absl::string_view kBadSuffix = ".bad";

bool IsEntryName(absl::string_view name) {
  return absl::StartsWith(name, kEntryPrefix) &&
         absl::EndsWith(name, kEntrySuffix);
}

bool IsTempName(absl::string_view name) {
  return absl::StartsWith(name, ".") && absl::StrContains(name, kTempMarker);
}

// The trial id of an entry name ("trial-42.json": 42); 0 when malformed.
int64_t TrialIdOf(absl::string_view name) {
  absl::string_view digits = name;
  digits.remove_prefix(kEntryPrefix.size());
  digits.remove_suffix(kEntrySuffix.size());
  int64_t id = 0;
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    return 0;
  }
  if (!absl::SimpleAtoi(digits, &id) || id < 1) return 0;
  // Only the name PathOf gives ("trial-042.json" would never be removed).
  if (name != absl::StrCat(kEntryPrefix, id, kEntrySuffix)) return 0;
  return id;
}

// Writes all of `content` to `fd`.
absl::Status WriteAll(int fd, absl::string_view content,
                      const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("cannot write", path, errno);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

ResultSpool::ResultSpool(std::string dir, ResultSpoolOptions options)
    : dir_(std::move(dir)), options_(options) {}

absl::StatusOr<ResultSpool> ResultSpool::Open(std::string dir,
                                              ResultSpoolOptions options) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty()) {
    return absl::InvalidArgumentError("result spool: no folder given");
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) {
      return absl::FailedPreconditionError(
          absl::StrCat("result spool '", dir, "' exists and is not a folder"));
    }
    // Whatever is in it is reported as this agent's: nobody else may write.
    if (st.st_uid != ::geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "result spool '", dir, "' is ",
          st.st_uid != ::geteuid()
              ? absl::StrCat("owned by uid ", st.st_uid, ", not ", ::geteuid())
              : "writable by other users",
          ": give the agent a folder of its own"));
    }
    return ResultSpool(std::move(dir), options);
  }
  if (errno != ENOENT) return ErrnoError("cannot read folder", dir, errno);
  const std::string parent = std::filesystem::path(dir).parent_path().string();
  if (!parent.empty()) TESSERA_RETURN_IF_ERROR(MakeDirectories(parent));
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return ErrnoError("cannot create the result spool", dir, errno);
  }
  return ResultSpool(std::move(dir), options);
}

std::string ResultSpool::PathOf(int64_t trial_id) const {
  return absl::StrCat(dir_, "/", kEntryPrefix, trial_id, kEntrySuffix);
}

absl::Status ResultSpool::SyncDir() const {
  const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open folder", dir_, errno);
  const int synced = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (synced != 0) return ErrnoError("cannot fsync folder", dir_, err);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ResultSpool::CountEntriesExcept(
    int64_t trial_id) const {
  std::error_code error;
  std::filesystem::directory_iterator it(dir_, error);
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot read the result spool '",
                                               dir_, "': ", error.message()));
  }
  const std::string own = absl::StrCat(kEntryPrefix, trial_id, kEntrySuffix);
  int64_t count = 0;
  for (; it != std::filesystem::directory_iterator(); it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (IsEntryName(name) && name != own) ++count;
  }
  if (error) {
    return absl::UnavailableError(absl::StrCat("cannot read the result spool '",
                                               dir_, "': ", error.message()));
  }
  return count;
}

absl::Status ResultSpool::Put(int64_t trial_id, absl::string_view result_json) {
  if (trial_id < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("result spool: trial id ", trial_id, " (must be >= 1)"));
  }
  if (static_cast<int64_t>(result_json.size()) > options_.max_result_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("result spool: trial ", trial_id, "'s result is ",
                     result_json.size(), " bytes, over the ",
                     options_.max_result_bytes, " bytes the planner takes"));
  }
  if (!nlohmann::json::accept(result_json)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "result spool: trial ", trial_id, "'s result is not valid JSON"));
  }
  TESSERA_ASSIGN_OR_RETURN(const int64_t others, CountEntriesExcept(trial_id));
  if (others >= options_.max_entries) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "result spool '", dir_, "' is full: ", others, " results (at most ",
        options_.max_entries, "); trial ", trial_id, "'s is not spooled"));
  }
  static std::atomic<int64_t> counter{0};
  const std::string path = PathOf(trial_id);
  const std::string temp =
      absl::StrCat(dir_, "/.", kEntryPrefix, trial_id, kEntrySuffix,
                   kTempMarker, ::getpid(), "-", counter.fetch_add(1));
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("cannot create", temp, errno);
  absl::Status written = WriteAll(fd, result_json, temp);
  if (written.ok() && ::fsync(fd) != 0) {
    written = ErrnoError("cannot fsync", temp, errno);
  }
  if (::close(fd) != 0 && written.ok()) {
    written = ErrnoError("cannot close", temp, errno);
  }
  if (written.ok() && ::rename(temp.c_str(), path.c_str()) != 0) {
    written = ErrnoError("cannot rename onto", path, errno);
  }
  if (!written.ok()) {
    ::unlink(temp.c_str());
    return written;
  }
  return SyncDir();
}

absl::Status ResultSpool::Remove(int64_t trial_id) {
  const std::string path = PathOf(trial_id);
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT) return absl::OkStatus();
    return ErrnoError("cannot remove", path, errno);
  }
  return SyncDir();
}

absl::StatusOr<SpoolListing> ResultSpool::List() {
  std::vector<std::string> names;
  {
    std::error_code error;
    std::filesystem::directory_iterator it(dir_, error);
    for (; !error && it != std::filesystem::directory_iterator();
         it.increment(error)) {
      names.push_back(it->path().filename().string());
    }
    if (error) {
      return absl::UnavailableError(absl::StrCat(
          "cannot read the result spool '", dir_, "': ", error.message()));
    }
  }
  std::sort(names.begin(), names.end());
  SpoolListing listing;
  bool changed = false;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir_, "/", name);
    if (IsTempName(name)) {
      // An interrupted Put: its entry was never renamed into place.
      if (::unlink(path.c_str()) == 0) changed = true;
      continue;
    }
    if (!IsEntryName(name)) continue;  // *.bad, and files not ours
    std::string why;
    const int64_t trial_id = TrialIdOf(name);
    struct stat st;
    absl::StatusOr<std::string> text;
    if (trial_id == 0) {
      why = "its name holds no trial id";
    } else if (::stat(path.c_str(), &st) != 0) {
      why = std::strerror(errno);
    } else if (!S_ISREG(st.st_mode)) {
      why = "not a regular file";
    } else if (st.st_size > options_.max_result_bytes) {
      why = absl::StrCat(st.st_size, " bytes, over the ",
                         options_.max_result_bytes, " bytes the planner takes");
    } else if (text = ReadFile(path); !text.ok()) {
      why = std::string(text.status().message());
    } else if (!nlohmann::json::accept(*text)) {
      why = text->empty() ? "empty" : "not valid JSON";
    } else {
      listing.results.push_back(SpooledResult{trial_id, *std::move(text)});
      continue;
    }
    const std::string aside = absl::StrCat(path, kBadSuffix);
    std::string moved;
    if (::rename(path.c_str(), aside.c_str()) == 0) {
      changed = true;
      moved = absl::StrCat("; moved aside as '", aside, "'");
    } else {
      moved = absl::StrCat("; cannot move it aside as '", aside,
                           "': ", std::strerror(errno));
    }
    listing.errors.push_back(absl::DataLossError(absl::StrCat(
        "unusable result spool entry '", path, "': ", why, moved)));
  }
  if (changed) (void)SyncDir();
  std::sort(listing.results.begin(), listing.results.end(),
            [](const SpooledResult& a, const SpooledResult& b) {
              return a.trial_id < b.trial_id;
            });
  return listing;
}

}  // namespace tessera::agents
