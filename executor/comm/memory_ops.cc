#include "executor/comm/memory_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace tessera::executor {
namespace {

constexpr std::align_val_t kAlignment{64};
// Elements per pass: the accumulator stays in L1 while every source streams.
constexpr int64_t kBlock = 1024;

// How one dtype loads into its accumulator, combines and stores back.
struct F32Sum {
  using Elem = float;
  using Acc = float;
  static Acc Load(Elem e) { return e; }
  static Acc Combine(Acc a, Acc b) { return a + b; }
  static Elem Store(Acc a) { return a; }
};
struct Bf16Sum {
  using Elem = uint16_t;
  using Acc = float;
  static Acc Load(Elem e) { return Bf16ToFloat(e); }
  static Acc Combine(Acc a, Acc b) { return a + b; }
  static Elem Store(Acc a) { return FloatToBf16(a); }
};
struct I32Sum {
  using Elem = int32_t;
  using Acc = uint32_t;  // unsigned: overflow wraps instead of being undefined
  static Acc Load(Elem e) { return static_cast<Acc>(e); }
  static Acc Combine(Acc a, Acc b) { return a + b; }
  static Elem Store(Acc a) { return static_cast<Elem>(a); }
};
// NaN wins, so that an overflow on any rank is seen by every rank.
inline float MaxWithNan(float a, float b) {
  return (b > a || std::isnan(b)) && !std::isnan(a) ? b : a;
}
struct F32Max {
  using Elem = float;
  using Acc = float;
  static Acc Load(Elem e) { return e; }
  static Acc Combine(Acc a, Acc b) { return MaxWithNan(a, b); }
  static Elem Store(Acc a) { return a; }
};
struct Bf16Max {
  using Elem = uint16_t;
  using Acc = float;
  static Acc Load(Elem e) { return Bf16ToFloat(e); }
  static Acc Combine(Acc a, Acc b) { return MaxWithNan(a, b); }
  static Elem Store(Acc a) { return FloatToBf16(a); }
};
struct I32Max {
  using Elem = int32_t;
  using Acc = int32_t;
  static Acc Load(Elem e) { return e; }
  static Acc Combine(Acc a, Acc b) { return std::max(a, b); }
  static Elem Store(Acc a) { return a; }
};

// Block by block: every source of element i is read before dst[i] is
// written, so dst may be one of the sources.
template <typename Policy>
void ReduceBlocks(absl::Span<const void* const> srcs, void* dst,
                  int64_t count) {
  using Elem = typename Policy::Elem;
  typename Policy::Acc acc[kBlock];
  for (int64_t begin = 0; begin < count; begin += kBlock) {
    const int64_t n = std::min(kBlock, count - begin);
    const Elem* first = static_cast<const Elem*>(srcs[0]) + begin;
    for (int64_t i = 0; i < n; ++i) acc[i] = Policy::Load(first[i]);
    for (size_t k = 1; k < srcs.size(); ++k) {
      const Elem* src = static_cast<const Elem*>(srcs[k]) + begin;
      for (int64_t i = 0; i < n; ++i) {
        acc[i] = Policy::Combine(acc[i], Policy::Load(src[i]));
      }
    }
    Elem* out = static_cast<Elem*>(dst) + begin;
    for (int64_t i = 0; i < n; ++i) out[i] = Policy::Store(acc[i]);
  }
}

}  // namespace

HostMemoryOps& HostMemoryOps::Get() {
  static HostMemoryOps* const ops = new HostMemoryOps();
  return *ops;
}

absl::StatusOr<void*> HostMemoryOps::Allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* buffer = ::operator new(bytes, kAlignment, std::nothrow);
  if (buffer == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("host staging buffer of ", bytes, " bytes"));
  }
  return buffer;
}

void HostMemoryOps::Free(void* buffer) {
  if (buffer != nullptr) ::operator delete(buffer, kAlignment);
}

absl::Status HostMemoryOps::Copy(void* dst, const void* src, size_t bytes) {
  if (dst != src && bytes > 0) std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status HostMemoryOps::Reduce(absl::Span<const void* const> srcs,
                                   void* dst, int64_t count, DType dtype,
                                   ReduceOp op) {
  if (srcs.empty()) {
    return absl::InvalidArgumentError("reduce: no source buffers");
  }
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat("reduce: count ", count));
  }
  const bool sum = op == ReduceOp::kSum;
  switch (dtype) {
    case DType::kF32:
      sum ? ReduceBlocks<F32Sum>(srcs, dst, count)
          : ReduceBlocks<F32Max>(srcs, dst, count);
      break;
    case DType::kBF16:
      sum ? ReduceBlocks<Bf16Sum>(srcs, dst, count)
          : ReduceBlocks<Bf16Max>(srcs, dst, count);
      break;
    case DType::kI32:
      sum ? ReduceBlocks<I32Sum>(srcs, dst, count)
          : ReduceBlocks<I32Max>(srcs, dst, count);
      break;
  }
  return absl::OkStatus();
}

}  // namespace tessera::executor
