#include "core/file_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace tessera {

absl::Status ErrnoError(absl::string_view what, const std::string& path,
                        int err) {
  return absl::UnavailableError(
      absl::StrCat(what, " '", path, "': ", std::strerror(err)));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    if (err == ENOENT) {
      return absl::NotFoundError(absl::StrCat("no file '", path, "'"));
    }
    return ErrnoError("cannot open", path, err);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return ErrnoError("cannot read", path, errno);
  return text.str();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 absl::string_view content) {
  static std::atomic<int64_t> counter{0};
  const std::string temp =
      absl::StrCat(path, ".tmp.", ::getpid(), ".", counter.fetch_add(1));
  const int fd =
      ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError("cannot create", temp, errno);
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      return ErrnoError("cannot write", temp, err);
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return ErrnoError("cannot close", temp, err);
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(temp.c_str());
    return ErrnoError("cannot rename onto", path, err);
  }
  return absl::OkStatus();
}

}  // namespace tessera
