#!/usr/bin/env bash
# Runs the real tessera-trial binary: the JSON contract, exit codes, and one
# process per rank over TCP. Usage: tessera_trial_cli_test.sh TESSERA_TRIAL
set -euo pipefail
trial=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
field() {  # field FILE KEY -> the JSON value of KEY
  /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(v)' "$1" "$2"
}
fail() { echo "FAIL: $*" >&2; exit 1; }

# An ok trial: exit 0, status ok, every documented field present.
"$trial" --backend cpu --model tiny --ranks 2 --global-batch 4 --seq-len 32 \
  --layout tp=2,micro_batch=2 --warmup 1 --steps 2 --json "$dir/ok.json"
[ "$(field "$dir/ok.json" status)" = ok ] || fail "status $(field "$dir/ok.json" status)"
for key in status reason layout steps step_time_s tokens_per_s tokens_per_s_per_gpu \
           tflops_per_gpu mfu peak_memory_bytes compute_s comm_s exposed_comm_s \
           watts_per_gpu tokens_per_joule loss; do
  /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))[sys.argv[2]]' \
    "$dir/ok.json" "$key" || fail "missing $key"
done
[ "$(field "$dir/ok.json" watts_per_gpu)" = None ] || fail "watts invented"

# A layout that does not fit: still exit 0, status invalid naming the field.
"$trial" --model tiny --ranks 3 --global-batch 6 --seq-len 32 --layout tp=2 \
  --steps 1 --json "$dir/invalid.json"
[ "$(field "$dir/invalid.json" status)" = invalid ] || fail "not invalid"
field "$dir/invalid.json" reason | grep -q "layout.tp" || fail "reason names no field"

# Over the memory limit: oom, exit 0.
"$trial" --model tiny --ranks 1 --global-batch 2 --seq-len 32 --steps 1 \
  --memory-limit 100000 --json "$dir/oom.json"
[ "$(field "$dir/oom.json" status)" = oom ] || fail "not oom"

# An unknown model: invalid, exit 0 (agents need a typed result).
"$trial" --model llama9 --ranks 1 --global-batch 2 --seq-len 32 --json "$dir/m.json"
field "$dir/m.json" reason | grep -q "model.preset" || fail "model error"

# The hard stop (core/trial_time_budget.h, layer 3): the tiny model sets
# up at once, within the 2 s limit, and starts a first step of 4M tokens
# (minutes on any CPU); the watchdog abandons it at 1.1 x 2 + 5 s. The
# result says timeout and the process ends itself, exit 0, long before the
# step would.
start=$(date +%s)
"$trial" --model tiny --ranks 1 --global-batch 4096 --seq-len 1024 \
  --layout micro_batch=1 --warmup 0 --steps 1 --time-limit-s 2 \
  --json "$dir/hung.json" || fail "hard stop exit"
took=$(( $(date +%s) - start ))
[ "$(field "$dir/hung.json" status)" = timeout ] || fail "hard stop: $(cat "$dir/hung.json")"
field "$dir/hung.json" reason | grep -q "no step finished within the time limit of 2 s" \
  || fail "hard stop reason: $(field "$dir/hung.json" reason)"
[ "$(field "$dir/hung.json" model)" = tiny ] || fail "hard stop model"
[ "$took" -ge 7 ] && [ "$took" -lt 30 ] || fail "hard stop after $took s"

# Usage errors: exit 2, nothing written.
set +e
"$trial" --model tiny --rankz 2 --json "$dir/x.json" 2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "unknown flag exit $code"
grep -q -- "--rankz" "$dir/err" || fail "error does not name the flag"
[ ! -e "$dir/x.json" ] || fail "JSON written on a usage error"

# One process per rank: 4 processes meet through a rendezvous file.
pids=()
for r in 0 1 2 3; do
  "$trial" --model tiny --ranks 4 --global-batch 8 --seq-len 32 \
    --layout pp=2,cp=2,micro_batch=1 --warmup 1 --steps 2 --rank $r \
    --rendezvous-file "$dir/rdv" --time-limit-s 120 --json "$dir/p$r.json" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "process exit"; done
for r in 0 1 2 3; do
  [ "$(field "$dir/p$r.json" status)" = ok ] || fail "rank $r: $(field "$dir/p$r.json" reason)"
done
[ "$(field "$dir/p0.json" loss)" = "$(field "$dir/p3.json" loss)" ] || fail "ranks disagree"

# Probes: GEMM rate and collective bandwidths.
"$trial" --probe --ranks 2 --json "$dir/probes.json"
/usr/bin/python3 - "$dir/probes.json" <<'PY' || fail "probes"
import json, sys
p = json.load(open(sys.argv[1]))["probes"]
kinds = {x["kind"] for x in p}
assert {"gemm_f32", "memcpy", "allreduce", "allgather", "reducescatter"} <= kinds, kinds
assert all(x["value"] > 0 for x in p), p
PY
# The collective sweep: 4 processes as 2 nodes of 2 ranks, up to 1 MiB.
pids=()
for r in 0 1 2 3; do
  "$trial" --probe-collectives --rank $r --ranks 4 --ranks-per-host 2 \
    --rendezvous-file "$dir/sweep.addr" --probe-max-bytes 1048576 \
    --time-limit-s 60 --json "$dir/s$r.json" &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "sweep process exit"; done
/usr/bin/python3 - "$dir"/s0.json "$dir"/s3.json <<'PY' || fail "sweep"
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
assert "error" not in a, a
c = a["collectives"]
assert {x["collective"] for x in c} == {"all_gather", "reduce_scatter", "all_reduce", "sendrecv"}, c
assert sorted({x["bytes"] for x in c}) == [65536, 262144, 1048576], c
assert all(x["nodes"] == 2 and x["gpus_per_node"] == 2 and x["busbw_gbs"] > 0 for x in c), c
assert a == b, "ranks disagree"
PY
# A world of one rank is an error in the JSON, not a hang.
"$trial" --probe-collectives --rank 0 --ranks 1 --rendezvous-file "$dir/one.addr" \
  --json "$dir/one.json" || fail "one-rank sweep exit"
grep -q "at least 2 ranks" "$dir/one.json" || fail "one-rank sweep: $(cat "$dir/one.json")"
echo "tessera-trial: all checks passed"
