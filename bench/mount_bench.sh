#!/usr/bin/env bash
# mount_bench.sh: the reads of bench_dense, through the mount, next to a
# do-nothing FUSE filesystem (nullfs) serving a file of the same size.
#
#   bench/mount_bench.sh [BUILD_DIR] [N] [CHUNK]     (defaults: build 16384 256)
#
# Prints MB/s of `dd bs=1M` over the whole dataset (a fresh mount each time,
# so the kernel's page cache of the FUSE file is cold), one column and 1000
# random 64x64 windows read with pread, and the daemon's peak resident
# memory while streaming. Needs root (or fuse permissions) and /dev/fuse.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-16384}
CHUNK=${3:-256}
BIN=$BUILD/bin
WORK=$(mktemp -d /tmp/slabfs-mount-bench.XXXXXX)
MNT=$WORK/mnt
NULLMNT=$WORK/null
mkdir -p "$MNT" "$NULLMNT"
PIDS=()

cleanup() {
  for m in "$MNT" "$NULLMNT"; do
    mountpoint -q "$m" && { fusermount3 -u "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; }
  done
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

wait_mount() {
  for _ in $(seq 100); do mountpoint -q "$1" && return 0; sleep 0.05; done
  echo "mount_bench: $1 did not mount" >&2
  exit 1
}

dd_mbs() {  # dd_mbs FILE -> MB/s of a 1 MiB sequential read
  local out
  out=$(LC_ALL=C dd if="$1" of=/dev/null bs=1M 2>&1 | tail -1)
  echo "$out" | awk '{for (i=1;i<=NF;i++) if ($i=="copied,") {s=$(i+1)}} END {printf "%.0f", $1/s/1e6}'
}

peak_rss() {  # peak_rss PID -> prints the peak VmHWM in MiB
  awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$1/status"
}

echo "# mount_bench: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, kernel $(uname -r)"
"$BIN/bench_dense" --path "$WORK/bench.slab" --n "$N" --chunk "$CHUNK" --filters none --keep | sed 's/^/# api: /'
SIZE=$((N * N * 4))

# nullfs baseline.
"$BIN/nullfs" "$NULLMNT" "$SIZE" -f &
PIDS+=($!)
wait_mount "$NULLMNT"
# slabfs raises its mount's readahead window to 1 MiB (docs/mount.md); give
# the baseline the same window so that both serve the same request sizes.
NULL_DEV=$(mountpoint -d "$NULLMNT")
echo 1024 > "/sys/class/bdi/$NULL_DEV/read_ahead_kb" 2>/dev/null || echo "# note: could not set nullfs readahead"
NULL_MBS=$(dd_mbs "$NULLMNT/data")
fusermount3 -u "$NULLMNT"

# slabfs, read-only, default cache (64 MiB).
mount_slabfs() {
  "$BIN/slabfs" "$WORK/bench.slab" "$MNT" -f -o ro &
  SLABFS_PID=$!
  PIDS+=("$SLABFS_PID")
  wait_mount "$MNT"
}
mount_slabfs
SLAB_MBS=$(dd_mbs "$MNT/data")
RSS=$(peak_rss "$SLABFS_PID")
fusermount3 -u "$MNT"
wait "$SLABFS_PID" 2>/dev/null || true

mount_slabfs
PREAD=$(/usr/bin/python3 - "$MNT/data" "$N" <<'PY'
import os, random, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
col = n // 3
t = time.perf_counter()
for r in range(n):
    os.pread(fd, 4, (r * n + col) * 4)
col_s = time.perf_counter() - t
rng = random.Random(42)
t = time.perf_counter()
for _ in range(1000):
    r, c = rng.randrange(n - 64), rng.randrange(n - 64)
    for i in range(64):
        os.pread(fd, 256, ((r + i) * n + c) * 4)
win_s = time.perf_counter() - t
print(f"{n * 4 / 1e6 / col_s:.1f} {1000 * 64 * 64 * 4 / 1e6 / win_s:.1f}")
PY
)
read -r COL_MBS WIN_MBS <<< "$PREAD"
fusermount3 -u "$MNT"
wait "$SLABFS_PID" 2>/dev/null || true

printf "%-40s %10s\n" "through the mount" "MB/s"
printf "%-40s %10s\n" "nullfs dd bs=1M (do-nothing FUSE)" "$NULL_MBS"
printf "%-40s %10s\n" "slabfs dd bs=1M (whole dataset)" "$SLAB_MBS"
printf "%-40s %10s\n" "slabfs one column (pread 4 B x $N)" "$COL_MBS"
printf "%-40s %10s\n" "slabfs 1000 64x64 windows (pread)" "$WIN_MBS"
echo "# slabfs vs nullfs: $(awk -v a="$SLAB_MBS" -v b="$NULL_MBS" 'BEGIN {printf "%.0f%%", 100*a/b}')"
echo "# slabfs daemon peak resident memory while streaming: ${RSS} MiB (cache budget 64 MiB)"
