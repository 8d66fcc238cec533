#include "executor/engine/token_data.h"

#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "executor/engine/param_init.h"

namespace tessera::executor {
namespace {

// A uniform integer in [0, n) for (seed, stream, index); the modulo bias is
// below 2^-50 for the small n used here.
int64_t UniformInt(uint64_t seed, uint64_t stream, uint64_t index, int64_t n) {
  return static_cast<int64_t>(RandomBits(seed, stream, index) %
                              static_cast<uint64_t>(n));
}

}  // namespace

void SyntheticTokens::Sample(int64_t index, int64_t length,
                             int32_t* out) const {
  const uint64_t i = static_cast<uint64_t>(index);
  int64_t token = UniformInt(seed_, 1000, i, vocab_);
  const int64_t stride = 1 + UniformInt(seed_, 1001, i, 7);
  for (int64_t t = 0; t < length; ++t) {
    const uint64_t at = i * static_cast<uint64_t>(length) + t;
    const bool noise = UniformInt(seed_, 1002, at, 10) == 0;
    out[t] = static_cast<int32_t>(noise ? UniformInt(seed_, 1003, at, vocab_)
                                        : token);
    token = (token + stride) % vocab_;
  }
}

std::string SyntheticTokens::description() const {
  return absl::StrCat("synthetic(seed=", seed_, ", vocab=", vocab_, ")");
}

absl::StatusOr<std::unique_ptr<FileTokens>> FileTokens::Open(
    absl::string_view path, int bytes_per_token, int64_t vocab,
    int64_t min_length) {
  const std::string p(path);
  if (bytes_per_token != 2 && bytes_per_token != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("data.token_bytes: must be 2 (uint16) or 4 (uint32), got ",
                     bytes_per_token));
  }
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("data: cannot open '", p, "'"));
  }
  const std::vector<unsigned char> bytes(std::istreambuf_iterator<char>(in),
                                         {});
  if (bytes.size() % bytes_per_token != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "data: '", p, "' has ", bytes.size(), " bytes, not a whole number of ",
        bytes_per_token, "-byte token ids"));
  }
  std::vector<int32_t> tokens(bytes.size() / bytes_per_token);
  for (size_t i = 0; i < tokens.size(); ++i) {
    uint32_t id = 0;
    for (int b = bytes_per_token - 1; b >= 0; --b) {
      id = (id << 8) | bytes[i * bytes_per_token + b];
    }
    if (id >= static_cast<uint64_t>(vocab)) {
      return absl::InvalidArgumentError(
          absl::StrCat("data: '", p, "' token ", i, " is ", id,
                       ", outside the vocabulary of ", vocab));
    }
    tokens[i] = static_cast<int32_t>(id);
  }
  if (static_cast<int64_t>(tokens.size()) < min_length + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("data: '", p, "' holds ", tokens.size(),
                     " tokens, fewer than one sample of ", min_length + 1));
  }
  return std::unique_ptr<FileTokens>(new FileTokens(p, std::move(tokens)));
}

void FileTokens::Sample(int64_t index, int64_t length, int32_t* out) const {
  const int64_t span = static_cast<int64_t>(tokens_.size()) - length;
  const int64_t start = (index * length) % (span + 1);
  for (int64_t t = 0; t < length; ++t) out[t] = tokens_[start + t];
}

std::string FileTokens::description() const {
  return absl::StrCat("file(", path_, ", ", tokens_.size(), " tokens)");
}

}  // namespace tessera::executor
