#!/usr/bin/env bash
# `cmake --install` into a fresh prefix: the four binaries land in bin/ and
# run (--help), the deployment files land where the README says, and an
# installed tessera-agent runs the installed tessera-trial beside it (not the
# build tree's): its log names that binary once it has registered with an
# installed planner and run its hardware probe with it.
#   install_test.sh BUILD_DIR PREFIX
# PREFIX is emptied first; the other deploy tests use what is installed there.
set -euo pipefail
build=$1
prefix=$2
fail() { echo "FAIL: $*"; exit 1; }

rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" > "$prefix.install.log" 2>&1 || {
  cat "$prefix.install.log"; fail "cmake --install $build --prefix $prefix"; }
echo "installed into $prefix: $(grep -c 'Installing:' "$prefix.install.log") files"

for b in tessera tessera-planner tessera-agent tessera-trial; do
  [ -x "$prefix/bin/$b" ] || fail "no $prefix/bin/$b"
  out=$("$prefix/bin/$b" --help 2>&1) || fail "$b --help exited $?"
  grep -qi "usage\|flags\|--" <<< "$out" || fail "$b --help printed no usage: $out"
  echo "bin/$b --help: $(head -n 1 <<< "$out")"
done
for f in lib/systemd/system/tessera-planner.service lib/systemd/system/tessera-agent.service \
         lib/sysusers.d/tessera.conf \
         share/tessera/systemd/planner.env share/tessera/systemd/agent.env \
         share/tessera/k8s/planner.yaml share/tessera/k8s/agent.yaml \
         share/tessera/k8s/namespace.yaml share/tessera/slurm/tessera-study.sbatch \
         share/tessera/tls/make-credentials.sh share/tessera/examples/quickstart-study.json \
         share/doc/tessera/README.md share/doc/tessera/docs/deployment.md \
         share/doc/tessera/docs/security.md; do
  [ -s "$prefix/$f" ] || fail "no $prefix/$f"
done
for f in share/tessera/slurm/tessera-study.sbatch share/tessera/tls/make-credentials.sh; do
  [ -x "$prefix/$f" ] || fail "$prefix/$f is not executable"
done
# The installed files name the installed binaries, not the default prefix's.
grep -q "^ExecStart=$prefix/bin/tessera-planner " "$prefix/lib/systemd/system/tessera-planner.service" ||
  fail "the installed planner unit does not start $prefix/bin/tessera-planner"
grep -q "^ExecStart=$prefix/bin/tessera-agent " "$prefix/lib/systemd/system/tessera-agent.service" ||
  fail "the installed agent unit does not start $prefix/bin/tessera-agent"
grep -q "TESSERA_BIN_DIR:-$prefix/bin}" "$prefix/share/tessera/slurm/tessera-study.sbatch" ||
  fail "the installed Slurm script does not default to $prefix/bin"

# An installed planner and agent: the agent runs the installed tessera-trial.
run=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  rm -rf "$run"
}
trap cleanup EXIT
"$prefix/bin/tessera-planner" --listen 127.0.0.1:0 --db "$run/tessera.db" \
  > "$run/planner.out" 2> "$run/planner.log" &
pids+=($!)
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/^listening on //p' "$run/planner.out" | head -n 1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || fail "the installed planner did not start: $(cat "$run/planner.log")"
# From another folder, with the build tree's binaries off PATH.
(cd "$run" && exec env PATH=/usr/bin:/bin "$prefix/bin/tessera-agent" --planner "$addr" \
   --id install-test --backend cpu --cpu-ranks 2 --work-dir "$run/work" \
   --log "$run/agent.log") &
pids+=($!)
for _ in $(seq 600); do
  grep -qE "reported [0-9]+ probes" "$run/agent.log" 2> /dev/null && break
  sleep 0.1
done
started=$(grep -m 1 "starting:" "$run/agent.log" || true)
[ -n "$started" ] || fail "the installed agent did not start: $(cat "$run/agent.log" 2> /dev/null)"
grep -qF "trial binary $prefix/bin/tessera-trial" <<< "$started" ||
  fail "the installed agent does not run the installed tessera-trial: $started"
probes=$(grep -m 1 -E "reported [0-9]+ probes" "$run/agent.log") ||
  fail "the installed agent's probes (tessera-trial --probe) were not reported: $(cat "$run/agent.log")"
echo "installed agent: ${started#* starting: }"
echo "installed agent: ${probes#* ] }"
