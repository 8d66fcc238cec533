#!/usr/bin/env bash
# Sets up, builds and runs every test, from a fresh machine:
#   tests/run_all.sh
# Installs the Debian packages it needs (deploy/install-deps.sh --tests), configures
# build/ with CMake and Ninja, builds everything (CUDA code too when nvcc is at
# /usr/local/cuda), and runs ctest. GPU tests skip with a message without a GPU;
# the last line counts passed, failed and skipped tests apart. Then builds the
# tree again with clang and -Werror=thread-safety (build-tsa/, CMakeLists.txt
# TESSERA_THREAD_SAFETY_ANALYSIS): a lock annotation broken fails the run, as
# does a compiler warning in the main build.
set -euo pipefail
cd "$(dirname "$0")/.."

deploy/install-deps.sh --tests
jobs=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DTESSERA_TESTS=ON -DTESSERA_BENCHMARKS=ON
# The build prints no compiler warning (-Wall -Wextra ...: CMakeLists.txt
# TESSERA_WARNINGS); one fails the run, named, after the tests.
cmake --build build -j "$jobs" 2>&1 | tee build/build.log
warnings=$(grep -E "warning:" build/build.log | grep -v "^/usr/" | sort -u || true)
# ctest's own summary counts a skipped test as passed; the JUnit file keeps
# them apart, and tests/ctest_summary.py prints the three counts.
status=0
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 900 \
  --output-junit ctest-junit.xml || status=$?
tsa=0
cmake -S . -B build-tsa -G Ninja -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DTESSERA_CUDA=OFF -DTESSERA_TESTS=OFF \
  -DTESSERA_BENCHMARKS=OFF -DTESSERA_THREAD_SAFETY_ANALYSIS=ON > /dev/null &&
  cmake --build build-tsa -j "$jobs" > build-tsa/build.log 2>&1 || tsa=$?
if [ "$tsa" -eq 0 ]; then
  echo "thread-safety analysis (clang -Werror=thread-safety): clean"
else
  grep -E "error|warning" build-tsa/build.log | head -40 || true
  echo "thread-safety analysis (clang -Werror=thread-safety): FAILED" \
    "(build-tsa/build.log)"
  [ "$status" -ne 0 ] || status=$tsa
fi
if [ -n "$warnings" ]; then
  echo "$warnings" | head -40
  echo "compiler warnings: $(echo "$warnings" | wc -l) (build/build.log): fix them"
  [ "$status" -ne 0 ] || status=1
else
  echo "compiler warnings: none"
fi
python3 tests/ctest_summary.py build/ctest-junit.xml
exit "$status"
