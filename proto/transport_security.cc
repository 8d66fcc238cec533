#include "proto/transport_security.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "core/file_io.h"
#include "grpcpp/security/auth_metadata_processor.h"

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

// Equal without an early exit, so that the time taken says nothing about
// how much of a guess was right.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// Lets a call through only with "authorization: Bearer <token>".
class BearerTokenCheck : public grpc::AuthMetadataProcessor {
 public:
  explicit BearerTokenCheck(std::string token)
      : expected_(absl::StrCat("Bearer ", token)) {}

  bool IsBlocking() const override { return false; }

  grpc::Status Process(const InputMetadata& metadata, grpc::AuthContext*,
                       OutputMetadata* consumed, OutputMetadata*) override {
    const auto it = metadata.find("authorization");
    if (it == metadata.end()) {
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                          "this planner needs a token (--auth-token-file)");
    }
    const absl::string_view got(it->second.data(), it->second.size());
    if (!ConstantTimeEquals(got, expected_)) {
      return grpc::Status(
          grpc::StatusCode::UNAUTHENTICATED,
          "the token is not this planner's (--auth-token-file)");
    }
    consumed->insert(
        {std::string(it->first.data(), it->first.size()), std::string(got)});
    return grpc::Status::OK;
  }

 private:
  const std::string expected_;
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

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>>
ServerCredentialsFromFiles(const ServerSecurityFiles& files) {
  const bool tls = !files.cert_file.empty() || !files.key_file.empty();
  if (!tls) {
    if (!files.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--auth-token-file: needs TLS (--tls-cert and --tls-key): a token "
          "sent in plaintext is anyone's");
    }
    return grpc::InsecureServerCredentials();
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
  grpc::SslServerCredentialsOptions options;
  options.pem_key_cert_pairs.push_back({*std::move(key), *std::move(cert)});
  std::shared_ptr<grpc::ServerCredentials> credentials =
      grpc::SslServerCredentials(options);
  if (!files.token_file.empty()) {
    absl::StatusOr<std::string> token =
        ReadTokenFile(files.token_file, "--auth-token-file");
    if (!token.ok()) return token.status();
    credentials->SetAuthMetadataProcessor(
        std::make_shared<BearerTokenCheck>(*std::move(token)));
  }
  return credentials;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>>
ChannelCredentialsFromFiles(const ClientSecurityFiles& files) {
  if (files.ca_file.empty()) {
    if (!files.token_file.empty()) {
      return absl::InvalidArgumentError(
          "--auth-token-file: needs --tls-ca: a token sent in plaintext is "
          "anyone's");
    }
    return grpc::InsecureChannelCredentials();
  }
  absl::StatusOr<std::string> ca = ReadPem(files.ca_file, "--tls-ca");
  if (!ca.ok()) return ca.status();
  grpc::SslCredentialsOptions options;
  options.pem_root_certs = *std::move(ca);
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
