#!/usr/bin/env bash
# Checks, on the machine that ran carry.sh, that the executor builds and runs
# against carry/ ALONE: inside a private mount namespace (unshare -m; root)
# the system's copies of the carried packages are hidden (their headers,
# CMake configs and libraries replaced by empty mounts), then a scratch
# -DTESSERA_SERVICE=OFF build of the trial programs and two test binaries
# runs with CMAKE_PREFIX_PATH=carry/usr and LD_LIBRARY_PATH into carry/.
# Nothing outside the namespace changes.
#
#   deploy/gpu/check_carry.sh [build-dir]   # default /tmp/tessera-carry-check
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
carry="$repo/carry/usr"
build="${1:-/tmp/tessera-carry-check}"
[[ -d "$carry" ]] || { echo "check_carry: run deploy/gpu/carry.sh first" >&2; exit 1; }

if [[ "${TESSERA_CARRY_HIDDEN:-}" != 1 ]]; then
  exec unshare -m --propagation private env TESSERA_CARRY_HIDDEN=1 "$0" "$@"
fi

# --- inside the namespace: hide the system's copies -----------------------
sys_lib=/usr/lib/x86_64-linux-gnu
for dir in /usr/include/absl /usr/include/nlohmann /usr/include/gtest \
  /usr/include/gmock /usr/include/benchmark \
  /usr/include/x86_64-linux-gnu/openblas-pthread \
  "$sys_lib/openblas-pthread" "$sys_lib/cmake/absl" "$sys_lib/cmake/GTest" \
  "$sys_lib/cmake/benchmark" "$sys_lib/cmake/openblas" \
  /usr/share/cmake/nlohmann_json; do
  [[ -d "$dir" ]] && mount -t tmpfs none "$dir"
done
hidden=0
for file in "$sys_lib"/libabsl_* "$sys_lib"/libgtest* "$sys_lib"/libgmock* \
  "$sys_lib"/libbenchmark* "$sys_lib"/libgfortran.so* "$sys_lib"/libquadmath.so*; do
  [[ -f "$file" && ! -L "$file" ]] || continue
  mount --bind /dev/null "$file"
  hidden=$((hidden + 1))
done
echo "check_carry: hid $hidden system library files and the headers/configs"
[[ ! -e /usr/include/absl/status/status.h ]] || { echo "absl still visible" >&2; exit 1; }

arch_lib="$carry/lib/x86_64-linux-gnu"
export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:${LD_LIBRARY_PATH:-}"
rm -rf "$build"
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_SERVICE=OFF -DCMAKE_PREFIX_PATH="$carry" | tee "$build.configure.log"
grep -q "CPU backend GEMM through CBLAS: $carry" "$build.configure.log" ||
  { echo "check_carry: OpenBLAS not found in carry/" >&2; exit 1; }
ninja -C "$build" -j"${JOBS:-2}" tessera-trial cuda_host_test \
  cuda_trial_test cuda_kernels_bench
"$build/tests/executor/cuda/cuda_host_test" --gtest_brief=1
"$build/tests/executor/cuda/cuda_trial_test" --gtest_brief=1
# A CPU trial: OpenBLAS and Abseil from carry/ at run time.
"$build/executor/tessera_trial/tessera-trial" --model tiny --ranks 2 --global-batch 4 \
  --seq-len 16 --layout tp=2 --warmup 1 --steps 1 --json "$build/cpu_trial.json"
grep -q '"status": "ok"' "$build/cpu_trial.json" ||
  { cat "$build/cpu_trial.json"; exit 1; }
ldd "$build/executor/tessera_trial/tessera-trial" | grep -E "absl_base|openblas" || true
echo "check_carry: OK (built and ran against $carry alone)"
