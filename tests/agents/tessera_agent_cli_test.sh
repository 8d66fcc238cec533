#!/usr/bin/env bash
# Runs the real tessera-agent binary: usage errors exit 2 naming the flag;
# with no planner it keeps retrying (never exits on its own) and a SIGTERM
# ends it with exit 0. Usage: tessera_agent_cli_test.sh TESSERA_AGENT
set -euo pipefail
agent=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

set +e
"$agent" --backend cpu 2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "no --planner: exit $code"
grep -q -- "--planner" "$dir/err" || fail "the error does not name --planner"

set +e
"$agent" --planner 127.0.0.1:1 --cpu-rankz 2 2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "unknown flag: exit $code"
grep -q -- "--cpu-rankz" "$dir/err" || fail "the error does not name the flag"

set +e
"$agent" --planner 127.0.0.1:1 --backend tpu 2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "bad backend: exit $code"

"$agent" --help | grep -q -- "--drain-timeout-s" || fail "help"

# Port 1 refuses connections: the agent logs its retries and stays up.
"$agent" --planner 127.0.0.1:1 --backend cpu --cpu-ranks 2 --id cli-test \
  --work-dir "$dir/work" --log "$dir/log" &
pid=$!
sleep 2
kill -0 $pid 2> /dev/null || fail "the agent exited while the planner was down"
grep -q "planner unreachable" "$dir/log" || fail "no retry logged: $(cat "$dir/log")"
grep -q "tessera-agent\[cli-test\]" "$dir/log" || fail "log lines lack the id"
kill -TERM $pid
set +e
wait $pid; code=$?
set -e
[ $code -eq 0 ] || fail "SIGTERM: exit $code"
grep -q "stopped" "$dir/log" || fail "no 'stopped' logged"
echo "tessera-agent: all checks passed"
