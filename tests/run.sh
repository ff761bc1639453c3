#!/usr/bin/env bash
# Installs what is missing, builds with warnings as errors, and runs every
# test: unit tests and real-mount integration tests. Exits non-zero on any
# failure.
#
#   tests/run.sh              # everything
#   tests/run.sh -R engine    # only ctest tests matching a regex
#   SLABFS_SANITIZE=address tests/run.sh   # an ASan+UBSan build in build-asan/
#   SLABFS_FUZZ_SECONDS=0 tests/run.sh     # without the short fuzzing runs
#   SLABFS_TSAN=0 tests/run.sh             # without the ThreadSanitizer stage
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

bash mount_scripts/install_deps.sh

BUILD_DIR=${SLABFS_BUILD_DIR:-build}
CMAKE_ARGS=(-DSLABFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ -n "${SLABFS_SANITIZE:-}" ]; then
  BUILD_DIR=${SLABFS_BUILD_DIR:-build-$SLABFS_SANITIZE}
  CMAKE_ARGS+=(-DSLABFS_SANITIZE="$SLABFS_SANITIZE")
fi
JOBS=${SLABFS_JOBS:-$(nproc)}

cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
cmake --build "$BUILD_DIR" -j "$JOBS"

# Integration tests mount with FUSE: they need /dev/fuse and fusermount3.
if [ ! -e /dev/fuse ]; then
  echo "tests/run.sh: /dev/fuse is missing; the integration tests cannot mount" >&2
  exit 1
fi

(cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 900 "$@")

# A short run of every libFuzzer target (its own clang build in build-fuzz/),
# when the whole suite runs: SLABFS_FUZZ_SECONDS each (0 skips it).
if [ $# -eq 0 ] && [ -z "${SLABFS_SANITIZE:-}" ] && [ "${SLABFS_FUZZ_SECONDS:-10}" != 0 ]; then
  SLABFS_BIN="$(cd "$BUILD_DIR" && pwd)/bin" bash fuzz/run.sh --seconds "${SLABFS_FUZZ_SECONDS:-10}"
fi

# The engine and the daemon under ThreadSanitizer (their own build in
# build-thread/), when the whole suite runs: every engine test, then the
# many-clients, follow and spliced-read mount tests against the instrumented daemon. The
# first race stops the program (exit 66), which fails the run.
if [ $# -eq 0 ] && [ -z "${SLABFS_SANITIZE:-}" ] && [ "${SLABFS_TSAN:-1}" != 0 ]; then
  TSAN_DIR=build-thread
  cmake -S . -B "$TSAN_DIR" -DSLABFS_SANITIZE=thread -DSLABFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSLABFS_BUILD_BENCH=OFF -DSLABFS_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$TSAN_DIR" -j "$JOBS" --target engine_tests slabfs slab
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
  "$TSAN_DIR/bin/engine_tests" --gtest_brief=1
  SLABFS_BIN="$ROOT/$TSAN_DIR/bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    tests/integration/test_mount_many_clients.py tests/integration/test_mount_follow.py \
    tests/integration/test_mount_splice.py
fi
