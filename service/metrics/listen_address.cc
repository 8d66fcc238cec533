#include "service/metrics/listen_address.h"

#include <sys/socket.h>

#include <cstdint>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace tessera::service::metrics {

std::string ListenAddress::WithPort(int port) const {
  return absl::StrCat(host, ":", port);
}

absl::StatusOr<ListenAddress> ResolveListenAddress(absl::string_view listen,
                                                   absl::string_view flag,
                                                   absl::string_view example) {
  const size_t colon = listen.rfind(':');
  uint32_t port = 0;
  if (colon == absl::string_view::npos || colon == 0 ||
      !absl::SimpleAtoi(listen.substr(colon + 1), &port) || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": '", listen, "' is not HOST:PORT (e.g. ", example, ")"));
  }
  ListenAddress a;
  a.host = std::string(listen.substr(0, colon));
  std::string host = a.host;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints;
  std::memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* resolved = nullptr;
  const std::string port_text = absl::StrCat(port);
  if (const int error =
          getaddrinfo(host.c_str(), port_text.c_str(), &hints, &resolved);
      error != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": cannot resolve '", host, "': ", gai_strerror(error)));
  }
  a.resolved.reset(resolved);
  return a;
}

}  // namespace tessera::service::metrics
