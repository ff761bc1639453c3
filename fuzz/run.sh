#!/usr/bin/env bash
# Builds the libFuzzer targets (build-fuzz/, clang-16, ASan+UBSan), makes
# their seed corpora from real containers, runs each target for a while and
# prints what it did. Exits 1 if any target crashed; the input that did it
# is kept in build-fuzz/crashes/.
#
#   fuzz/run.sh                      # every target, 10 s each (what CI runs)
#   fuzz/run.sh --seconds 3600 fuzz_container fuzz_fsck
#   fuzz/run.sh --runs 10000000 fuzz_npy
#
# Needs a normal build's `slab` for the corpora (build/bin, or SLABFS_BIN).
# The corpora live in build-fuzz/corpus/TARGET and grow from run to run.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
SECONDS_EACH=10
RUNS=""
TARGETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) SECONDS_EACH=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) TARGETS+=("$1"); shift ;;
  esac
done

BIN=${SLABFS_BIN:-$ROOT/build/bin}
if [ ! -x "$BIN/slab" ]; then
  echo "fuzz/run.sh: $BIN/slab is not built (build first, or set SLABFS_BIN)" >&2
  exit 1
fi
CXX_FUZZ=${SLABFS_FUZZ_CXX:-clang++-16}
if ! command -v "$CXX_FUZZ" >/dev/null; then
  echo "fuzz/run.sh: $CXX_FUZZ is missing (mount_scripts/install_deps.sh installs clang-16)" >&2
  exit 1
fi

OUT=$ROOT/build-fuzz
CC=${CXX_FUZZ/clang++/clang} CXX=$CXX_FUZZ cmake -S . -B "$OUT" -DSLABFS_FUZZ=ON \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if [ ${#TARGETS[@]} -eq 0 ]; then
  for f in fuzz/fuzz_*.cc; do TARGETS+=("$(basename "$f" .cc)"); done
fi
cmake --build "$OUT" -j "${SLABFS_JOBS:-$(nproc)}" --target "${TARGETS[@]}"

seeds=$(mktemp -d)
trap 'rm -rf "$seeds"' EXIT
/usr/bin/python3 fuzz/make_corpus.py "$BIN" "$seeds"
mkdir -p "$OUT/crashes"

failed=0
printf '%-16s %12s %10s %8s %s\n' target executions exec/s corpus result
# Each target in the background, SLABFS_JOBS (default: the cores) at a
# time; the table is printed in target order once all are done.
JOBS=${SLABFS_JOBS:-$(nproc)}
run_one() {
  local t=$1 name=${1#fuzz_}
  local corpus=$OUT/corpus/$name
  mkdir -p "$corpus"
  cp -n "$seeds/$name"/* "$corpus"/ 2>/dev/null || true
  local limit=(-max_total_time="$SECONDS_EACH")
  [ -n "$RUNS" ] && limit=(-runs="$RUNS")
  local log=$OUT/crashes/$t.log rc=0
  "$OUT/bin/$t" "$corpus" "${limit[@]}" -timeout=25 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$OUT/crashes/$t-" >"$log" 2>&1 || rc=$?
  echo "$rc" >"$OUT/crashes/$t.rc"
}
running=0
for t in "${TARGETS[@]}"; do
  run_one "$t" &
  running=$((running + 1))
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait
for t in "${TARGETS[@]}"; do
  log=$OUT/crashes/$t.log
  rc=$(cat "$OUT/crashes/$t.rc" 2>/dev/null || echo 1)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  result=ok
  if [ "$rc" -ne 0 ]; then
    result="FAILED (exit $rc; see $log and $OUT/crashes/$t-*)"
    failed=1
  fi
  printf '%-16s %12s %10s %8s %s\n' "$t" "${execs:-?}" "${rate:-?}" "$(ls "$OUT/corpus/${t#fuzz_}" | wc -l)" "$result"
done
exit $failed
