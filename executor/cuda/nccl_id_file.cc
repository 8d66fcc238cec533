#include "executor/cuda/nccl_id_file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "executor/comm/internal/tcp_rendezvous.h"

namespace tessera::executor {
namespace {

constexpr absl::string_view kMagic = "tessera-nccl-id v1 world_size=";

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads the file's whole content; false when it does not exist (yet) or
// cannot be read.
bool ReadWholeFile(const std::string& path, std::string* content) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream text;
  text << in.rdbuf();
  *content = text.str();
  return true;
}

}  // namespace

std::string FormatNcclIdFile(absl::Span<const uint8_t> id, int world_size) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * id.size());
  for (uint8_t byte : id) {
    hex.push_back(kDigits[byte >> 4]);
    hex.push_back(kDigits[byte & 15]);
  }
  return absl::StrCat(kMagic, world_size, "\n", hex, "\n");
}

absl::StatusOr<std::vector<uint8_t>> ParseNcclIdFile(absl::string_view text,
                                                     int world_size) {
  const std::vector<absl::string_view> lines =
      absl::StrSplit(text, absl::MaxSplits('\n', 2));
  if (lines.size() < 2 || !absl::StartsWith(lines[0], kMagic)) {
    return absl::InvalidArgumentError(
        "nccl id file: the first line is not 'tessera-nccl-id v1 "
        "world_size=N'");
  }
  int file_world = 0;
  if (!absl::SimpleAtoi(lines[0].substr(kMagic.size()), &file_world)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl id file: bad world size '", lines[0].substr(kMagic.size()), "'"));
  }
  if (file_world != world_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl id file: written for a world of ", file_world,
                     " ranks, this rank was started for ", world_size));
  }
  const absl::string_view hex = absl::StripAsciiWhitespace(lines[1]);
  if (hex.size() != 2 * kNcclIdBytes ||
      (lines.size() == 3 && !absl::StripAsciiWhitespace(lines[2]).empty())) {
    return absl::InvalidArgumentError(
        absl::StrCat("nccl id file: expected ", 2 * kNcclIdBytes,
                     " hex digits, got ", hex.size()));
  }
  std::vector<uint8_t> id(kNcclIdBytes);
  for (size_t i = 0; i < kNcclIdBytes; ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("nccl id file: '", hex.substr(2 * i, 2), "' at byte ", i,
                       " is not hex"));
    }
    id[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return id;
}

absl::Status PublishNcclId(const std::string& path,
                           absl::Span<const uint8_t> id, int world_size) {
  if (id.size() != kNcclIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "nccl id: ", id.size(), " bytes, expected ", kNcclIdBytes));
  }
  return tcp_internal::WriteFileAtomically(path,
                                           FormatNcclIdFile(id, world_size));
}

absl::StatusOr<std::vector<uint8_t>> AwaitNcclId(const std::string& path,
                                                 int world_size,
                                                 absl::Duration timeout,
                                                 absl::Duration poll) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    std::string content;
    if (ReadWholeFile(path, &content) && !content.empty()) {
      return ParseNcclIdFile(content, world_size);
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("nccl rendezvous: rank 0 did not publish its id in ",
                       path, " within ", absl::FormatDuration(timeout)));
    }
    absl::SleepFor(poll);
  }
}

}  // namespace tessera::executor
