#!/usr/bin/env bash
# Sets up, builds and runs every test, from a fresh machine:
#   tests/run_all.sh
# Installs the Debian packages it needs (deploy/install-deps.sh --tests), configures
# build/ with CMake and Ninja, builds everything (CUDA code too when nvcc is at
# /usr/local/cuda), and runs ctest. GPU tests skip with a message without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --tests
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_TESTS=ON -DTESSERA_BENCHMARKS=ON
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900
