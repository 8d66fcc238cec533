#!/usr/bin/env bash
# One device-tool call that builds nothing: the CUDA tests, the kernel
# benchmark and the 1B benchmark (Tessera, PyTorch eager, torch.compile) from
# binaries built on the development machine (deploy/gpu/pack_prebuilt.sh),
# under one deadline so that the call returns with whatever finished.
#
#   run(command="deploy/gpu/run_prebuilt.sh", carry=["gpukit"], timeout_s=540)
#
# Why: a device lease is 15 minutes in all; building the executor there costs
# minutes of it. The binaries are built against Debian 12 (glibc 2.36), which
# runs on the newer image of the GPU machines; the Debian libraries they need
# (Abseil, OpenBLAS, Google Benchmark) travel in the kit; CUDA's runtime,
# cuBLASLt and NCCL are the GPU machine's own.
#
# The binaries hold absolute paths of the build (/work/main/build/...): the
# script points /work/main at this checkout and build/ at the unpacked kit.
# Environment: DEADLINE_S (default 480) bounds the whole script; the stages
# that do not fit are skipped and say so. STAGES (default "tests kernels
# tessera eager compile") picks stages, in that order; "ncu" (after
# compile) adds Nsight
# Compute's speed-of-light and occupancy of the attention kernels.
# MICRO_BATCHES (default 1,2,4,8) and COMPILE_MICRO_BATCHES (default "4 8").
# Writes under $OUT (at most 8 files): device.txt, ctest.log,
# ctest-junit.xml, kernels.txt, ncu.txt, bench.log, RESULTS.md, results.tgz.
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
out="${OUT:-/tmp/tessera-gpu-out}"
mkdir -p "$out"
start_s=$SECONDS
deadline_s="${DEADLINE_S:-480}"
export PYTHONUNBUFFERED=1

# Seconds a stage may take: its own cap or what is left before the deadline.
budget() {
  local left=$((deadline_s - (SECONDS - start_s)))
  ((left < $1)) && echo "$left" || echo "$1"
}
# Runs "$@" under `timeout` with budget $1, unless under 10 s are left.
stage() {
  local cap="$1" name="$2"
  shift 2
  local b
  b="$(budget "$cap")"
  if ((b < 10)); then
    echo "== $name: skipped, ${b}s left before the ${deadline_s}s deadline" | tee -a "$out/bench.log"
    return 0
  fi
  echo "== $name (at most ${b}s, t=$((SECONDS - start_s))s)" | tee -a "$out/bench.log"
  timeout --kill-after=5 "$b" "$@"
  local rc=$?
  ((rc == 124 || rc == 137)) && echo "== $name: stopped at ${b}s" | tee -a "$out/bench.log"
  return 0
}

[[ -f gpukit/kit.tar.xz ]] || { echo "run_prebuilt: gpukit/kit.tar.xz missing (carry gpukit)" >&2; exit 1; }
kit=/tmp/tessera-kit
rm -rf "$kit" && mkdir -p "$kit" && tar -C "$kit" -xJf gpukit/kit.tar.xz || exit 1
if [[ ! "$repo" -ef /work/main ]]; then
  [[ -e /work/main && ! -L /work/main ]] && { echo "run_prebuilt: /work/main exists and is not this checkout" >&2; exit 1; }
  mkdir -p /work && ln -sfn "$repo" /work/main
fi
[[ -e build && ! -L build ]] && { echo "run_prebuilt: build/ exists here; refusing to replace it" >&2; exit 1; }
ln -sfn "$kit/build" build

cuda_libs="/usr/local/cuda/lib64:/usr/local/cuda/lib"
wheel_libs="$(python3 - <<'EOF' 2>/dev/null
import importlib, os
dirs = []
for name in ("nvidia.nccl", "nvidia.cublas", "nvidia.cuda_runtime", "nvidia.cudnn", "nvidia.cu13"):
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    for p in m.__path__:
        d = os.path.join(p, "lib")
        if os.path.isdir(d):
            dirs.append(d)
print(":".join(dirs))
EOF
)"
export LD_LIBRARY_PATH="$kit/lib:$cuda_libs:$wheel_libs:${LD_LIBRARY_PATH:-}"
# cuDNN (opened at run time by the CUDA backend's attention): the loader's
# path above, else the first libcudnn.so.9 under the Python packages or CUDA.
if ! ls ${LD_LIBRARY_PATH//:/\/libcudnn.so.9 }/libcudnn.so.9 >/dev/null 2>&1; then
  site="$(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)"
  found="$(find $site /usr/local/cuda*/ /usr/lib -maxdepth 6 -name libcudnn.so.9 2>/dev/null | head -1)"
  [[ -n "$found" ]] && export LD_LIBRARY_PATH="$(dirname "$found"):$LD_LIBRARY_PATH"
fi

{
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,power.limit,clocks.max.sm --format=csv
  nvcc --version | tail -2
  python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  grep -E 'PRETTY_NAME' /etc/os-release
  ldd --version | head -1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  # cuDNN is opened at run time (executor/cuda/cudnn_attention.h): which one.
  for d in ${LD_LIBRARY_PATH//:/ }; do ls "$d"/libcudnn.so* 2>/dev/null; done | head -3
  for b in build/executor/tessera_trial/tessera-trial build/tests/executor/cuda/cuda_trial_test; do
    echo "ldd $b:"
    ldd "$b" | grep -E 'not found|cuda|cublas|nccl|openblas|nvidia' 
  done
} >"$out/device.txt" 2>&1

stages=" ${STAGES:-tests kernels tessera eager compile} "
want() { [[ "$stages" == *" $1 "* ]]; }

# 1. The GPU tests, each in its own process (a CUDA fault ends only its test).
want tests && (cd build/tests/executor/cuda &&
  stage 200 "ctest tests/executor/cuda" ctest -j4 --timeout 120 --output-on-failure \
    --output-junit "$out/ctest-junit.xml") >"$out/ctest.log" 2>&1
# The CUDA engine's measured loss and weight errors against the CPU engine.
want tests && stage 60 "engine errors" build/tests/executor/cuda/cuda_engine_test \
  --gtest_filter='CudaEngineTest.OneGpuTrainsLikeTheCpuEngine' >>"$out/ctest.log" 2>&1
want tests && grep -E "tests passed|measured:|FAILED|cuDNN" "$out/ctest.log" | tail -12

# 2. Kernel throughput.
want kernels && stage 40 "cuda_kernels_bench" build/bench/cuda/cuda_kernels_bench --benchmark_min_time=0.05 \
  --benchmark_counters_tabular=true >"$out/kernels.txt" 2>&1

# 3. The 1B Llama step: Tessera, PyTorch eager, then torch.compile.
results=/tmp/tessera-results
mkdir -p "$results"
mbs="${MICRO_BATCHES:-1,2,4,8}"
pack() { tar czf "$out/results.tgz" -C "$results" . 2>/dev/null; }
want tessera && for mb in ${mbs//,/ }; do
  stage 60 "tessera 1B mb $mb" bench/cuda/run_1b.sh --skip-build --build-dir "$repo/build" \
    --micro-batches "$mb" --torch-modes none --results-dir "$results" --out /dev/null >>"$out/bench.log" 2>&1
  pack
done
want eager && for mb in ${mbs//,/ }; do
  stage 40 "torch eager 1B mb $mb" bench/cuda/run_1b.sh --skip-tessera --micro-batches "$mb" \
    --torch-modes eager --results-dir "$results" --out /dev/null >>"$out/bench.log" 2>&1
  pack
done
want compile && for mb in ${COMPILE_MICRO_BATCHES-4 8}; do
  stage 150 "torch compile 1B mb $mb" bench/cuda/run_1b.sh --skip-tessera --micro-batches "$mb" \
    --torch-modes compile --results-dir "$results" --out /dev/null >>"$out/bench.log" 2>&1
  pack
done
# Attention's kernels under Nsight Compute (the kernels bench's largest gap).
want ncu && stage 90 "ncu attention" ncu --target-processes all -k regex:Attention -c 3 \
  --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
  build/bench/cuda/cuda_kernels_bench --benchmark_filter='BM_Attention' --benchmark_min_time=0.01 \
  >"$out/ncu.txt" 2>&1
python3 bench/cuda/results_table.py --results-dir "$results" --micro-batches "$mbs" \
  --config "layers 16, hidden 2048, heads 16, kv_heads 8, ffn 5632, vocab 32000 (886,114,304 parameters), seq_len 2048, one GPU, warm-up 3 + 10 measured steps per run, bf16 with fp32 master weights, AdamW" \
  --command "deploy/gpu/run_prebuilt.sh (bench/cuda/run_1b.sh per micro-batch)" \
  --out "$out/RESULTS.md" >>"$out/bench.log" 2>&1
pack
tail -30 "$out/bench.log"
echo "run_prebuilt: done in $((SECONDS - start_s))s"
