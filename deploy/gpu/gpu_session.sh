#!/usr/bin/env bash
# The steps a GPU session runs through the device tool, one per call (each
# fits the tool's 10-minute limit on an H100/H200 with 16 cores; a fresh
# machine builds again). Needs carry/ (deploy/gpu/carry.sh) carried along.
# Writes what comes back under $OUT (at most 8 files): the device, logs, the
# results.
#
#   deploy/gpu/gpu_session.sh tests          # build, GPU tests, kernel bench
#   deploy/gpu/gpu_session.sh bench-eager    # Tessera + PyTorch eager, 1B
#   deploy/gpu/gpu_session.sh bench-compile  # PyTorch torch.compile, 1B
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
out="${OUT:-/tmp/tessera-gpu-out}"
mkdir -p "$out"
step="${1:-}"

prefix="$repo/carry/usr"
[[ -d "$prefix" ]] || { echo "gpu_session: carry/ is missing (carry it)" >&2; exit 1; }
arch_lib="$prefix/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
nccl_flags=()
if [[ ! -e /usr/local/cuda/include/nccl.h ]]; then
  nccl_root="$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)"
  [[ -n "$nccl_root" ]] && nccl_flags=("-DTESSERA_NCCL_ROOT=$nccl_root")
fi

{
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit --format=csv
  nvcc --version | tail -2
  cmake --version | head -1
  python3 -c 'import torch; print("torch", torch.__version__)'
} >"$out/device.txt" 2>&1

case "$step" in
  tests)
    cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DTESSERA_SERVICE=OFF -DCMAKE_PREFIX_PATH="$prefix" "${nccl_flags[@]}" \
      >"$out/build.log" 2>&1 &&
      ninja -C build-gpu -j"$(nproc)" >>"$out/build.log" 2>&1 ||
      { tail -40 "$out/build.log"; exit 1; }
    ctest --test-dir build-gpu/tests/executor/cuda -j4 --output-on-failure \
      --timeout 300 2>&1 | tee "$out/ctest.log" | tail -40
    build-gpu/bench/cuda/cuda_kernels_bench --benchmark_min_time=0.2 \
      --benchmark_counters_tabular=true 2>&1 | tee "$out/kernels.txt"
    ;;
  bench-eager)
    bench/cuda/run_1b.sh --prefix "$prefix" --torch-modes eager \
      --results-dir bench/cuda/results --out "$out/RESULTS.md" 2>&1 |
      tee "$out/bench.log" | tail -30
    tar czf "$out/results.tgz" -C bench/cuda/results .
    ;;
  bench-compile)
    bench/cuda/run_1b.sh --skip-tessera --torch-modes compile \
      --results-dir bench/cuda/results --out "$out/RESULTS.md" 2>&1 |
      tee "$out/bench.log" | tail -30
    tar czf "$out/results.tgz" -C bench/cuda/results .
    ;;
  *)
    echo "usage: $0 tests|bench-eager|bench-compile" >&2
    exit 2
    ;;
esac
