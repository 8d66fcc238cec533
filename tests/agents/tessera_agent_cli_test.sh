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

# Issue 28: the command policy. A group-writable policy file is refused.
printf 'program /bin/true\n' > "$dir/commands"
chmod 664 "$dir/commands"
set +e
"$agent" --planner 127.0.0.1:1 --backend command --command-policy "$dir/commands" \
  --work-dir "$dir/pw" 2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "writable policy: exit $code"
grep -q "chmod go-w" "$dir/err" || fail "writable policy: $(cat "$dir/err")"
chmod 644 "$dir/commands"
printf 'token-0123456789abcdef0123456789abcdef\n' > "$dir/token"
chmod 600 "$dir/token"
touch "$dir/ca.pem"
# Commands allowed but no run-as, with a token to steal: refused.
set +e
timeout 20 "$agent" --planner 127.0.0.1:1 --backend command --command-policy "$dir/commands" \
  --tls-ca "$dir/ca.pem" --auth-token-file "$dir/token" --work-dir "$dir/pw" \
  2> "$dir/err"; code=$?
set -e
[ $code -eq 2 ] || fail "no run-as: exit $code ($(cat "$dir/err"))"
grep -q "names no run-as user" "$dir/err" || fail "no run-as: $(cat "$dir/err")"
if [ "$(id -u)" = 0 ]; then
  # As root: a token the run-as account could read is refused at start.
  chmod 755 "$dir"
  printf 'run-as nobody\nprogram /bin/true\n' > "$dir/commands"
  chmod 644 "$dir/token"
  openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=ca -days 1 \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" 2> /dev/null
  set +e
  timeout 20 "$agent" --planner 127.0.0.1:1 --backend command \
    --command-policy "$dir/commands" --tls-ca "$dir/ca.pem" \
    --auth-token-file "$dir/token" --work-dir "$dir/pw" --log "$dir/plog"
  code=$?
  set -e
  [ $code -eq 1 ] || fail "readable token: exit $code ($(cat "$dir/plog"))"
  grep -q "is readable or writable by that user" "$dir/plog" ||
    fail "readable token: $(cat "$dir/plog")"
  chmod 700 "$dir"
fi

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
