#!/usr/bin/env bash
# bench/cuda/run_1b.sh without a GPU: its argument parsing and the commands it
# would run (--dry-run), checked against what the benchmark must do: a build
# with -DTESSERA_SERVICE=OFF against the carried prefix, one Tessera run and
# one PyTorch run per mode at each micro-batch (global batch = micro-batch on
# one GPU), and the table at the end.
set -euo pipefail
script="$1"
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

out="$("$script" --dry-run --micro-batches 2,8 --steps 4 --warmup 1 \
  --prefix /opt/carry/usr --build-dir /tmp/bb --results-dir /tmp/rr 2>&1)"
echo "$out"
grep -q -- "-DTESSERA_SERVICE=OFF" <<<"$out" || fail "not built with TESSERA_SERVICE=OFF"
grep -q -- "-DCMAKE_PREFIX_PATH=/opt/carry/usr" <<<"$out" || fail "no CMAKE_PREFIX_PATH"
grep -q -- "--target tessera-trial" <<<"$out" || fail "no build of the trial binaries"
for mb in 2 8; do
  grep -q -- "/tmp/bb/executor/tessera_trial/tessera-trial .*--global-batch $mb --layout micro_batch=$mb --warmup 1 --steps 4 --json /tmp/rr/tessera_mb$mb.json" <<<"$out" ||
    fail "no Tessera run at micro-batch $mb"
  for mode in eager compile; do
    grep -q -- "torch_llama.py .*--micro-batch $mb .*--mode $mode --json /tmp/rr/torch_${mode}_mb$mb.json" <<<"$out" ||
      fail "no torch $mode run at micro-batch $mb"
  done
done
grep -q -- "--layers 16 --hidden 2048 --heads 16 --kv-heads 8 --ffn-hidden 5632 --vocab 32000 --seq-len 2048" <<<"$out" ||
  fail "not the 1B model"
grep -q "results_table.py --results-dir /tmp/rr --micro-batches 2\\\\,8" <<<"$out" ||
  fail "no table"
[[ $(grep -c "tessera-trial --backend cuda --layers" <<<"$out") -eq 2 ]] || fail "runs != micro-batches"

# --skip-build and --torch-modes none: no cmake, no PyTorch.
out="$("$script" --dry-run --skip-build --torch-modes none --micro-batches 1 2>&1)"
grep -q "^cmake" <<<"$out" && fail "--skip-build still builds"
grep -q "torch_llama.py" <<<"$out" && fail "--torch-modes none still runs PyTorch"

# --skip-tessera: PyTorch only, no build, and the table over what is there.
out="$("$script" --dry-run --skip-tessera --torch-modes compile --micro-batches 4 2>&1)"
grep -q "^cmake" <<<"$out" && fail "--skip-tessera still builds"
grep -q "tessera-trial --backend cuda --layers" <<<"$out" && fail "--skip-tessera still runs Tessera"
grep -q -- "--mode compile" <<<"$out" || fail "--skip-tessera runs no PyTorch"
grep -q "results_table.py" <<<"$out" || fail "--skip-tessera makes no table"

# Malformed arguments: exit 2 with the usage.
for bad in "--micro-batches 0,2" "--micro-batches 2,,4" "--steps 0" \
  "--torch-modes jit" "--frobnicate"; do
  set +e
  # shellcheck disable=SC2086
  msg="$("$script" --dry-run $bad 2>&1)"
  code=$?
  set -e
  [[ $code -eq 2 ]] || fail "'$bad' exited $code, not 2"
  grep -q "usage:" <<<"$msg" || fail "'$bad' printed no usage"
done
echo "PASS"
