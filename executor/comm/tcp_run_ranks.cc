#include "executor/comm/tcp_run_ranks.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "executor/comm/internal/rank_threads.h"

namespace tessera::executor {
namespace {

// A fresh folder under $TMPDIR (or /tmp), removed with what is left in it.
class TempFolder {
 public:
  static absl::StatusOr<std::unique_ptr<TempFolder>> Create() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = absl::StrCat(
        tmp != nullptr && *tmp != '\0' ? tmp : "/tmp", "/tessera-tcp-XXXXXX");
    if (::mkdtemp(pattern.data()) == nullptr) {
      return absl::UnavailableError(absl::StrCat("temporary folder ", pattern,
                                                 ": ", std::strerror(errno)));
    }
    return std::unique_ptr<TempFolder>(new TempFolder(std::move(pattern)));
  }
  ~TempFolder() {
    ::unlink(file().c_str());
    ::rmdir(path_.c_str());
  }
  std::string file() const { return path_ + "/rendezvous"; }

 private:
  explicit TempFolder(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace

std::vector<absl::Status> RunTcpRanks(int n, const RankFunction& fn,
                                      TcpWorldOptions options) {
  if (n < 1) {
    return {absl::InvalidArgumentError(
        absl::StrCat("world size ", n, " (must be >= 1)"))};
  }
  std::unique_ptr<TempFolder> folder;
  if (options.rendezvous_file.empty()) {
    absl::StatusOr<std::unique_ptr<TempFolder>> created = TempFolder::Create();
    if (!created.ok()) return {created.status()};
    folder = *std::move(created);
    options.rendezvous_file = folder->file();
  }
  return comm_internal::RunOnThreads(n, [&](int rank) -> absl::Status {
    absl::StatusOr<std::unique_ptr<TcpCommunicator>> world =
        ConnectTcpWorld(rank, n, options);
    if (!world.ok()) return world.status();
    TcpCommunicator& tcp = **world;
    absl::Status status = fn(rank, tcp);
    const absl::Status cause =
        comm_internal::AbortCause(rank, status, tcp.abort_status());
    if (!cause.ok()) tcp.Abort(cause);
    return status;
  });
}

}  // namespace tessera::executor
