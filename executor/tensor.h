// Element types and a typed, non-owning view of backend memory (host memory on
// the CPU backend, device memory on CUDA). Kernels and collectives take views;
// buffers own (backend.h).
//
//   Tensor t = buffer.view();            // whole allocation
//   Tensor row = t.Slice(r * cols, cols);
//   float* p = t.data_as<float>();       // CPU only: device memory is opaque
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

namespace tessera::executor {

enum class DType : uint8_t {
  kF32,   // float
  kBF16,  // bfloat16 (the CUDA backend's compute type)
  kI32,   // int32 token ids and positions
};

constexpr size_t DTypeSize(DType t) { return t == DType::kBF16 ? 2 : 4; }
absl::string_view DTypeName(DType t);

// A view of `numel` elements of `dtype` starting at `data`. Copying a view
// copies the pointer, not the data.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::kF32;
  int64_t numel = 0;

  size_t bytes() const { return static_cast<size_t>(numel) * DTypeSize(dtype); }
  // The `count` elements starting at element `offset`.
  Tensor Slice(int64_t offset, int64_t count) const {
    return Tensor{static_cast<char*>(data) + offset * DTypeSize(dtype), dtype,
                  count};
  }
  template <typename T>
  T* data_as() const {
    return static_cast<T*>(data);
  }
};

// bfloat16 <-> float on the host, round-to-nearest-even (for tests, host-side
// reductions and file I/O; kernels convert on the device).
uint16_t FloatToBf16(float f);
float Bf16ToFloat(uint16_t b);

}  // namespace tessera::executor
