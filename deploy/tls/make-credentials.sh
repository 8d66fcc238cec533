#!/usr/bin/env bash
# Makes what a planner serving TLS with a bearer token needs, and what its
# agents and users need to reach it (proto/transport_security.h):
#   deploy/tls/make-credentials.sh [--force] OUT_DIR NAME [NAME...]
# NAME: each host name or IP address the clients dial the planner by (the
# server certificate's subject alternative names; "DNS:x" / "IP:x" are taken
# as written). In OUT_DIR, every file mode 0600:
#   ca.pem, ca.key          a new certificate authority (P-256, 10 years)
#   planner.pem, planner.key  the planner's certificate for NAME..., signed
#                           by ca.pem (P-256, serverAuth, 825 days)
#   token                   a bearer token: 256 random bits as 64 hex digits
# Then:
#   tessera-planner --tls-cert OUT_DIR/planner.pem --tls-key OUT_DIR/planner.key \
#                   --auth-token-file OUT_DIR/token ...
#   tessera-agent   --tls-ca OUT_DIR/ca.pem --auth-token-file OUT_DIR/token ...
#   tessera studies --tls-ca OUT_DIR/ca.pem --auth-token-file OUT_DIR/token
# Keep ca.key off the cluster; agents and users need only ca.pem and token.
# Existing files are left alone unless --force is given.
set -euo pipefail

usage() {
  echo "usage: make-credentials.sh [--force] OUT_DIR NAME [NAME...]" >&2
  echo "  NAME: a host name or IP address clients dial the planner by" >&2
  exit 2
}
force=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
[ $# -ge 2 ] || usage
out=$1
shift
command -v openssl > /dev/null || {
  echo "make-credentials: the openssl command is needed (apt-get install openssl)" >&2
  exit 1
}

sans=()
for name in "$@"; do
  case "$name" in
    DNS:?*|IP:?*) sans+=("$name") ;;
    *:*:*) sans+=("IP:$name") ;;  # IPv6
    *[!0-9.]*) sans+=("DNS:$name") ;;
    *.*.*.*) sans+=("IP:$name") ;;
    *) echo "make-credentials: '$name' is neither a host name nor an IP address" >&2
       exit 2 ;;
  esac
  case "${sans[-1]}" in
    DNS:*[!A-Za-z0-9.*-]*)
      echo "make-credentials: '$name' is not a valid DNS name" >&2; exit 2 ;;
  esac
done
san_list=$(IFS=,; echo "${sans[*]}")

umask 077
mkdir -p "$out"
files=(ca.pem ca.key planner.pem planner.key token)
if [ "$force" -eq 0 ]; then
  for f in "${files[@]}"; do
    if [ -e "$out/$f" ]; then
      echo "make-credentials: $out/$f exists (--force replaces it)" >&2
      exit 1
    fi
  done
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
key=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
cat > "$work/planner.cnf" <<CNF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san_list
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
CNF
first=${sans[0]#*:}
{
  openssl req -x509 "${key[@]}" -keyout "$work/ca.key" -out "$work/ca.pem" \
    -days 3650 -subj "/CN=tessera-ca" -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign"
  openssl req "${key[@]}" -keyout "$work/planner.key" -out "$work/planner.csr" \
    -subj "/CN=$first"
  openssl x509 -req -in "$work/planner.csr" -CA "$work/ca.pem" \
    -CAkey "$work/ca.key" -CAcreateserial -out "$work/planner.pem" -days 825 \
    -extfile "$work/planner.cnf"
} > "$work/openssl.log" 2>&1 || {
  cat "$work/openssl.log" >&2
  echo "make-credentials: openssl failed (above)" >&2
  exit 1
}
openssl rand -hex 32 > "$work/token"
for f in "${files[@]}"; do
  install -m 0600 "$work/$f" "$out/$f"
done
echo "make-credentials: wrote ${files[*]} to $out (mode 0600); planner certificate for $san_list"
