#!/usr/bin/env bash
# Tessera's main job on a fresh machine (the README's first command):
#   deploy/quickstart.sh [--backend cpu|command] [STUDY.json]
# installs only what it needs (deploy/install-deps.sh; python3-torch only
# for --backend command), builds, starts a planner
# and two agents on 127.0.0.1 (two ranks each), submits a study, follows it
# to the recommendation, lists the trials it ran, says where the history is
# kept, and stops what it started.
#
#   --backend cpu (default): the trials run Tessera's own executor on CPU
#     threads; the study is deploy/examples/quickstart-study.json (a tiny
#     Llama planned for this machine's own probed hardware).
#   --backend command: the agents run the study's own training command, the
#     PyTorch example trainer deploy/examples/llama_train.py under torchrun
#     (Debian's python3-torch, gloo on CPU); the study is
#     deploy/examples/command-study.json (stack pytorch-ddp).
#
# TESSERA_RUN_DIR (default ./quickstart) keeps the history database and the
# logs; a second run adds to the same history.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
backend=cpu
if [ "${1:-}" = "--backend" ]; then
  backend=${2:-}
  shift 2 || { echo "quickstart: --backend needs cpu or command" >&2; exit 2; }
fi
case "$backend" in
  cpu) default_study=deploy/examples/quickstart-study.json ;;
  command) default_study=deploy/examples/command-study.json ;;
  *) echo "quickstart: --backend: '$backend' is not cpu or command" >&2; exit 2 ;;
esac
study=${1:-$default_study}

# The main job needs no test packages; torch only for the command example.
if [ "$backend" = command ]; then deploy/install-deps.sh --torch; else deploy/install-deps.sh; fi
# Tests and benchmarks are configured only where their packages are
# installed (by tests/run_all.sh), so that this build shares build/ with it.
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
tests=OFF; installed libgtest-dev && installed libgmock-dev && tests=ON
benchmarks=OFF; installed libbenchmark-dev && benchmarks=ON
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_TESTS="$tests" -DTESSERA_BENCHMARKS="$benchmarks"
cmake --build build -j "$(nproc)" \
  --target tessera tessera-planner tessera-agent tessera-trial

run_dir=${TESSERA_RUN_DIR:-$repo/quickstart}
mkdir -p "$run_dir"
db="$run_dir/tessera.db"
tessera=$repo/build/cli/tessera

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
}
trap stop_all EXIT

# The planner picks a free port and prints it as its first line.
build/service/tessera-planner --listen 127.0.0.1:0 --db "$db" \
  > "$run_dir/planner.out" 2> "$run_dir/planner.log" &
pids+=($!)
addr=""
for _ in $(seq 200); do
  addr=$(sed -n 's/^listening on //p' "$run_dir/planner.out" 2>/dev/null | head -n 1)
  [ -n "$addr" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$run_dir/planner.log" >&2; exit 1; }
  sleep 0.1
done
[ -n "$addr" ] || { echo "quickstart: the planner did not start" >&2; exit 1; }
echo "planner on $addr, history in $db"

# A command agent runs only what its own policy allows (docs/security.md):
# here torchrun with plain-word arguments, as nobody when this runs as root.
policy=()
if [ "$backend" = command ]; then
  { [ "$(id -u)" = 0 ] && echo "run-as nobody"
    echo "program /usr/bin/torchrun"; } > "$run_dir/agent-commands"
  chmod 600 "$run_dir/agent-commands"
  policy=(--command-policy "$run_dir/agent-commands")
fi
# The two agents share this host's CPUs, where a real cluster gives each
# agent its own node: each gets its own half of them (taskset; the trials
# size their threads by it, core/usable_cpus.h), so that a trial measures
# the same whether or not the other agent runs one beside it. Unpinned, a
# trial that ran alone measured twice the tokens/s of one that shared the
# CPUs, and the study recommended whichever happened to run alone.
cpus=()
IFS=, read -r -a ranges <<< "$(taskset -pc $$ | sed 's/.*: //')"
for range in "${ranges[@]}"; do
  mapfile -t -O "${#cpus[@]}" cpus < <(seq "${range%-*}" "${range#*-}")
done
half=$(( ${#cpus[@]} / 2 ))
[ "$half" -ge 1 ] || echo "quickstart: one CPU for both agents: trials that" \
  "run at the same time slow each other, so compare trials with care"
for name in a b; do
  pin=()
  if [ "$half" -ge 1 ]; then
    if [ "$name" = a ]; then mine=("${cpus[@]:0:half}"); else mine=("${cpus[@]:half}"); fi
    pin=(taskset -c "$(IFS=,; echo "${mine[*]}")")
    echo "agent $name on CPUs ${pin[2]}"
  fi
  "${pin[@]}" build/agents/tessera-agent --planner "$addr" \
    --id "quickstart-$name" --backend "$backend" --cpu-ranks 2 \
    --work-dir "$run_dir/agent-$name" --log "$run_dir/agent-$name.log" \
    "${policy[@]}" &
  pids+=($!)
done

id=$("$tessera" submit "$study" --planner "$addr")
echo "submitted $study as study $id; following it:"
status=0
"$tessera" watch "$id" --planner "$addr" || status=$?
echo
echo "trials of study $id:"
"$tessera" trials --study "$id" --planner "$addr"
echo
"$tessera" report "$id" --planner "$addr" --out "$run_dir/study-$id.html"
cat <<MSG

The history (every study, trial, per-step metric, agent, probe and
calibration) is in $db.
Query it directly (read-only, no planner needed), e.g.:
  build/cli/tessera history --db $db
  build/cli/tessera trials --db $db --sort -tokens_per_s
  build/cli/tessera best $id --db $db --export megatron
The study as one HTML page: $run_dir/study-$id.html (tessera report $id).
Logs: $run_dir/{planner,agent-a,agent-b}.log
MSG
exit "$status"
