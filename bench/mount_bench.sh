#!/usr/bin/env bash
# mount_bench.sh: slabfs through the mount next to its peers, in the same
# run, rounds interleaved: a do-nothing FUSE filesystem (nullfs, same
# readahead window) for reads, and a plain file on the same disk for writes
# and np.memmap.
#
#   bench/mount_bench.sh [BUILD_DIR] [N] [CHUNK] [ROUNDS]   (defaults: build 16384 256 3)
#
# CHUNK is C (C x C chunks) or RxC (e.g. 16x16384: row-shaped chunks).
#
# Rows (each a fresh mount, so the FUSE file's page cache is cold):
#   dd read      `dd bs=1M` of the whole dataset: nullfs, slabfs, and slabfs
#                with -o nosplice (every reply copied; the default splices
#                replies whose bytes lie in a few runs of the file); and
#                nullfs --file serving a plain file of the same bytes (a
#                pread into a buffer per request: what any FUSE filesystem
#                that copies real bytes pays, where nullfs's zeros from a
#                static buffer cost no memory reads)
#   dd write     `dd bs=1M conv=notrunc,fsync` of the dataset's bytes over
#                it (slabfs, read-write mount; the fsync commits), and
#                `dd bs=1M conv=fsync` of the same bytes to a plain file
#   memmap       np.memmap, 1000 random 64x64 windows: the plain file (in
#                the page cache, and with its pages dropped first), slabfs on
#                a fresh mount (cold: the container file itself is in the page
#                cache), and the same windows again (warm)
#   column       one column read with pread (4 B x N), slabfs
#   windows      1000 random 64x64 windows read with pread, slabfs
# MB/s (or seconds) min/median/max over the rounds, and the ratio of
# medians; then the daemon's peak resident memory while streaming and while
# writing. Needs root (or fuse permissions) and /dev/fuse.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-16384}
CHUNK=${3:-256}
CHUNK_ROWS=${CHUNK%x*}
CHUNK_COLS=${CHUNK#*x}
ROUNDS=${4:-3}
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

dd_mbs() {  # dd_mbs ARGS... -> MB/s that dd reports
  local out
  out=$(LC_ALL=C dd "$@" bs=1M 2>&1 | tail -1)
  echo "$out" | awk '{for (i=1;i<=NF;i++) if ($i=="copied,") {s=$(i+1)}} END {printf "%.0f", $1/s/1e6}'
}

peak_rss() {  # peak_rss PID -> prints the peak VmHWM in MiB
  awk '/VmHWM/ {printf "%.0f", $2/1024}' "/proc/$1/status"
}

mount_slabfs() {  # mount_slabfs OPTIONS
  "$BIN/slabfs" "$WORK/bench.slab" "$MNT" -f -o "$1" &
  SLABFS_PID=$!
  PIDS+=("$SLABFS_PID")
  wait_mount "$MNT"
}

unmount_slabfs() {
  fusermount3 -u "$MNT"
  wait "$SLABFS_PID" 2>/dev/null || true
}

MEMMAP=$(cat <<'PY'
import os, sys, time
import numpy as np
path, n = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 4:  # "cold": drop the file's pages from the page cache first
    fd = os.open(path, os.O_RDONLY)
    os.fsync(fd)  # dirty pages are not dropped
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
a = np.memmap(path, dtype="<f4", mode="r", shape=(n, n))
out = []
for _ in range(int(sys.argv[3])):
    rng = np.random.default_rng(42)
    t = time.perf_counter()
    for _ in range(1000):
        r, c = rng.integers(0, n - 64, 2)
        float(a[r:r + 64, c:c + 64].sum())
    out.append(f"{time.perf_counter() - t:.4f}")
print(" ".join(out))
PY
)

PREAD=$(cat <<'PY'
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

echo "# mount_bench: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, kernel $(uname -r); ${N}x${N} f4, ${CHUNK_ROWS}x${CHUNK_COLS} chunks, $ROUNDS rounds interleaved"
"$BIN/bench_dense" --path "$WORK/bench.slab" --n "$N" --chunk "$CHUNK_ROWS" --chunk-cols "$CHUNK_COLS" --filters none --keep | sed 's/^/# api: /'
SIZE=$((N * N * 4))
"$BIN/slab" export "$WORK/bench.slab" /data "$WORK/plain.bin"

nullfs_read() {  # nullfs_read [--file PATH] -> MB/s of a dd of nullfs's file
  "$BIN/nullfs" "$NULLMNT" "$SIZE" -f "$@" >/dev/null &
  local pid=$!
  PIDS+=("$pid")
  wait_mount "$NULLMNT"
  echo 1024 > "/sys/class/bdi/$(mountpoint -d "$NULLMNT")/read_ahead_kb" 2>/dev/null || true
  dd_mbs if="$NULLMNT/data" of=/dev/null
  fusermount3 -u "$NULLMNT"
  wait "$pid" 2>/dev/null || true
}

declare -A R  # row -> space-separated values
add() { R[$1]="${R[$1]:-} $2"; }
for round in $(seq "$ROUNDS"); do
  # nullfs, with slabfs's readahead window (1 MiB, docs/mount.md), serving
  # zeros and then the plain file.
  add null_read "$(nullfs_read)"
  add file_read "$(nullfs_read --file "$WORK/plain.bin")"

  mount_slabfs ro
  add slab_read "$(dd_mbs if="$MNT/data" of=/dev/null)"
  STREAM_RSS=$(peak_rss "$SLABFS_PID")
  unmount_slabfs
  mount_slabfs ro,nosplice
  add slab_read_copied "$(dd_mbs if="$MNT/data" of=/dev/null)"
  unmount_slabfs

  add plain_write "$(dd_mbs if="$WORK/plain.bin" of="$WORK/copy.bin" conv=fsync)"
  rm -f "$WORK/copy.bin"
  mount_slabfs rw
  add slab_write "$(dd_mbs if="$WORK/plain.bin" of="$MNT/data" conv=notrunc,fsync)"
  WRITE_RSS=$(peak_rss "$SLABFS_PID")
  unmount_slabfs

  read -r p <<< "$(/usr/bin/python3 -c "$MEMMAP" "$WORK/plain.bin" "$N" 1)"
  add plain_memmap "$p"
  read -r p <<< "$(/usr/bin/python3 -c "$MEMMAP" "$WORK/plain.bin" "$N" 1 cold)"
  add plain_memmap_cold "$p"
  mount_slabfs ro
  read -r cold warm <<< "$(/usr/bin/python3 -c "$MEMMAP" "$MNT/data" "$N" 2)"
  add slab_memmap_cold "$cold"
  add slab_memmap_warm "$warm"
  read -r col win <<< "$(/usr/bin/python3 -c "$PREAD" "$MNT/data" "$N")"
  add slab_column "$col"
  add slab_windows "$win"
  unmount_slabfs
done

stats() {  # stats VALUES... -> "min/median/max median"
  printf "%s\n" "$@" | sort -g | awk '{v[NR]=$1} END {printf "%s/%s/%s %s", v[1], v[int((NR+1)/2)], v[NR], v[int((NR+1)/2)]}'
}
row() {  # row LABEL UNIT KEY [PEER_KEY HIGHER_IS_BETTER]
  local s m
  read -r s m <<< "$(stats ${R[$3]})"
  if [ -n "${4:-}" ]; then
    local ps pm
    read -r ps pm <<< "$(stats ${R[$4]})"
    printf "%-34s %-6s %-24s %-24s %6s\n" "$1" "$2" "$s" "$ps" \
      "$(awk -v a="$m" -v b="$pm" -v hi="$5" 'BEGIN {printf "%.2f", hi ? a / b : b / a}')"
  else
    printf "%-34s %-6s %-24s\n" "$1" "$2" "$s"
  fi
}
printf "%-34s %-6s %-24s %-24s %6s\n" "through the mount" "unit" "slabfs min/med/max" "peer min/med/max" "ratio"
row "dd read vs nullfs" "MB/s" slab_read null_read 1
row "dd read, -o nosplice, vs nullfs" "MB/s" slab_read_copied null_read 1
row "plain-file FUSE (pread) vs nullfs" "MB/s" file_read null_read 1
row "dd read vs plain-file FUSE" "MB/s" slab_read file_read 1
row "dd read, -o nosplice, vs plain-file" "MB/s" slab_read_copied file_read 1
row "dd write+fsync vs plain file" "MB/s" slab_write plain_write 1
row "memmap 1000 windows, cold vs plain" "s" slab_memmap_cold plain_memmap 0
row "memmap, cold vs plain file cold" "s" slab_memmap_cold plain_memmap_cold 0
row "memmap 1000 windows, warm vs plain" "s" slab_memmap_warm plain_memmap 0
row "one column (pread 4 B x $N)" "MB/s" slab_column
row "1000 64x64 windows (pread)" "MB/s" slab_windows
echo "# ratio: slabfs as a fraction of the peer (above 1: slabfs is faster)"
echo "# slabfs daemon peak resident memory: ${STREAM_RSS} MiB streaming, ${WRITE_RSS} MiB writing (cache budget 64 MiB)"
