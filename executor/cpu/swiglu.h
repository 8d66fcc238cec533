// SwiGLU (Shazeer 2020) on the CPU: out = silu(gate) * up over a fused
// [tokens, 2*ffn] gate/up projection (gate in columns [0, ffn), up in
// [ffn, 2*ffn)). T is float or double.
//
// defines: SwiGluForward, SwiGluBackward
//
//   cpu::SwiGluForward<float>(gate_up, tokens, ffn, out);
//   cpu::SwiGluBackward<float>(dout, gate_up, tokens, ffn, dgate_up);
#pragma once

#include <cstdint>

#include "executor/cpu/fast_exp.h"

namespace tessera::executor::cpu {

// out [tokens, ffn] = silu(gate) * up, silu(x) = x sigmoid(x).
template <typename T>
void SwiGluForward(const T* gate_up, int64_t tokens, int64_t ffn, T* out) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T* gate = gate_up + t * 2 * ffn;
    const T* up = gate + ffn;
    T* o = out + t * ffn;
    for (int64_t j = 0; j < ffn; ++j) {
      const T sig = T(1) / (T(1) + Exp(-gate[j]));
      o[j] = gate[j] * sig * up[j];
    }
  }
}

// Writes dgate_up [tokens, 2*ffn]: d up = dout silu(gate);
// d gate = dout up sigmoid(gate) (1 + gate (1 - sigmoid(gate))), the
// derivative of x sigmoid(x).
template <typename T>
void SwiGluBackward(const T* dout, const T* gate_up, int64_t tokens,
                    int64_t ffn, T* dgate_up) {
  for (int64_t t = 0; t < tokens; ++t) {
    const T* gate = gate_up + t * 2 * ffn;
    const T* up = gate + ffn;
    const T* d = dout + t * ffn;
    T* dgate = dgate_up + t * 2 * ffn;
    T* dup = dgate + ffn;
    for (int64_t j = 0; j < ffn; ++j) {
      const T g = gate[j];
      const T sig = T(1) / (T(1) + Exp(-g));
      const T dg = d[j] * up[j] * sig * (T(1) + g * (T(1) - sig));
      const T du = d[j] * g * sig;
      dgate[j] = dg;  // read gate/up before writing: dgate_up may alias
      dup[j] = du;
    }
  }
}

}  // namespace tessera::executor::cpu
