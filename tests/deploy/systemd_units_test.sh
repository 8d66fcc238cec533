#!/usr/bin/env bash
# The installed systemd units (PREFIX/lib/systemd/system, their ExecStart
# rewritten to PREFIX/bin by cmake --install) pass `systemd-analyze verify`
# with nothing printed, keep their sandbox (`systemd-analyze security`'s
# exposure level), and every flag they and the example environment
# files pass is one the binary's --help lists. A copy with an unknown key and
# a missing binary must be reported, so that a verify which checks nothing
# cannot pass.
#   systemd_units_test.sh SOURCE_DIR PREFIX
# Exit 77 (ctest: skipped) without systemd-analyze.
set -euo pipefail
src=$1
prefix=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v systemd-analyze > /dev/null || {
  echo "SKIP: no systemd-analyze (Debian's systemd)"; exit 77; }
units=("$prefix/lib/systemd/system/tessera-planner.service"
       "$prefix/lib/systemd/system/tessera-agent.service")
for u in "${units[@]}"; do [ -f "$u" ] || fail "no $u (run the deploy_install test first)"; done

status=0
out=$(systemd-analyze verify "${units[@]}" 2>&1) || status=$?
[ "$status" -eq 0 ] && [ -z "$out" ] ||
  fail "systemd-analyze verify: exit $status, printed: $out"
echo "systemd-analyze verify ${units[*]##*/}: exit 0, nothing printed"

# The sandbox stays: systemd's exposure level (0 to 10, lower is tighter)
# at most 2.5 for the planner and 4.5 for the agent (which keeps the GPU
# devices and lets CUDA map generated code).
exposure() {  # unit threshold-in-tenths
  local level
  level=$(systemd-analyze security --offline=yes "$1" 2>&1 |
          sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p')
  [ -n "$level" ] || fail "systemd-analyze security --offline=yes $1 printed no exposure level"
  systemd-analyze security --offline=yes --threshold="$2" "$1" > /dev/null 2>&1 ||
    fail "${1##*/}: exposure level $level is above $(($2 / 10)).$(($2 % 10)) (a hardening setting dropped?)"
  echo "${1##*/}: exposure level $level (at most $(($2 / 10)).$(($2 % 10)))"
}
exposure "${units[0]}" 25
exposure "${units[1]}" 45

# Each --flag of ExecStart and of the example environment files' flag
# variables is in the binary's --help.
check_flags() {  # binary text...
  local binary=$1 help flag
  shift
  help=$("$prefix/bin/$binary" --help 2>&1)
  for flag in $(grep -oE -- '--[a-z][a-z0-9-]*' <<< "$*" | sort -u); do
    grep -qE -- "^ *$flag( |$)" <<< "$help" || fail "$binary has no flag $flag (its --help)"
  done
  echo "$binary: flags $(grep -oE -- '--[a-z][a-z0-9-]*' <<< "$*" | sort -u | tr '\n' ' ')listed by --help"
}
check_flags tessera-planner "$(grep ^ExecStart= "${units[0]}")" \
  "$(grep ^TESSERA_PLANNER_FLAGS= "$src/deploy/systemd/planner.env")"
check_flags tessera-agent "$(grep ^ExecStart= "${units[1]}")" \
  "$(grep ^TESSERA_AGENT_FLAGS= "$src/deploy/systemd/agent.env")"

# A command agent: the installed drop-in (share/tessera/systemd) over the
# agent's unit verifies too, its flags are the agent's, and it keeps the
# agent's sandbox but for the capabilities it names (issue 28).
dropin="$prefix/share/tessera/systemd/tessera-agent-commands.conf"
[ -f "$dropin" ] || fail "no $dropin"
units_dir=$(mktemp -d)
cp "${units[1]}" "$units_dir/"
mkdir "$units_dir/tessera-agent.service.d"
cp "$dropin" "$units_dir/tessera-agent.service.d/commands.conf"
status=0
out=$(SYSTEMD_UNIT_PATH="$units_dir:" systemd-analyze verify "$units_dir/tessera-agent.service" 2>&1) || status=$?
rm -rf "$units_dir"
[ "$status" -eq 0 ] && [ -z "$out" ] ||
  fail "systemd-analyze verify with the commands drop-in: exit $status, printed: $out"
check_flags tessera-agent "$(grep ^ExecStart=/ "$dropin")"
grep -q '^AmbientCapabilities=CAP_SETUID CAP_SETGID CAP_CHOWN CAP_KILL CAP_DAC_OVERRIDE CAP_FOWNER$' "$dropin" ||
  fail "the drop-in's capabilities changed"
grep -q '^u tessera-command ' "$prefix/lib/sysusers.d/tessera.conf" ||
  fail "no tessera-command account in sysusers"
echo "tessera-agent.service with the commands drop-in: verified"

# The check itself: a broken copy is reported.
broken=$(mktemp -d)
trap 'rm -rf "$broken"' EXIT
sed -e "s|^ExecStart=$prefix/bin/tessera-planner|ExecStart=$broken/no-such-planner|" \
    -e 's|^Restart=on-failure|Restart=on-failure\nProtectSytem=strict|' \
    "${units[0]}" > "$broken/tessera-planner.service"
out=$(systemd-analyze verify "$broken/tessera-planner.service" 2>&1) || true
grep -q "no-such-planner" <<< "$out" && grep -q "ProtectSytem" <<< "$out" ||
  fail "systemd-analyze verify did not report a broken unit: $out"
echo "a broken copy is reported: $(tr '\n' ' ' <<< "$out")"
