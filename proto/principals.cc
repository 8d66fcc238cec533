#include "proto/principals.h"

#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/file_io.h"
#include "proto/transport_security.h"

namespace tessera {
namespace {

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '_' || c == '-';
}

absl::StatusOr<Role> ParseRole(absl::string_view text) {
  if (text == "agent") return Role::kAgent;
  if (text == "user") return Role::kUser;
  if (text == "admin") return Role::kAdmin;
  if (text == "command-user") return Role::kCommandUser;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown role '", text, "' (agent, user, command-user or admin)"));
}

}  // namespace

absl::string_view RoleName(Role role) {
  switch (role) {
    case Role::kAgent:
      return "agent";
    case Role::kUser:
      return "user";
    case Role::kAdmin:
      return "admin";
    case Role::kCommandUser:
      return "command-user";
    case Role::kAnyone:
      return "anyone";
    case Role::kUnknown:
      return "unknown";
  }
  return "unknown";
}

absl::StatusOr<PrincipalTable> ParsePrincipals(absl::string_view text,
                                               absl::string_view flag) {
  PrincipalTable table;
  std::set<std::string> names;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const auto bad = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": line ", line_number, ": ", why));
    };
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) {
      line = line.substr(0, hash);
    }
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields.size() != 3) {
      return bad(absl::StrCat("want 'ROLE NAME TOKEN', got ", fields.size(),
                              " field(s)"));
    }
    absl::StatusOr<Role> role = ParseRole(fields[0]);
    if (!role.ok()) return bad(role.status().message());
    const absl::string_view name = fields[1];
    if (name.empty() || name.size() > 64) {
      return bad("a name has 1 to 64 characters");
    }
    for (char c : name) {
      if (!IsNameChar(c)) {
        return bad(absl::StrCat("name '", name,
                                "': only letters, digits, '.', '_' and '-'"));
      }
    }
    const absl::string_view token = fields[2];
    if (token.size() < kMinTokenChars) {
      return bad(absl::StrCat("the token of ", name, " has ", token.size(),
                              " characters; at least ", kMinTokenChars,
                              " (openssl rand -hex 32)"));
    }
    for (char c : token) {
      if (c < 0x21 || c > 0x7e) {
        return bad(absl::StrCat("the token of ", name,
                                " has characters a token cannot have"));
      }
    }
    if (!names.insert(std::string(name)).second) {
      return bad(absl::StrCat("the name ", name, " is given twice"));
    }
    if (!table
             .emplace(std::string(token),
                      Principal{.name = std::string(name), .role = *role})
             .second) {
      return bad(
          absl::StrCat("the token of ", name, " is another principal's too"));
    }
  }
  if (table.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": names no principal ('ROLE NAME TOKEN' lines)"));
  }
  return table;
}

absl::StatusOr<PrincipalTable> ReadPrincipalsFile(const std::string& path,
                                                  absl::string_view flag) {
  if (absl::Status s = CheckPrivateFile(path, flag); !s.ok()) return s;
  absl::StatusOr<std::string> text = ReadFile(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read ", path));
  }
  return ParsePrincipals(*text, flag);
}

namespace {

// Equal without an early exit, so that the time taken says nothing about
// how much of a guess was right.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

}  // namespace

const Principal* Callers::ByAuthorization(absl::string_view header) const {
  const Principal* found = nullptr;
  for (const auto& [token, principal] : by_token_) {
    if (ConstantTimeEquals(header, absl::StrCat("Bearer ", token))) {
      found = &principal;
    }
  }
  return found;
}

std::optional<Principal> Callers::ByCertificate(
    const grpc::AuthContext* context) const {
  if (!client_certificates_ || context == nullptr) return std::nullopt;
  // Set by the TLS handshake, for the connection, only for a certificate
  // that verified.
  const std::vector<grpc::string_ref> cn =
      context->FindPropertyValues("x509_common_name");
  if (cn.size() != 1 || cn[0].size() == 0) return std::nullopt;
  return Principal{.name = std::string(cn[0].data(), cn[0].size()),
                   .role = Role::kAgent};
}

Principal Callers::Of(const grpc::ServerContextBase& context) const {
  const auto& metadata = context.client_metadata();
  const auto it = metadata.find("authorization");
  if (it != metadata.end()) {
    const Principal* p = ByAuthorization(
        absl::string_view(it->second.data(), it->second.size()));
    return p != nullptr ? *p : Principal{.name = "", .role = Role::kUnknown};
  }
  std::optional<Principal> p = ByCertificate(context.auth_context().get());
  return p ? *std::move(p) : Principal{.name = "", .role = Role::kUnknown};
}

Principal CallerOf(const Callers* callers,
                   const grpc::ServerContextBase& context) {
  if (callers == nullptr) return {};
  return callers->Of(context);
}

}  // namespace tessera
