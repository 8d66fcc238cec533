#!/usr/bin/env bash
# deploy/tls/make-credentials.sh end to end: it makes a CA, a planner
# certificate for 127.0.0.1 and localhost and a token, every file 0600; a
# planner serving with them is reached by `tessera studies --tls-ca ...
# --auth-token-file ...` at both names, and refused with another CA's
# certificate, with a wrong token and without one. Bad arguments are refused
# with a message, and existing files are kept without --force. An agent's
# client certificate (make-agent-certificate.sh) registers it with a planner
# serving --principals-file and --tls-client-ca as its own id only.
#   tls_credentials_test.sh SOURCE_DIR BIN_DIR
set -euo pipefail
src=$1
bin=$2
fail() { echo "FAIL: $*"; exit 1; }
command -v openssl > /dev/null || {
  echo "SKIP: no openssl command (deploy/install-deps.sh --tests)"; exit 77; }
make=$src/deploy/tls/make-credentials.sh

d=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2> /dev/null || true; done
  rm -rf "$d"
}
trap cleanup EXIT

"$make" "$d/creds" 127.0.0.1 localhost
"$make" "$d/other" 127.0.0.1 localhost > /dev/null
for f in ca.pem ca.key planner.pem planner.key token; do
  [ -s "$d/creds/$f" ] || fail "no $f"
  mode=$(stat -c %a "$d/creds/$f")
  [ "$mode" = 600 ] || fail "$f has mode $mode, want 600"
done
grep -qE '^[0-9a-f]{64}$' "$d/creds/token" || fail "the token is not 64 hex digits: $(cat "$d/creds/token")"
cmp -s "$d/creds/token" "$d/other/token" && fail "two runs made the same token"
openssl verify -CAfile "$d/creds/ca.pem" "$d/creds/planner.pem" > /dev/null ||
  fail "planner.pem is not signed by ca.pem"
sans=$(openssl x509 -in "$d/creds/planner.pem" -noout -ext subjectAltName)
grep -q "IP Address:127.0.0.1" <<< "$sans" && grep -q "DNS:localhost" <<< "$sans" ||
  fail "the planner certificate's names: $sans"
echo "made: $(ls "$d/creds" | tr '\n' ' ')(mode 600), $(tr -d '\n' <<< "$sans" | tr -s ' ')"

"$bin/tessera-planner" --listen 127.0.0.1:0 --db "$d/tessera.db" \
  --tls-cert "$d/creds/planner.pem" --tls-key "$d/creds/planner.key" \
  --auth-token-file "$d/creds/token" > "$d/planner.out" 2> "$d/planner.log" &
pids+=($!)
addr=""
for _ in $(seq 100); do
  addr=$(sed -n 's/^listening on //p' "$d/planner.out" | head -n 1)
  [ -n "$addr" ] && break
  sleep 0.1
done
[ -n "$addr" ] || fail "the planner did not start with the credentials: $(cat "$d/planner.log")"
port=${addr##*:}

for host in 127.0.0.1 localhost; do
  out=$("$bin/tessera" studies --planner "$host:$port" --tls-ca "$d/creds/ca.pem" \
        --auth-token-file "$d/creds/token" 2>&1) ||
    fail "tessera studies at $host:$port with the CA and token: $out"
  echo "reached at $host:$port with ca.pem and token: $(head -n 1 <<< "$out")"
done

refused() {  # what... -- tessera studies flags...
  local what=$1 out status=0
  shift
  out=$("$bin/tessera" studies --planner "127.0.0.1:$port" "$@" 2>&1) || status=$?
  [ "$status" -ne 0 ] || fail "$what: tessera studies succeeded"
  echo "refused $what: exit $status: $(head -n 1 <<< "$out")"
}
refused "another CA" --tls-ca "$d/other/ca.pem" --auth-token-file "$d/creds/token"
refused "a wrong token" --tls-ca "$d/creds/ca.pem" --auth-token-file "$d/other/token"
refused "plaintext"

# Named principals and an agent's client certificate: the planner serves
# --principals-file and --tls-client-ca; a user's token reaches it, the
# agent registers by certificate as its own id and is refused as another.
"$src/deploy/tls/make-agent-certificate.sh" "$d/creds" node-7
for f in node-7.pem node-7.key; do
  mode=$(stat -c %a "$d/creds/agents/$f")
  [ "$mode" = 600 ] || fail "agents/$f has mode $mode, want 600"
done
openssl verify -CAfile "$d/creds/ca.pem" -purpose sslclient \
  "$d/creds/agents/node-7.pem" > /dev/null || fail "node-7.pem is not a client certificate of ca.pem"
alice=$(openssl rand -hex 32)
(umask 077; printf 'user alice %s\n' "$alice" > "$d/principals"
 printf '%s\n' "$alice" > "$d/alice-token")
"$bin/tessera-planner" --listen 127.0.0.1:0 --db "$d/roles.db" \
  --tls-cert "$d/creds/planner.pem" --tls-key "$d/creds/planner.key" \
  --principals-file "$d/principals" --tls-client-ca "$d/creds/ca.pem" \
  > "$d/roles.out" 2> "$d/roles.log" &
pids+=($!)
roles=""
for _ in $(seq 100); do
  roles=$(sed -n 's/^listening on //p' "$d/roles.out" | head -n 1)
  [ -n "$roles" ] && break
  sleep 0.1
done
[ -n "$roles" ] || fail "the planner did not start with principals: $(cat "$d/roles.log")"
"$bin/tessera" studies --planner "$roles" --tls-ca "$d/creds/ca.pem" \
  --auth-token-file "$d/alice-token" > /dev/null 2>&1 ||
  fail "alice's token did not reach the planner with principals"
agent_as() {  # id -- runs tessera-agent with node-7's certificate for 3 s
  local id=$1
  timeout -s TERM 3 "$bin/tessera-agent" --planner "$roles" --id "$id" \
    --backend cpu --cpu-ranks 1 --work-dir "$d/agent-$id" \
    --tls-ca "$d/creds/ca.pem" --tls-cert "$d/creds/agents/node-7.pem" \
    --tls-key "$d/creds/agents/node-7.key" > "$d/agent-$id.log" 2>&1 || true
}
agent_as node-7
grep -q "agent node-7 registered" "$d/roles.log" ||
  fail "the agent's certificate did not register node-7: $(tail -n 3 "$d/agent-node-7.log")"
echo "agent node-7 registered by its client certificate"
agent_as node-8
grep -q "may act only as agent node-7, not as agent 'node-8'" "$d/agent-node-8.log" ||
  fail "node-7's certificate was not refused as node-8: $(tail -n 3 "$d/agent-node-8.log")"
echo "refused node-7's certificate as node-8: $(grep -m1 -o "agent node-7 may act only as[^)]*" "$d/agent-node-8.log")"

expect_error() {  # exit fragment -- args...
  local want=$1 fragment=$2 out status=0
  shift 2
  out=$("$make" "$@" 2>&1) || status=$?
  [ "$status" -eq "$want" ] && grep -qF -- "$fragment" <<< "$out" ||
    fail "make-credentials.sh $*: exit $status (want $want), output: $out"
  echo "make-credentials.sh $*: exit $status: $(head -n 1 <<< "$out")"
}
expect_error 1 "exists (--force replaces it)" "$d/creds" 127.0.0.1
expect_error 2 "usage:" "$d/x"
expect_error 2 "'bad name!' is not a valid DNS name" "$d/x" "bad name!"
before=$(cat "$d/creds/token")
"$make" --force "$d/creds" planner.example.org > /dev/null
[ "$(cat "$d/creds/token")" != "$before" ] || fail "--force kept the old token"
echo "PASS"
