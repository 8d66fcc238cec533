#!/usr/bin/env bash
# Makes an agent's client certificate, signed by the CA that
# make-credentials.sh made, for a planner that serves --tls-client-ca
# (proto/principals.h: the certificate's common name is the agent id, and
# the agent may act only as that id):
#   deploy/tls/make-agent-certificate.sh [--force] CREDS_DIR AGENT_ID
# Reads CREDS_DIR/ca.pem and CREDS_DIR/ca.key; writes, mode 0600,
#   CREDS_DIR/agents/AGENT_ID.pem   the certificate (P-256, clientAuth,
#                                   825 days)
#   CREDS_DIR/agents/AGENT_ID.key   its private key
# Then:
#   tessera-planner ... --tls-client-ca CREDS_DIR/ca.pem
#   tessera-agent --id AGENT_ID --tls-ca CREDS_DIR/ca.pem \
#       --tls-cert CREDS_DIR/agents/AGENT_ID.pem \
#       --tls-key CREDS_DIR/agents/AGENT_ID.key ...
set -euo pipefail

usage() {
  echo "usage: make-agent-certificate.sh [--force] CREDS_DIR AGENT_ID" >&2
  exit 2
}
force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
[ $# -eq 2 ] || usage
creds=$1
id=$2
case "$id" in
  ''|*[!A-Za-z0-9._-]*)
    echo "make-agent-certificate: '$id' is not an agent id (letters, digits, '.', '_', '-')" >&2
    exit 2 ;;
esac
for f in ca.pem ca.key; do
  [ -r "$creds/$f" ] || {
    echo "make-agent-certificate: no $creds/$f (deploy/tls/make-credentials.sh makes it)" >&2
    exit 1
  }
done
command -v openssl > /dev/null || {
  echo "make-agent-certificate: the openssl command is needed (apt-get install openssl)" >&2
  exit 1
}
umask 077
mkdir -p "$creds/agents"
if [ "$force" -eq 0 ] && [ -e "$creds/agents/$id.pem" ]; then
  echo "make-agent-certificate: $creds/agents/$id.pem exists (--force replaces it)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/agent.cnf" <<CNF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
CNF
{
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$work/agent.key" -out "$work/agent.csr" -subj "/CN=$id"
  openssl x509 -req -in "$work/agent.csr" -CA "$creds/ca.pem" \
    -CAkey "$creds/ca.key" -CAcreateserial -CAserial "$work/ca.srl" \
    -out "$work/agent.pem" -days 825 -extfile "$work/agent.cnf"
} > "$work/openssl.log" 2>&1 || {
  cat "$work/openssl.log" >&2
  echo "make-agent-certificate: openssl failed (above)" >&2
  exit 1
}
install -m 0600 "$work/agent.pem" "$creds/agents/$id.pem"
install -m 0600 "$work/agent.key" "$creds/agents/$id.key"
echo "make-agent-certificate: wrote $creds/agents/$id.pem and $id.key (mode 0600) for agent $id"
