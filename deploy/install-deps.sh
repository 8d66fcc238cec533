#!/usr/bin/env bash
# Installs the Debian packages Tessera needs, in three sets:
#   deploy/install-deps.sh           build and run the planner, agents and CLI
#                                    (the main job, deploy/quickstart.sh)
#   deploy/install-deps.sh --torch   and python3-torch, for the PyTorch trial
#                                    example (quickstart.sh --backend command)
#   deploy/install-deps.sh --tests   everything the test suite uses (the
#                                    README's test command, tests/run_all.sh)
# python3-torch alone pulls about 200 packages (OpenCV, Qt, GDAL); only the
# tests and the torch example need it, so the main job does not install it.
# Idempotent: packages already present are left as they are. The CUDA toolkit
# is not installed here: it lives at /usr/local/cuda on GPU-capable machines
# and the build uses it when present.
set -euo pipefail

# Building and running the three binaries.
packages=(
  build-essential cmake ninja-build pkg-config git
  libabsl-dev
  libprotobuf-dev protobuf-compiler
  libgrpc++-dev protobuf-compiler-grpc
  libsqlite3-dev sqlite3
  libmicrohttpd-dev  # tessera-planner --metrics-listen
  nlohmann-json3-dev
  libopenblas-dev
  python3  # deploy/ scripts' JSON handling
)
# The PyTorch example trainer (deploy/examples/llama_train.py).
torch_packages=(python3-torch)
# The test suite and benchmarks: GoogleTest, Google Benchmark, the PyTorch
# oracle, TLS certificates, and the deployment and report checks.
test_packages=(
  libgtest-dev libgmock-dev libbenchmark-dev
  python3-numpy python3-torch
  openssl
  systemd slurm-wlm nodejs  # tests/deploy: systemd-analyze, Slurm, the k8s validator
  chromium  # tests/cli/report_browser_test: the report page in a browser
  zsh  # tests/cli/completion_test.sh: the zsh completion script parses
  clang  # the thread-safety analysis build (tests/run_all.sh)
)

case "${1:-}" in
  "") ;;
  --torch) packages+=("${torch_packages[@]}") ;;
  --tests) packages+=("${test_packages[@]}")
           # Debian's npm, unless the installed nodejs brings its own.
           command -v npm > /dev/null || packages+=(npm) ;;
  *) echo "install-deps: unknown argument '$1' (none, --torch or --tests)" >&2
     exit 2 ;;
esac

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
