#!/usr/bin/env bash
# Installs what is missing, checks the C++ layout (clang-format), lints and
# type-checks the Python package, builds
# with warnings as errors, and runs every test: unit tests and real-mount
# integration tests, clang's thread safety analysis, a short fuzzing run and
# the ThreadSanitizer stage. Exits non-zero on any failure, and prints how
# long each stage took.
#
#   tests/run.sh              # everything (the stages format, pycheck, build, tsa, ctest, fuzz, tsan)
#   tests/run.sh -R engine    # only ctest tests matching a regex (build + ctest)
#   SLABFS_STAGES="build ctest" tests/run.sh   # only these stages
#   SLABFS_SANITIZE=address tests/run.sh   # an ASan+UBSan build in build-asan/ (build + ctest)
#   SLABFS_FUZZ_SECONDS=0 tests/run.sh     # without the short fuzzing runs
#   SLABFS_TSAN=0 tests/run.sh             # without the ThreadSanitizer stage
#   SLABFS_TSA=0 tests/run.sh              # without the thread safety analysis
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

bash mount_scripts/install_deps.sh

BUILD_DIR=${SLABFS_BUILD_DIR:-build}
CMAKE_ARGS=(-DSLABFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLABFS_BUILD_TOOLS=ON)
if [ -n "${SLABFS_SANITIZE:-}" ]; then
  BUILD_DIR=${SLABFS_BUILD_DIR:-build-$SLABFS_SANITIZE}
  CMAKE_ARGS+=(-DSLABFS_SANITIZE="$SLABFS_SANITIZE")
fi
JOBS=${SLABFS_JOBS:-$(nproc)}

# The stages: all seven for a whole run; with ctest arguments or a sanitizer
# build, build and ctest only.
STAGES=${SLABFS_STAGES:-format pycheck build tsa ctest fuzz tsan}
if [ $# -gt 0 ] || [ -n "${SLABFS_SANITIZE:-}" ]; then STAGES=${SLABFS_STAGES:-build ctest}; fi
[ "${SLABFS_FUZZ_SECONDS:-10}" = 0 ] && STAGES=${STAGES//fuzz/}
[ "${SLABFS_TSAN:-1}" = 0 ] && STAGES=${STAGES//tsan/}
[ "${SLABFS_TSA:-1}" = 0 ] && STAGES=" $STAGES " && STAGES=${STAGES// tsa / }
want() { [[ " $STAGES " == *" $1 "* ]]; }

TIMES=()
THREAD_USE_LIST=""  # set by the ctest stage of a whole run (stage_ctest)
timed() {
  local name=$1 t0=$SECONDS
  shift
  "$@"
  TIMES+=("$(printf '%-6s %5d s' "$name" $((SECONDS - t0)))")
  echo "tests/run.sh: stage $name took $((SECONDS - t0)) s"
}
report() {
  [ ${#TIMES[@]} -eq 0 ] && return
  echo "tests/run.sh: stage times"
  printf '  %s\n' "${TIMES[@]}"
}
trap report EXIT

# pyflakes over the Python package, its tests and the benchmark scripts, and
# mypy over the package with the settings of python/mypy.ini (strict; the
# stub python/slabfs/_slabfs.pyi types the extension module). It needs no
# build; mypy keeps its cache in the build directory (a few seconds, about
# ten from a cold cache).
# Every tracked C++ file as .clang-format lays it out, with the one
# clang-format version that wrote it (Debian 12's clang-format-14; a newer
# one lays some lines out differently). `clang-format-14 -i FILE` fixes one.
stage_format() {
  if ! command -v clang-format-14 >/dev/null; then
    echo "tests/run.sh: clang-format-14 is missing (mount_scripts/install_deps.sh installs it)" >&2
    return 1
  fi
  local files
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    files=$(git ls-files '*.cc' '*.h')
  else
    files=$(find engine fusefs tools include stores tests bench fuzz python/src -name '*.cc' -o -name '*.h')
  fi
  # shellcheck disable=SC2086
  clang-format-14 --dry-run --Werror $files
}

stage_pycheck() {
  local cache
  cache="$(mkdir -p "$BUILD_DIR" && cd "$BUILD_DIR" && pwd)/mypy-cache"
  pyflakes3 python/slabfs python/tests python/setup.py bench tests/pytest_plugins
  (cd python && /usr/bin/python3 -m mypy --config-file mypy.ini --cache-dir "$cache")
}

stage_build() {
  cmake -S . -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

stage_ctest() {
  # Integration tests mount with FUSE: they need /dev/fuse and fusermount3.
  if [ ! -e /dev/fuse ]; then
    echo "tests/run.sh: /dev/fuse is missing; the integration tests cannot mount" >&2
    return 1
  fi
  # The expensive checks (engine/util/expensive_checks.h: the lock order at
  # run time, ContainerImpl::NoteDirty's promise, no block I/O under a lock
  # that forbids it, the daemon's inode table) on in every test program and
  # in the daemons the mount tests start, in the same build quickstart and
  # the benchmarks use (the tsan stage runs only the engine tests of files
  # that use threads).
  # A whole run (no ctest arguments) also lists the engine tests that used
  # a second thread (tests/tsan/thread_use_check.cc), for the tsan stage.
  local list=""
  if [ $# -eq 0 ]; then
    list="$(cd "$BUILD_DIR" && pwd)/thread_using_tests.txt"
    rm -f "$list"
  fi
  (cd "$BUILD_DIR" && SLABFS_THREAD_USE_LIST="$list" SLABFS_EXPENSIVE_CHECKS=1 \
    ctest --output-on-failure -j "$JOBS" --timeout 900 "$@")
  THREAD_USE_LIST=$list
}

# Clang's thread safety analysis (build-tsa/, clang-16): the engine's and the
# daemon's libraries compiled with -Wthread-safety as errors
# (SLABFS_THREAD_SAFETY_ANALYSIS), so a guarded member used without its
# mutex, a *Locked method called without it, or mutexes taken against their
# ACQUIRED_AFTER order fail the run (the lock order: engine/util/lock_order.h).
# Only compiled, at -O0 without debug information, and not linked: the
# analysis is the compiler's front end.
stage_tsa() {
  local dir=build-tsa cxx=${SLABFS_TSA_CXX:-clang++-16}
  if ! command -v "$cxx" >/dev/null; then
    echo "tests/run.sh: $cxx is missing (mount_scripts/install_deps.sh installs clang-16)" >&2
    return 1
  fi
  CC=${cxx/clang++/clang} CXX=$cxx cmake -S . -B "$dir" -DSLABFS_THREAD_SAFETY_ANALYSIS=ON -DSLABFS_WERROR=ON \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG=-O0 -DSLABFS_BUILD_TESTS=OFF -DSLABFS_BUILD_BENCH=OFF \
    -DSLABFS_BUILD_PYTHON=OFF >/dev/null
  cmake --build "$dir" -j "$JOBS" --target slabfs_engine slabfs_fuse
}

# A short run of every libFuzzer target (its own clang build in build-fuzz/),
# SLABFS_FUZZ_SECONDS each, the cores' worth of targets at a time.
stage_fuzz() {
  SLABFS_BIN="$(cd "$BUILD_DIR" && pwd)/bin" bash fuzz/run.sh --seconds "${SLABFS_FUZZ_SECONDS:-10}"
}

# The engine and the daemon under ThreadSanitizer (their own build in
# build-thread/, which also checks the engine's expensive invariants,
# SLABFS_EXPENSIVE_CHECKS). A race needs two threads, so it builds and runs
# the engine tests that use them, not all: engine_tsan_tests, the files of
# SLABFS_TSAN_TEST_FILES in tests/CMakeLists.txt, which are every file with
# a test that starts a thread or hands work to the engine's pool
# (ParallelFor over 2+ items). ctest checks that rule in the build stage's
# engine_tests (tests/tsan/thread_use_check.cc: a test that used a second
# thread fails if its file is not on the list). The single-threaded tests
# of other files run in ctest only, with the same expensive checks
# (SLABFS_EXPENSIVE_CHECKS=1 in ctest's environment). Of the listed files'
# tests it runs those that used a second thread in this run's ctest stage
# (which writes their names to build/thread_using_tests.txt: about 130 of
# 590), or, without a whole ctest stage before it, all of them but the
# single-threaded sweeps that repeat one code path hundreds of times
# (TSAN_SKIP below; ctest runs them). They run in one
# shard per core side by side; then the many-clients, follow and
# spliced-read mount tests against the instrumented daemon (with the build
# stage's slab for making containers, so this build compiles neither the
# tool nor the HDF5 and Zarr stores; without one, slab is built here). The
# first race stops the program (exit 66), which fails the run.
stage_tsan() {
  local dir=build-thread
  # The mount tests make their containers with the build stage's slab, next
  # to the instrumented daemon; so this build leaves out the tool and its
  # libraries (the HDF5 and Zarr stores too: the instrumented daemon mounts
  # slab containers), unless there is no build stage's slab to use.
  local tools=OFF targets=(engine_tsan_tests slabfs) bin="$ROOT/$dir/mount-bin"
  if [ ! -x "$BUILD_DIR/bin/slab" ]; then
    tools=ON
    targets+=(slab)
    bin="$ROOT/$dir/bin"
  fi
  cmake -S . -B "$dir" -DSLABFS_SANITIZE=thread -DSLABFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSLABFS_BUILD_BENCH=OFF -DSLABFS_BUILD_PYTHON=OFF -DSLABFS_BUILD_TOOLS=$tools >/dev/null
  cmake --build "$dir" -j "$JOBS" --target "${targets[@]}"
  if [ "$tools" = OFF ]; then
    mkdir -p "$bin"
    ln -sfn "$ROOT/$dir/bin/slabfs" "$bin/slabfs"
    ln -sfn "$(cd "$BUILD_DIR/bin" && pwd)/slab" "$bin/slab"
  fi
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1"
  # Single-threaded sweeps that repeat one code path hundreds of times
  # (damage every index block byte): ctest runs them all, with the
  # expensive checks; under TSan they took most of the stage and add no
  # race (SLABFS_THREAD_USE_REPORT=1 build/bin/engine_tests names the tests
  # that use threads). gtest names a value-parameterized test by index
  # (".../1"), not by value: the crash-after-every-write sweeps of
  # CommitTest, once listed here by value (/5, /7, /63), never matched, and
  # they do use threads (build/thread_using_tests.txt), so they run.
  local TSAN_SKIP='*.DamagedBlocksAreCorruptionNeverOtherRecords/*:*.DamagedRootsAreCorruptionNeverOtherRecords/*'
  # Of those files' tests, just the ones that used a second thread in this
  # run's ctest stage (a test that never does cannot race; about a fifth of
  # them), when it ran them all; else every test of the files.
  # They are dealt to the shards in the order of the times ctest just
  # measured, longest first, there and back (0 1 1 0 0 1 ...): gtest's own
  # sharding by index left one shard 118 s and the other 83 s, and dealing
  # by the sum of ctest's times 43 s and 131 s, since ctest's time of a
  # short test is mostly starting its process and TSan's is not. A
  # value-parameterized test is "Suite.Name/1" to gtest and "Suite.Name/5"
  # (its value) to ctest: it takes the longest time of its family.
  local only="" shards=()
  if [ -n "${THREAD_USE_LIST:-}" ] && [ -s "$THREAD_USE_LIST" ]; then
    only=$(sort -u "$THREAD_USE_LIST" | paste -sd:)
    echo "tests/run.sh: under ThreadSanitizer, the $(sort -u "$THREAD_USE_LIST" | wc -l) engine tests that used threads in ctest"
    local costs="$BUILD_DIR/Testing/Temporary/CTestCostData.txt"
    [ -s "$costs" ] || costs=/dev/null
    mapfile -t shards < <(sort -u "$THREAD_USE_LIST" |
      awk 'function base(t) { sub(/\/[^\/.]*$/, "", t); return t }
           NR == FNR { if (NF == 3) { cost[$1] = $3; b = base($1); if ($3 > fam[b]) fam[b] = $3 }; next }
           { c = ($0 in cost) ? cost[$0] : ((base($0) in fam) ? fam[base($0)] : 0.1); print c, $0 }' \
        "$costs" - |
      sort -k1,1 -g -r |
      awk -v n="$JOBS" '{ r = (NR - 1) % (2 * n); b = r < n ? r : 2 * n - 1 - r
                          list[b] = list[b] (list[b] == "" ? "" : ":") $2 }
                        END { for (i = 0; i < n; i++) print list[i] }')
  fi
  local pids=() logs=() i failed=0
  for ((i = 0; i < JOBS; i++)); do
    logs+=("$dir/engine_tsan_tests.shard$i.log")
    if [ ${#shards[@]} -eq "$JOBS" ]; then
      [ -n "${shards[$i]}" ] || shards[i]="NoTest.RunsHere"   # a shard with nothing to run
      "$dir/bin/engine_tsan_tests" --gtest_brief=1 --gtest_filter="${shards[$i]}-$TSAN_SKIP" \
        >"${logs[$i]}" 2>&1 &
    else
      GTEST_TOTAL_SHARDS=$JOBS GTEST_SHARD_INDEX=$i "$dir/bin/engine_tsan_tests" --gtest_brief=1 \
        --gtest_filter="$only-$TSAN_SKIP" \
        >"${logs[$i]}" 2>&1 &
    fi
    pids+=($!)
  done
  for ((i = 0; i < JOBS; i++)); do
    if ! wait "${pids[$i]}"; then
      echo "tests/run.sh: engine_tsan_tests shard $i of $JOBS failed under ThreadSanitizer:" >&2
      tail -n 200 "${logs[$i]}" >&2
      failed=1
    else
      grep -E '^\[  PASSED  \]|^\[==========\]' "${logs[$i]}" | tail -n 2 | sed "s/^/shard $i: /"
    fi
  done
  [ $failed -eq 0 ] || return 1
  SLABFS_BIN="$bin" /usr/bin/python3 -m pytest -q -p no:cacheprovider \
    tests/integration/test_mount_many_clients.py tests/integration/test_mount_follow.py \
    tests/integration/test_mount_splice.py
}

want format && timed format stage_format
want pycheck && timed pycheck stage_pycheck
want build && timed build stage_build
want tsa && timed tsa stage_tsa
want ctest && timed ctest stage_ctest "$@"
want fuzz && timed fuzz stage_fuzz
want tsan && timed tsan stage_tsan
exit 0
