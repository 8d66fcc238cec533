#!/usr/bin/env bash
# Tessera's CUDA backend against PyTorch on one GPU: a ~1B Llama training step
# at several micro-batch sizes, tokens/s and MFU for each, and the ratios.
#
# On a GPU machine with a compiler, CMake, the CUDA toolkit and PyTorch (and
# the Debian libraries deploy/gpu/carry.sh unpacks into carry/):
#
#   bench/cuda/run_1b.sh                       # build, run, write RESULTS.md
#   bench/cuda/run_1b.sh --micro-batches 4,8 --torch-modes eager --skip-build
#   bench/cuda/run_1b.sh --dry-run             # print the commands only
#
# A device call has 10 minutes; split the work across calls (the results
# accumulate in --results-dir, deploy/gpu/README.md shows how):
#   run_1b.sh --torch-modes eager --results-dir bench/cuda/results
#   run_1b.sh --skip-tessera --torch-modes compile --results-dir bench/cuda/results
#
# Model (bench/cuda/torch_llama.py is the same model and step):
#   layers 16, hidden 2048, heads 16 (head_dim 128), kv_heads 8, ffn 5632,
#   vocab 32000, untied: 886,114,304 parameters; seq_len 2048; one GPU, so
#   global batch = micro-batch, no gradient accumulation; bf16 compute with
#   fp32 master weights and AdamW (lr 3e-4, betas 0.9/0.95, wd 0.1).
# Writes the results (JSON) under --results-dir and the table, with the date
# and the device, to --out (bench/cuda/RESULTS.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

layers=16 hidden=2048 heads=16 kv_heads=8 ffn=5632 vocab=32000 seq_len=2048
micro_batches="1,2,4,8"
warmup=3
steps=10
torch_modes="eager,compile"
build_dir="$repo/build-bench-cuda"
prefix=""
results_dir=""
out="$here/RESULTS.md"
skip_build=0
skip_tessera=0
dry_run=0
python="${PYTHON:-python3}"

usage() {
  cat <<EOF
usage: $0 [options]
  --micro-batches LIST   comma-separated sizes (default $micro_batches)
  --warmup N             warm-up steps per run (default $warmup)
  --steps N              measured steps per run (default $steps)
  --torch-modes LIST     eager,compile | eager | compile | none
                         (default $torch_modes)
  --build-dir DIR        CMake build folder (default $build_dir)
  --prefix DIR           CMAKE_PREFIX_PATH for Abseil, nlohmann-json
                         (default: $repo/carry/usr when it exists)
  --results-dir DIR      where the JSON results go (default: <build-dir>/results)
  --out FILE             the table page (default $out)
  --skip-build           use the binaries already in --build-dir
  --skip-tessera         run only PyTorch (and the table), keeping the
                         Tessera results already in --results-dir
  --dry-run              print the commands instead of running them
EOF
}

die_usage() {
  echo "run_1b.sh: $*" >&2
  usage >&2
  exit 2
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --micro-batches) micro_batches="${2:?}"; shift 2 ;;
    --warmup) warmup="${2:?}"; shift 2 ;;
    --steps) steps="${2:?}"; shift 2 ;;
    --torch-modes) torch_modes="${2:?}"; shift 2 ;;
    --build-dir) build_dir="${2:?}"; shift 2 ;;
    --prefix) prefix="${2:?}"; shift 2 ;;
    --results-dir) results_dir="${2:?}"; shift 2 ;;
    --out) out="${2:?}"; shift 2 ;;
    --skip-build) skip_build=1; shift ;;
    --skip-tessera) skip_tessera=1; skip_build=1; shift ;;
    --dry-run) dry_run=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown argument '$1'" ;;
  esac
done

[[ "$micro_batches" =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
  die_usage "--micro-batches: not a comma-separated list of positive integers: '$micro_batches'"
[[ "$warmup" =~ ^[0-9]+$ ]] || die_usage "--warmup: not a count: '$warmup'"
[[ "$steps" =~ ^[1-9][0-9]*$ ]] || die_usage "--steps: not a positive count: '$steps'"
modes=()
case "$torch_modes" in
  none) ;;
  eager|compile) modes=("$torch_modes") ;;
  eager,compile|compile,eager) modes=(eager compile) ;;
  *) die_usage "--torch-modes: eager,compile | eager | compile | none, not '$torch_modes'" ;;
esac
if [[ -z "$prefix" && -d "$repo/carry/usr" ]]; then prefix="$repo/carry/usr"; fi
results_dir="${results_dir:-$build_dir/results}"
IFS=',' read -r -a mbs <<<"$micro_batches"

# Runs (or, with --dry-run, prints) one command.
run() {
  if [[ $dry_run -eq 1 ]]; then
    printf '%q ' "$@"
    printf '\n'
  else
    "$@"
  fi
}

# Libraries unpacked by deploy/gpu/carry.sh, found at run time.
if [[ -n "$prefix" ]]; then
  arch_lib="$prefix/lib/x86_64-linux-gnu"
  export LD_LIBRARY_PATH="$arch_lib:$arch_lib/openblas-pthread:${LD_LIBRARY_PATH:-}"
fi

# NCCL: the toolkit's, else the nvidia-nccl wheel's (PyTorch's).
nccl_root=""
if [[ ! -e /usr/local/cuda/include/nccl.h ]]; then
  nccl_root="$("$python" -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)"
fi

if [[ $skip_build -eq 0 ]]; then
  generator=()
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
  cmake_args=(-S "$repo" -B "$build_dir" "${generator[@]}"
    -DCMAKE_BUILD_TYPE=Release -DTESSERA_SERVICE=OFF -DTESSERA_TESTS=OFF
    -DTESSERA_BENCHMARKS=OFF -DTESSERA_CUDA=ON)
  if [[ -n "$prefix" ]]; then cmake_args+=("-DCMAKE_PREFIX_PATH=$prefix"); fi
  if [[ -n "$nccl_root" ]]; then cmake_args+=("-DTESSERA_NCCL_ROOT=$nccl_root"); fi
  run cmake "${cmake_args[@]}"
  run cmake --build "$build_dir" --target tessera-trial \
    --parallel "$(nproc)"
fi

trial="$build_dir/executor/tessera_trial/tessera-trial"
run mkdir -p "$results_dir"
model_flags=(--layers "$layers" --hidden "$hidden" --heads "$heads"
  --kv-heads "$kv_heads" --ffn-hidden "$ffn" --vocab "$vocab"
  --seq-len "$seq_len")
for mb in "${mbs[@]}"; do
  [[ $skip_tessera -eq 1 ]] && break
  echo "== Tessera, micro-batch $mb" >&2
  run "$trial" --backend cuda "${model_flags[@]}" --ranks 1 --global-batch "$mb" \
    --layout "micro_batch=$mb" --warmup "$warmup" --steps "$steps" \
    --json "$results_dir/tessera_mb$mb.json"
done

# PyTorch divides by the same peak as Tessera when Tessera found one.
peak_flags=()
if [[ $dry_run -eq 0 && -f "$results_dir/tessera_mb${mbs[0]}.json" ]]; then
  peak="$("$python" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r.get("peak_tflops") or "")' \
    "$results_dir/tessera_mb${mbs[0]}.json" 2>/dev/null || true)"
  if [[ -n "$peak" && "$peak" != "0.0" ]]; then peak_flags=(--peak-tflops "$peak"); fi
fi
for mode in "${modes[@]}"; do
  for mb in "${mbs[@]}"; do
    echo "== PyTorch $mode, micro-batch $mb" >&2
    run env PYTHONUNBUFFERED=1 "$python" "$here/torch_llama.py" \
      --layers "$layers" --hidden "$hidden" --heads "$heads" \
      --kv-heads "$kv_heads" --ffn "$ffn" --vocab "$vocab" \
      --seq-len "$seq_len" --micro-batch "$mb" --warmup "$warmup" \
      --steps "$steps" --mode "$mode" "${peak_flags[@]}" \
      --json "$results_dir/torch_${mode}_mb$mb.json"
  done
done

config="layers $layers, hidden $hidden, heads $heads, kv_heads $kv_heads, ffn $ffn, vocab $vocab (886,114,304 parameters), seq_len $seq_len, one GPU, warm-up $warmup + $steps measured steps per run, bf16 with fp32 master weights, AdamW"
run "$python" "$here/results_table.py" --results-dir "$results_dir" \
  --micro-batches "$micro_batches" --config "$config" \
  --command "bench/cuda/run_1b.sh --micro-batches $micro_batches --warmup $warmup --steps $steps --torch-modes $torch_modes" \
  --out "$out"
