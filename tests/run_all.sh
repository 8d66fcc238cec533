#!/usr/bin/env bash
# Sets up, builds and runs every test, from a fresh machine:
#   tests/run_all.sh
# Installs the Debian packages it needs (deploy/install-deps.sh --tests), configures
# build/ with CMake and Ninja, builds everything (CUDA code too when nvcc is at
# /usr/local/cuda), and runs ctest. GPU tests skip with a message without a GPU;
# the last line counts passed, failed and skipped tests apart.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --tests
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_TESTS=ON -DTESSERA_BENCHMARKS=ON
cmake --build build -j "$jobs"
# ctest's own summary counts a skipped test as passed; the JUnit file keeps
# them apart, and tests/ctest_summary.py prints the three counts.
status=0
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900 \
  --output-junit ctest-junit.xml || status=$?
python3 tests/ctest_summary.py build/ctest-junit.xml
exit "$status"
