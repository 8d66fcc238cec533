// TLS and a shared bearer token on the planner's connections (docs/security.md,
// docs/deployment.md: TLS for every connection, a token for agents and users).
// Without them the connections are plaintext and open, which is what the
// quickstart's loopback wants and nothing else should.
//
//   tessera-planner --tls-cert planner.pem --tls-key planner.key
//                   --auth-token-file token ...
//   tessera-agent   --tls-ca ca.pem --auth-token-file token ...
//   tessera studies --tls-ca ca.pem --auth-token-file token
//
// The planner's certificate must name the host the clients dial (a DNS or IP
// subject alternative name). Clients send "authorization: Bearer <token>";
// the planner answers UNAUTHENTICATED to a call without the right one. A
// token needs TLS on both sides: one sent in plaintext is anyone's.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/security/server_credentials.h"
#include "proto/principals.h"

namespace tessera {

// The planner's side; "" for a file not given.
struct ServerSecurityFiles {
  std::string cert_file{};   // --tls-cert: PEM certificate chain
  std::string key_file{};    // --tls-key: PEM private key
  std::string token_file{};  // --auth-token-file: one token, callers alike
  // --principals-file: named callers, their roles and tokens (principals.h)
  std::string principals_file{};
  // --tls-client-ca: PEM certificates that sign agents' client
  // certificates; an agent's common name is its agent id
  std::string client_ca_file{};
};

// Plaintext credentials when no file is given; TLS otherwise, with every
// call resolved to a principal (principals.h) when a token, a principals
// file or a client CA is given. INVALID_ARGUMENT naming the flag: one of
// --tls-cert / --tls-key without the other, a credential without TLS, both
// --auth-token-file and --principals-file, a file that cannot be read, is
// not PEM, or holds no token or a short one; the key, the token file and
// the principals file readable by others (CheckPrivateFile).
struct ServerSecurity {
  std::shared_ptr<grpc::ServerCredentials> credentials;
  // Who each call is (principals.h); null when callers are not told apart
  // (no TLS, or TLS without a token, principals file or client CA).
  std::shared_ptr<const Callers> callers;
};
absl::StatusOr<ServerSecurity> ServerSecurityFromFiles(
    const ServerSecurityFiles& files);
// ServerSecurityFromFiles' credentials alone.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
ServerCredentialsFromFiles(const ServerSecurityFiles& files);

// An agent's or a user's side; "" for a file not given.
struct ClientSecurityFiles {
  std::string ca_file{};     // --tls-ca: PEM certificates that sign the planner's
  std::string token_file{};  // --auth-token-file
  // An agent's client certificate (--tls-cert) and its key (--tls-key,
  // which others may not read): the planner takes its common name as the
  // agent id when it serves --tls-client-ca.
  std::string cert_file{};
  std::string key_file{};
};

// Plaintext when no file is given; TLS checked against the CA, with the
// token on every call and the client certificate when given.
// INVALID_ARGUMENT naming the flag: a token without --tls-ca, one of
// --tls-cert / --tls-key without the other, a file that cannot be read, is
// not PEM, or holds no token.
absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
ChannelCredentialsFromFiles(const ClientSecurityFiles& files);

// A token shorter than this is refused on both sides: 32 characters of a
// random hex or base64 string are 128 bits or more.
inline constexpr size_t kMinTokenChars = 32;

// OK when `path` grants nothing to others (owner and group bits only: a
// Kubernetes Secret is mounted 0440 for its fsGroup); INVALID_ARGUMENT
// "<flag>: ... chmod 600 ..." otherwise.
absl::Status CheckPrivateFile(const std::string& path, absl::string_view flag);

// The token a file holds: its text without surrounding white space.
// INVALID_ARGUMENT "<flag>: ..." when it cannot be read, holds nothing, or
// holds fewer than kMinTokenChars characters.
absl::StatusOr<std::string> ReadTokenFile(absl::string_view path,
                                          absl::string_view flag);

}  // namespace tessera
