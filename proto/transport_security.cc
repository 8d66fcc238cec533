#include "proto/transport_security.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/file_io.h"
#include "grpcpp/security/auth_metadata_processor.h"
#include "proto/principals.h"

namespace tessera {
namespace {

// The file's text, or INVALID_ARGUMENT "<flag>: cannot read <path>".
absl::StatusOr<std::string> ReadFlagFile(absl::string_view path,
                                         absl::string_view flag) {
  absl::StatusOr<std::string> text = ReadFile(std::string(path));
  if (!text.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read ", path));
  }
  return text;
}

absl::StatusOr<std::string> ReadPem(absl::string_view path,
                                    absl::string_view flag) {
  absl::StatusOr<std::string> text = ReadFlagFile(path, flag);
  if (!text.ok()) return text.status();
  if (!absl::StrContains(*text, "-----BEGIN ")) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " is not PEM (no -----BEGIN line)"));
  }
  return text;
}

// Lets a call through only with "authorization: Bearer <token>" of a
// principal `callers` knows, or (with --tls-client-ca) a verified client
// certificate. It leaves the header in the call's metadata: the services
// read who calls from it (Callers::Of).
class CallerCheck : public grpc::AuthMetadataProcessor {
 public:
  explicit CallerCheck(std::shared_ptr<const Callers> callers)
      : callers_(std::move(callers)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata,
                       grpc::AuthContext* context, OutputMetadata*,
                       OutputMetadata*) override {
    const auto it = metadata.find("authorization");
    if (it != metadata.end()) {
      if (callers_->ByAuthorization(absl::string_view(
              it->second.data(), it->second.size())) == nullptr) {
        return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                            "the token is not one this planner knows "
                            "(--auth-token-file)");
      }
      return grpc::Status::OK;
    }
    if (callers_->ByCertificate(context).has_value()) return grpc::Status::OK;
    return grpc::Status(
        grpc::StatusCode::UNAUTHENTICATED,
        callers_->client_certificates()
            ? "this planner needs a token (--auth-token-file) or an agent's "
              "client certificate (--tls-cert/--tls-key)"
            : "this planner needs a token (--auth-token-file)");
  }

 private:
  const std::shared_ptr<const Callers> callers_;
};

}  // namespace

absl::Status CheckPrivateFile(const std::string& path, absl::string_view flag) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": cannot read ", path, ": ", std::strerror(errno)));
  }
  // Group bits are allowed: Kubernetes mounts a Secret for a non-root
  // process as root-owned, group fsGroup, mode 0440 (deploy/k8s).
  if ((st.st_mode & 007) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s can be read by others (mode %04o); a secret must be its "
        "owner's (and at most its group's): chmod 600 %s",
        flag, path, st.st_mode & 07777, path));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadTokenFile(absl::string_view path,
                                          absl::string_view flag) {
  absl::StatusOr<std::string> text = ReadFlagFile(path, flag);
  if (!text.ok()) return text.status();
  const absl::string_view token = absl::StripAsciiWhitespace(*text);
  if (token.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", path, " holds no token"));
  }
  if (token.size() < kMinTokenChars) {
    return absl::InvalidArgumentError(absl::StrCat(
        flag, ": ", path, " holds a token of ", token.size(),
        " characters; at least ", kMinTokenChars,
        " (deploy/tls/make-credentials.sh writes 64 hex digits: openssl rand "
        "-hex 32)"));
  }
  for (char c : token) {
    // A header value: printable ASCII, no line breaks inside.
    if (c < 0x20 || c > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, ": ", path,
                       " holds characters a token cannot have (one line of "
                       "printable ASCII)"));
    }
  }
  return std::string(token);
}

absl::StatusOr<ServerSecurity> ServerSecurityFromFiles(
    const ServerSecurityFiles& files) {
  const bool tls = !files.cert_file.empty() || !files.key_file.empty();
  if (!tls) {
    for (const auto& [path, flag] :
         {std::pair<const std::string*, const char*>{&files.token_file,
                                                     "--auth-token-file"},
          {&files.principals_file, "--principals-file"},
          {&files.client_ca_file, "--tls-client-ca"}}) {
      if (!path->empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            flag,
            ": needs TLS (--tls-cert and --tls-key): a credential sent in "
            "plaintext is anyone's"));
      }
    }
    return ServerSecurity{.credentials = grpc::InsecureServerCredentials(),
                          .callers = nullptr};
  }
  if (!files.token_file.empty() && !files.principals_file.empty()) {
    return absl::InvalidArgumentError(
        "--auth-token-file: give it or --principals-file, not both (the "
        "principals file names a token for each caller)");
  }
  if (files.cert_file.empty() || files.key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(files.cert_file.empty() ? "--tls-key" : "--tls-cert",
                     ": give --tls-cert and --tls-key together"));
  }
  absl::StatusOr<std::string> cert = ReadPem(files.cert_file, "--tls-cert");
  if (!cert.ok()) return cert.status();
  for (const auto& [path, flag] : {std::pair<const std::string*, const char*>{
                                       &files.key_file, "--tls-key"},
                                   {&files.token_file, "--auth-token-file"}}) {
    if (path->empty()) continue;
    if (absl::Status s = CheckPrivateFile(*path, flag); !s.ok()) return s;
  }
  absl::StatusOr<std::string> key = ReadPem(files.key_file, "--tls-key");
  if (!key.ok()) return key.status();
  PrincipalTable principals;
  if (!files.token_file.empty()) {
    // One token for every caller: they are not told apart.
    absl::StatusOr<std::string> token =
        ReadTokenFile(files.token_file, "--auth-token-file");
    if (!token.ok()) return token.status();
    principals.emplace(*std::move(token),
                       Principal{.name = "", .role = Role::kAnyone});
  }
  if (!files.principals_file.empty()) {
    absl::StatusOr<PrincipalTable> table =
        ReadPrincipalsFile(files.principals_file, "--principals-file");
    if (!table.ok()) return table.status();
    principals = *std::move(table);
  }
  grpc::SslServerCredentialsOptions options(
      files.client_ca_file.empty()
          ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
          // Users come with tokens and no certificate; a certificate that
          // is presented must verify.
          : GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY);
  if (!files.client_ca_file.empty()) {
    absl::StatusOr<std::string> ca =
        ReadPem(files.client_ca_file, "--tls-client-ca");
    if (!ca.ok()) return ca.status();
    options.pem_root_certs = *std::move(ca);
  }
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::SslServerCredentials(options);
  ServerSecurity out{.credentials = std::move(credentials), .callers = nullptr};
  if (!principals.empty() || !files.client_ca_file.empty()) {
    out.callers = std::make_shared<const Callers>(
        std::move(principals), !files.client_ca_file.empty());
    out.credentials->SetAuthMetadataProcessor(
        std::make_shared<CallerCheck>(out.callers));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
ServerCredentialsFromFiles(const ServerSecurityFiles& files) {
  absl::StatusOr<ServerSecurity> security = ServerSecurityFromFiles(files);
  if (!security.ok()) return security.status();
  return security->credentials;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
ChannelCredentialsFromFiles(const ClientSecurityFiles& files) {
  if (files.ca_file.empty()) {
    if (!files.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--auth-token-file: needs --tls-ca: a token sent in plaintext is "
          "anyone's");
    }
    if (!files.cert_file.empty() || !files.key_file.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(files.cert_file.empty() ? "--tls-key" : "--tls-cert",
                       ": a client certificate needs --tls-ca"));
    }
    return grpc::InsecureChannelCredentials();
  }
  absl::StatusOr<std::string> ca = ReadPem(files.ca_file, "--tls-ca");
  if (!ca.ok()) return ca.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = *std::move(ca);
  if (files.cert_file.empty() != files.key_file.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(files.cert_file.empty() ? "--tls-key" : "--tls-cert",
                     ": give --tls-cert and --tls-key together"));
  }
  if (!files.cert_file.empty()) {
    // The agent's client certificate: its common name is its agent id.
    if (absl::Status s = CheckPrivateFile(files.key_file, "--tls-key");
        !s.ok()) {
      return s;
    }
    absl::StatusOr<std::string> cert = ReadPem(files.cert_file, "--tls-cert");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem(files.key_file, "--tls-key");
    if (!key.ok()) return key.status();
    options.pem_cert_chain = *std::move(cert);
    options.pem_private_key = *std::move(key);
  }
  std::shared_ptr<grpc::ChannelCredentials> credentials =
      grpc::SslCredentials(options);
  if (files.token_file.empty()) return credentials;
  absl::StatusOr<std::string> token =
      ReadTokenFile(files.token_file, "--auth-token-file");
  if (!token.ok()) return token.status();
  return grpc::CompositeChannelCredentials(
      credentials, grpc::AccessTokenCredentials(*token));
}

}  // namespace tessera
