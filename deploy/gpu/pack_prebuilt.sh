#!/usr/bin/env bash
# Packs the CUDA executor's binaries, built here, for deploy/gpu/run_prebuilt.sh
# on a GPU machine: gpukit/kit.tar.xz (about 8 MB) holds build/'s CUDA test
# binaries with their CTest files, tessera-trial, the kernel benchmark
# (debug info stripped), and the Debian libraries they load that a GPU
# machine lacks (Abseil, OpenBLAS, Google Benchmark). CUDA's own libraries
# are left out: the GPU machine has them.
#
#   ninja -C build tessera-trial cuda_kernels_bench <the cuda tests>
#   deploy/gpu/pack_prebuilt.sh [BUILD_DIR]     # default build
#
# The binaries keep build/'s absolute paths, so BUILD_DIR must be
# /work/main/build (what run_prebuilt.sh recreates there).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "${1:-$repo/build}" && pwd)"
[[ "$build" == /work/main/build ]] ||
  echo "pack_prebuilt: warning: $build is not /work/main/build; run_prebuilt.sh recreates only that path" >&2
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/build" "$stage/lib"
cd "$build"
bins=(executor/tessera_trial/tessera-trial bench/cuda/cuda_kernels_bench
  tests/executor/cuda/libtessera_fake_nvml.so)
for t in tests/executor/cuda/cuda_*_test tests/executor/cuda/cudnn_*_test; do
  [[ -e "$t" ]] && bins+=("$t")
done
for b in "${bins[@]}"; do
  [[ -f "$b" ]] || { echo "pack_prebuilt: $build/$b is not built" >&2; exit 1; }
  mkdir -p "$stage/build/$(dirname "$b")"
  strip --strip-debug -o "$stage/build/$b" "$b"
done
cp tests/executor/cuda/*.cmake "$stage/build/tests/executor/cuda/"
# Shared libraries outside CUDA and the C/C++ runtime.
for b in "${bins[@]}"; do ldd "$b"; done | awk '/=>/ {print $3}' | sort -u |
  grep -vE '^/usr/local/cuda|/lib(c|m|dl|rt|pthread|stdc\+\+|gcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
mkdir -p "$repo/gpukit"
grep -qx '/gpukit/' "$repo/.git/info/exclude" 2>/dev/null ||
  { mkdir -p "$repo/.git/info" && echo /gpukit/ >>"$repo/.git/info/exclude"; }
tar -C "$stage" -cf - build lib | xz -T0 -6 >"$repo/gpukit/kit.tar.xz"
ls -la "$repo/gpukit/kit.tar.xz"
