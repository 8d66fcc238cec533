#include "executor/comm/internal/tcp_socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera::executor::tcp_internal {
namespace {

// Polls sleep at most this long, so that stop checks stay prompt.
constexpr int kPollSliceMs = 50;

std::string ErrnoText(int err) { return std::strerror(err); }

// Milliseconds to poll for: what is left of the deadline, at most `cap_ms`
// (-1 when there is no deadline and no cap).
int PollMs(const Deadline& deadline, int cap_ms) {
  if (!deadline.has_value()) return cap_ms;
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      *deadline - Clock::now());
  const int64_t ms = std::max<int64_t>(0, left.count() + 1);
  return cap_ms < 0 ? static_cast<int>(std::min<int64_t>(ms, 1 << 30))
                    : static_cast<int>(std::min<int64_t>(ms, cap_ms));
}

// Waits until `fd` is ready for `events` or the deadline passes. OK when
// ready (or in error: the next call reports it), DEADLINE_EXCEEDED, or
// CANCELLED when stop() turned true.
absl::Status WaitReady(int fd, short events, const Deadline& deadline,
                       absl::FunctionRef<bool()> stop) {
  for (;;) {
    if (stop()) return absl::CancelledError("stopped");
    if (Expired(deadline)) return absl::DeadlineExceededError("timed out");
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, PollMs(deadline, kPollSliceMs));
    if (n > 0) return absl::OkStatus();
    if (n < 0 && errno != EINTR) {
      return absl::UnavailableError(absl::StrCat("poll: ", ErrnoText(errno)));
    }
  }
}

absl::Status SetNonBlocking(int fd, bool on) {
  const int flags = ::fcntl(fd, F_GETFL, 0);
  if (flags < 0 ||
      ::fcntl(fd, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) < 0) {
    return absl::InternalError(absl::StrCat("fcntl: ", ErrnoText(errno)));
  }
  return absl::OkStatus();
}

void SetNoDelay(int fd) {
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { ::freeaddrinfo(info); }
};
using AddrInfoPtr = std::unique_ptr<addrinfo, AddrInfoDeleter>;

absl::StatusOr<AddrInfoPtr> Resolve(const std::string& host, int port,
                                    bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* info = nullptr;
  const std::string service = absl::StrCat(port);
  const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(),
                               service.c_str(), &hints, &info);
  if (rc != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve ", host, ": ", ::gai_strerror(rc)));
  }
  return AddrInfoPtr(info);
}

}  // namespace

Deadline DeadlineAfter(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return std::nullopt;
  return Clock::now() + absl::ToChronoNanoseconds(timeout);
}

bool Expired(const Deadline& deadline) {
  return deadline.has_value() && Clock::now() >= *deadline;
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

std::string FormatHostPort(const HostPort& address) {
  if (address.host.find(':') != std::string::npos) {
    return absl::StrCat("[", address.host, "]:", address.port);
  }
  return absl::StrCat(address.host, ":", address.port);
}

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text) {
  const absl::string_view stripped = absl::StripAsciiWhitespace(text);
  const size_t colon = stripped.rfind(':');
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("address \"", stripped, "\": ", why));
  };
  if (colon == absl::string_view::npos) return bad("expected host:port");
  absl::string_view host = stripped.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  if (host.empty()) return bad("empty host");
  if (!absl::SimpleAtoi(stripped.substr(colon + 1), &port) || port <= 0 ||
      port > 65535) {
    return bad("port must be 1..65535");
  }
  return HostPort{std::string(host), port};
}

bool IsWildcardHost(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]";
}

absl::StatusOr<Socket> Listen(const std::string& host, int port) {
  auto failure = [&](absl::string_view what, int err) {
    return absl::UnavailableError(
        absl::StrCat("listen on ", FormatHostPort({host, port}), ": ", what,
                     ": ", ErrnoText(err)));
  };
  absl::StatusOr<AddrInfoPtr> info = Resolve(host, port, /*passive=*/true);
  if (!info.ok()) return info.status();
  int last_errno = EADDRNOTAVAIL;
  for (addrinfo* a = info->get(); a != nullptr; a = a->ai_next) {
    Socket s(
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last_errno = errno;
      continue;
    }
    const int one = 1;
    ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      last_errno = errno;
      continue;
    }
    if (::listen(s.fd(), SOMAXCONN) != 0) return failure("listen", errno);
    return s;
  }
  return failure("bind", last_errno);
}

absl::StatusOr<int> LocalPort(const Socket& socket) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (::getsockname(socket.fd(), reinterpret_cast<sockaddr*>(&addr), &len) !=
      0) {
    return absl::InternalError(absl::StrCat("getsockname: ", ErrnoText(errno)));
  }
  if (addr.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port);
  }
  return ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
}

absl::StatusOr<Socket> Connect(const HostPort& address,
                               const Deadline& deadline) {
  absl::StatusOr<AddrInfoPtr> info =
      Resolve(address.host, address.port, /*passive=*/false);
  if (!info.ok()) return info.status();
  std::string last_error = "no address";
  for (addrinfo* a = info->get(); a != nullptr; a = a->ai_next) {
    Socket s(
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
    if (!s.valid()) {
      last_error = ErrnoText(errno);
      continue;
    }
    if (absl::Status st = SetNonBlocking(s.fd(), true); !st.ok()) return st;
    int err = 0;
    if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        absl::Status ready =
            WaitReady(s.fd(), POLLOUT, deadline, [] { return false; });
        if (!ready.ok()) {
          return absl::DeadlineExceededError(absl::StrCat(
              "connect to ", FormatHostPort(address), ": timed out"));
        }
        socklen_t len = sizeof(err);
        ::getsockopt(s.fd(), SOL_SOCKET, SO_ERROR, &err, &len);
      }
    }
    if (err != 0) {
      last_error = ErrnoText(err);
      continue;
    }
    if (absl::Status st = SetNonBlocking(s.fd(), false); !st.ok()) return st;
    SetNoDelay(s.fd());
    return s;
  }
  return absl::UnavailableError(
      absl::StrCat("connect to ", FormatHostPort(address), ": ", last_error));
}

absl::StatusOr<Socket> Accept(const Socket& listener,
                              const Deadline& deadline) {
  for (;;) {
    absl::Status ready =
        WaitReady(listener.fd(), POLLIN, deadline, [] { return false; });
    if (!ready.ok()) return ready;
    Socket s(::accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (s.valid()) {
      SetNoDelay(s.fd());
      return s;
    }
    if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
      return absl::UnavailableError(absl::StrCat("accept: ", ErrnoText(errno)));
    }
  }
}

absl::Status WriteAll(int fd, absl::Span<const ByteRange> ranges,
                      const Deadline& deadline,
                      absl::FunctionRef<bool()> stop) {
  std::vector<iovec> iov;
  iov.reserve(ranges.size());
  for (const ByteRange& r : ranges) {
    if (r.bytes > 0) iov.push_back({const_cast<void*>(r.data), r.bytes});
  }
  size_t first = 0;  // iov[first..] is left to write
  while (first < iov.size()) {
    msghdr msg{};
    msg.msg_iov = iov.data() + first;
    msg.msg_iovlen = std::min<size_t>(iov.size() - first, IOV_MAX);
    const ssize_t n = ::sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        return absl::UnavailableError(ErrnoText(errno));
      }
      absl::Status ready = WaitReady(fd, POLLOUT, deadline, stop);
      if (!ready.ok()) return ready;
      continue;
    }
    size_t written = static_cast<size_t>(n);
    while (first < iov.size() && written >= iov[first].iov_len) {
      written -= iov[first].iov_len;
      ++first;
    }
    if (first < iov.size()) {
      iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + written;
      iov[first].iov_len -= written;
    }
  }
  return absl::OkStatus();
}

absl::Status ReadAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n == 0) return absl::UnavailableError("connection closed by peer");
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status ReadAllBefore(int fd, void* data, size_t bytes,
                           const Deadline& deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    absl::Status ready = WaitReady(fd, POLLIN, deadline, [] { return false; });
    if (!ready.ok()) return ready;
    const ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n == 0) return absl::UnavailableError("connection closed by peer");
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
      return absl::UnavailableError(ErrnoText(errno));
    }
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

size_t UnacknowledgedBytes(int fd) {
  int pending = 0;
  if (::ioctl(fd, SIOCOUTQ, &pending) != 0 || pending < 0) return 0;
  return static_cast<size_t>(pending);
}

}  // namespace tessera::executor::tcp_internal
