// Where training tokens come from: a seeded synthetic generator (the default;
// deterministic per global sample index, so every layout sees the same
// samples) or a file of uint16/uint32 token ids. A sample is seq_len + 1
// tokens: inputs are the first seq_len, targets the last seq_len.
//
//   SyntheticTokens data(/*seed=*/1, /*vocab=*/512);
//   std::vector<int32_t> seq(seq_len + 1);
//   data.Sample(/*index=*/42, seq_len + 1, seq.data());
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tessera::executor {

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  // Writes `length` token ids of global sample `index` into out. Thread-safe.
  virtual void Sample(int64_t index, int64_t length, int32_t* out) const = 0;
  virtual std::string description() const = 0;
};

// Sequences with structure a model can learn: each sample is an arithmetic
// progression modulo the vocabulary (start and stride from the sample index)
// with 10% of tokens replaced by noise, so the loss falls from log(vocab) as
// training proceeds.
class SyntheticTokens final : public TokenSource {
 public:
  SyntheticTokens(uint64_t seed, int64_t vocab) : seed_(seed), vocab_(vocab) {}
  void Sample(int64_t index, int64_t length, int32_t* out) const override;
  std::string description() const override;

 private:
  uint64_t seed_;
  int64_t vocab_;
};

// Token ids read from a flat little-endian file of uint16 or uint32 values
// (as nanoGPT/llm.c write them). Sample i is the window starting at
// (i * stride) mod (count - length), stride = the sample length.
class FileTokens final : public TokenSource {
 public:
  // Reads the whole file. Fails naming the path when it cannot be read, is
  // not a whole number of ids, holds fewer than min_length ids, or holds an id
  // >= vocab.
  static absl::StatusOr<std::unique_ptr<FileTokens>> Open(
      absl::string_view path, int bytes_per_token, int64_t vocab,
      int64_t min_length);
  void Sample(int64_t index, int64_t length, int32_t* out) const override;
  std::string description() const override;

 private:
  FileTokens(std::string path, std::vector<int32_t> tokens)
      : path_(std::move(path)), tokens_(std::move(tokens)) {}
  std::string path_;
  std::vector<int32_t> tokens_;
};

}  // namespace tessera::executor
