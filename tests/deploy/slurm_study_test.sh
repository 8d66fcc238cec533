#!/usr/bin/env bash
# The installed deploy/slurm/tessera-study.sbatch (PREFIX/share/tessera/slurm,
# its binaries defaulting to PREFIX/bin) against a real single-node Slurm
# (Debian's slurm-wlm 22.05): this test writes a slurm.conf for one node on
# 127.0.0.1 in a temporary folder, starts slurmctld and slurmd itself
# (auth/none: no munge key needed), runs `sbatch --wait` on the script with
# TLS and a token (deploy/tls/make-credentials.sh) and a tiny CPU study (deploy/examples/quickstart-study.json, one agent with two
# thread ranks), checks the job's exit code, that the recommendation was
# printed and the report and history written, and stops the daemons.
#   slurm_study_test.sh SOURCE_DIR PREFIX
# PREFIX is where the deploy_install test installed Tessera.
# Exit 77 (ctest: skipped) when not root or slurm-wlm is not installed.
set -euo pipefail
src=$1
prefix=$2
script=$prefix/share/tessera/slurm/tessera-study.sbatch

if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: starting slurmctld and slurmd as their SlurmUser needs root"
  exit 77
fi
[ -x "$script" ] || { echo "FAIL: no $script (run the deploy_install test first)"; exit 1; }
for c in slurmctld slurmd sbatch scontrol sinfo squeue scancel; do
  if ! command -v "$c" > /dev/null; then
    echo "SKIP: no $c: Debian's slurm-wlm is needed (deploy/install-deps.sh --tests)"
    exit 77
  fi
done

d=$(mktemp -d /tmp/tessera-slurm.XXXXXX)
chmod 755 "$d"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  if [ "${keep:-0}" = 0 ]; then rm -rf "$d"; else echo "kept $d"; fi
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  for f in "$d"/slurmctld.log "$d"/slurmd.log "$d"/job.out "$d"/out/planner.log "$d"/out/agent-*.log; do
    [ -f "$f" ] && { echo "--- $f (last 30 lines)"; tail -n 30 "$f"; }
  done
  keep=1
  exit 1
}

# Three free ports: slurmctld's, slurmd's, and the start of srun's range.
read -r ctld_port slurmd_port srun_port < <(python3 - <<'PY'
import socket
socks = []
for _ in range(3):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(*[s.getsockname()[1] for s in socks])
PY
)
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$d/state" "$d/spool" "$d/out"
cat > "$d/slurm.conf" <<CONF
ClusterName=tessera-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SrunPortRange=$srun_port-$((srun_port + 20))
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/slurmctld.log
SlurmdLogFile=$d/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldTimeout=30
SlurmdTimeout=30
NodeName=tessera-node NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=tessera Nodes=tessera-node Default=YES MaxTime=10 State=UP
CONF
export SLURM_CONF=$d/slurm.conf

slurmctld -D -i -f "$SLURM_CONF" > "$d/slurmctld.stdout" 2>&1 &
pids+=($!)
slurmd -D -N tessera-node -f "$SLURM_CONF" > "$d/slurmd.stdout" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 150); do
  state=$(sinfo -h -n tessera-node -o %t 2> /dev/null || true)
  [ "$state" = idle ] && break
  kill -0 "${pids[0]}" 2> /dev/null || fail "slurmctld exited: $(cat "$d/slurmctld.stdout")"
  kill -0 "${pids[1]}" 2> /dev/null || fail "slurmd exited: $(cat "$d/slurmd.stdout")"
  sleep 0.2
done
[ "$state" = idle ] || fail "the node did not become idle (state '$state')"
echo "slurm: node tessera-node idle (slurmctld :$ctld_port, slurmd :$slurmd_port)"

# Every connection of the job over TLS with the token, from the installed
# helper (the planner's certificate names 127.0.0.1, where a one-node job
# dials it).
"$prefix/share/tessera/tls/make-credentials.sh" "$d/tls" 127.0.0.1 > /dev/null

study=$src/deploy/examples/quickstart-study.json
start=$SECONDS
status=0
(cd "$d" && TESSERA_TLS_DIR=$d/tls TESSERA_BACKEND=cpu TESSERA_AGENT_FLAGS="--cpu-ranks 2" \
   timeout 150 sbatch --wait --nodes=1 --time=5 --output="$d/job.out" --parsable \
   "$script" "$study" "$d/out") > "$d/sbatch.out" || status=$?
job=$(head -n 1 "$d/sbatch.out" | cut -d';' -f1)
echo "slurm: job $job ended with sbatch status $status after $((SECONDS - start)) s"
cat "$d/job.out"
[ "$status" -eq 0 ] || fail "sbatch --wait: exit $status (the job's exit code), want 0"
grep -qF "TLS with the token of $d/tls" "$d/job.out" || fail "the job did not use TLS"
grep -q "recommendation" "$d/job.out" || fail "the job printed no recommendation"
grep -q "best throughput" "$d/job.out" || fail "the job's recommendation names no best layout"
id=$(sed -n 's/^tessera-study: submitted .* as study \([0-9a-zA-Z-]*\)$/\1/p' "$d/job.out")
[ -n "$id" ] || fail "the job did not say which study it submitted"
[ -s "$d/out/recommendation.txt" ] || fail "no recommendation.txt"
[ -s "$d/out/study-$id.html" ] || fail "no report study-$id.html"
[ -s "$d/out/tessera.db" ] || fail "no history tessera.db"
# Nothing of the job is left running: its steps were stopped.
if pgrep -f "$d/out/tessera.db" > /dev/null; then fail "a planner of the job still runs"; fi
echo "PASS: study $id planned in Slurm job $job: $(head -n 3 "$d/out/recommendation.txt" | tr '\n' ' ')"
