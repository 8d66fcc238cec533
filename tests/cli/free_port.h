// Loopback ports for the CLI's service tests: one nothing listens on (a
// planner that cannot be reached) and one that accepts connections but
// never answers (a call that must hit its deadline).
//
//   const int port = UnusedLoopbackPort();
//   SilentListener silent;  // silent.port() accepts, never speaks
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tessera::cli {

// A socket bound to 127.0.0.1 on a port the kernel picks; listening when
// `listen_backlog` > 0. Returns the fd (or -1) and sets *port.
inline int BindLoopback(int* port, int listen_backlog) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
      (listen_backlog > 0 && listen(fd, listen_backlog) != 0)) {
    close(fd);
    return -1;
  }
  *port = ntohs(addr.sin_port);
  return fd;
}

// A port that was free a moment ago and has nothing listening on it.
inline int UnusedLoopbackPort() {
  int port = 0;
  const int fd = BindLoopback(&port, 0);
  if (fd >= 0) close(fd);
  return port;
}

// Listens on a loopback port and never accepts: connections complete in the
// kernel's backlog, and no byte of HTTP/2 ever comes back.
class SilentListener {
 public:
  SilentListener() : fd_(BindLoopback(&port_, 16)) {}
  ~SilentListener() {
    if (fd_ >= 0) close(fd_);
  }
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;

  bool ok() const { return fd_ >= 0; }
  int port() const { return port_; }

 private:
  int port_ = 0;
  int fd_ = -1;
};

}  // namespace tessera::cli
