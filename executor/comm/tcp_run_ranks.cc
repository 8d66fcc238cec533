#include "executor/comm/tcp_run_ranks.h"

#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"

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
  std::vector<absl::Status> statuses(n);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int rank = 0; rank < n; ++rank) {
    threads.emplace_back([&, rank] {
      absl::StatusOr<std::unique_ptr<Communicator>> world =
          ConnectTcpWorld(rank, n, options);
      if (!world.ok()) {
        statuses[rank] = world.status();
        return;
      }
      auto& tcp = static_cast<TcpCommunicator&>(**world);
      absl::Status status = fn(rank, tcp);
      // A rank that returns ABORTED was itself aborted by another: it is
      // not a new cause (unless nothing aborted the world yet).
      if (!status.ok() && (status.code() != absl::StatusCode::kAborted ||
                           tcp.abort_status().ok())) {
        tcp.Abort(absl::Status(
            status.code(),
            absl::StrCat("rank ", rank, " failed: ", status.ToString())));
      }
      statuses[rank] = std::move(status);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return statuses;
}

}  // namespace tessera::executor
