// Vocabulary-parallel token embedding on the CPU: each rank holds the rows
// [vocab_begin, vocab_begin + vocab_rows) of the table; tokens outside give
// zero rows, so summing the ranks' outputs (AllReduce over tp) gives the
// full lookup. T is float or double.
//
// defines: EmbeddingForward, EmbeddingBackward
//
//   cpu::EmbeddingForward<float>(tokens, table, n_tokens, /*vocab_begin=*/0,
//                                vocab, hidden, out);
#pragma once

#include <algorithm>
#include <cstdint>

namespace tessera::executor::cpu {

// out[t,:] = table[tokens[t] - vocab_begin, :] when the token is local, else
// 0. tokens [n_tokens]; table [vocab_rows, hidden]; out [n_tokens, hidden].
template <typename T>
void EmbeddingForward(const int32_t* tokens, const T* table, int64_t n_tokens,
                      int64_t vocab_begin, int64_t vocab_rows, int64_t hidden,
                      T* out) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t row = static_cast<int64_t>(tokens[t]) - vocab_begin;
    T* dst = out + t * hidden;
    if (row >= 0 && row < vocab_rows) {
      std::copy_n(table + row * hidden, hidden, dst);
    } else {
      std::fill_n(dst, hidden, T(0));
    }
  }
}

// dtable[tokens[t] - vocab_begin, :] += dout[t,:] for the local tokens.
template <typename T>
void EmbeddingBackward(const int32_t* tokens, const T* dout, int64_t n_tokens,
                       int64_t vocab_begin, int64_t vocab_rows, int64_t hidden,
                       T* dtable) {
  for (int64_t t = 0; t < n_tokens; ++t) {
    const int64_t row = static_cast<int64_t>(tokens[t]) - vocab_begin;
    if (row < 0 || row >= vocab_rows) continue;
    T* dst = dtable + row * hidden;
    const T* src = dout + t * hidden;
    for (int64_t c = 0; c < hidden; ++c) dst[c] += src[c];
  }
}

}  // namespace tessera::executor::cpu
