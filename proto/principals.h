// Who calls the planner (issue 15, "Principals and roles"): the principals
// file names each caller with a role and a token, and a client certificate
// signed by --tls-client-ca names an agent by its common name. The
// planner's token check (transport_security.cc) lets a call through only
// with a token or certificate Callers knows; the services then ask Callers
// who the call is (from the call's own metadata: gRPC's AuthContext is the
// connection's, shared by every call on it) and check the role
// (service/access.h).
//
// The file, one principal a line ('#' starts a comment):
//
//   # role   name          token (at least 32 characters)
//   admin    ops           6f1c...
//   user     alice         9a7e...
//   agent    node-017      c2d4...   # the agent id it must register as
//
// Without a principals file the callers are not told apart: an open
// planner (no TLS) and the one shared --auth-token-file give every caller
// Role::kAnyone, which may do everything.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"

namespace tessera {

enum class Role {
  kAgent,    // AgentService only, as the agent id that is its name
  kUser,     // PlannerService; cancels the studies it submitted
  kAdmin,    // PlannerService; cancels any study; submits command studies
  kCommandUser,  // a user who may also submit command studies (studies
                 // whose trials run their own command on the agents)
  kAnyone,   // callers not told apart: everything
  kUnknown,  // neither a known token nor a certificate: nothing
};

// "agent", "user", "command-user", "admin", "anyone", "unknown".
absl::string_view RoleName(Role role);

struct Principal {
  std::string name;  // "" for kAnyone
  Role role = Role::kAnyone;
};

// Principals by token.
using PrincipalTable = std::map<std::string, Principal, std::less<>>;

// Parses the principals file's text. INVALID_ARGUMENT "<flag>: line N: ..."
// for an unknown role, a name that is not 1-64 of [A-Za-z0-9._-], a token
// shorter than kMinTokenChars or not printable ASCII, a line without all
// three fields, a name or token given twice, or no principal at all.
absl::StatusOr<PrincipalTable> ParsePrincipals(absl::string_view text,
                                               absl::string_view flag);
// Reads and parses `path`, which others may not read (CheckPrivateFile).
absl::StatusOr<PrincipalTable> ReadPrincipalsFile(const std::string& path,
                                                  absl::string_view flag);

// Who calls: the principals by token and whether agents' client
// certificates (verified against --tls-client-ca) name agents.
class Callers {
 public:
  Callers(PrincipalTable by_token, bool client_certificates)
      : by_token_(std::move(by_token)),
        client_certificates_(client_certificates) {}

  // The principal an "authorization" header value ("Bearer <token>")
  // names, or null. Compares with every token in constant time.
  const Principal* ByAuthorization(absl::string_view header) const;
  // The verified client certificate's common name as an agent, or null.
  std::optional<Principal> ByCertificate(
      const grpc::AuthContext* context) const;
  // The call's principal: its bearer token's, else its certificate's; else
  // Role::kUnknown (which may do nothing).
  Principal Of(const grpc::ServerContextBase& context) const;

  bool client_certificates() const { return client_certificates_; }

 private:
  const PrincipalTable by_token_;
  const bool client_certificates_;
};

// The call's principal under `callers`; Role::kAnyone when callers is null
// (a planner that does not tell callers apart).
Principal CallerOf(const Callers* callers,
                   const grpc::ServerContextBase& context);

}  // namespace tessera
