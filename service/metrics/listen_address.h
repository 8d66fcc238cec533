// HOST:PORT for an HTTP endpoint of the planner (the metrics endpoint, the
// dashboard) to listen on: parsed, the host resolved for bind(2), IPv6 in
// brackets, port 0 for any free one.
//
//   TESSERA_ASSIGN_OR_RETURN(ListenAddress a,
//       ResolveListenAddress(listen, "--http", "127.0.0.1:8080"));
//   MHD_start_daemon(... MHD_OPTION_SOCK_ADDR, a.sockaddr(), ...);
#pragma once

#include <netdb.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::service::metrics {

struct ListenAddress {
  std::string host;  // as written before the port (brackets kept)
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> resolved{nullptr,
                                                          &freeaddrinfo};
  const ::sockaddr* sockaddr() const { return resolved->ai_addr; }
  bool ipv6() const { return resolved->ai_family == AF_INET6; }
  // "host:port" with the port the endpoint bound.
  std::string WithPort(int port) const;
};

// INVALID_ARGUMENT naming `flag`: "<flag>: '<listen>' is not HOST:PORT (e.g.
// <example>)", or "<flag>: cannot resolve '<host>': <why>".
absl::StatusOr<ListenAddress> ResolveListenAddress(absl::string_view listen,
                                                   absl::string_view flag,
                                                   absl::string_view example);

}  // namespace tessera::service::metrics
