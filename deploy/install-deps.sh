#!/usr/bin/env bash
# Installs every Debian package Tessera needs to build, test and run.
# Idempotent: packages already present are left as they are. The CUDA toolkit is
# not installed here: it lives at /usr/local/cuda on GPU-capable machines and the
# build uses it when present.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  libsqlite3-dev sqlite3
  nlohmann-json3-dev
  libopenblas-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-numpy python3-torch
  openssl  # tests make TLS certificates
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
