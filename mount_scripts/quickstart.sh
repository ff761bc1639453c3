#!/usr/bin/env bash
# Installs what is missing, builds slabfs, and mounts a container.
#
#   mount_scripts/quickstart.sh                      # demo container ./demo.slab at ./mnt
#   mount_scripts/quickstart.sh FILE.slab [MOUNTPOINT]
#
# The arguments, the container and the mount point are checked first, before
# anything is installed or built. The first build takes FIRST_BUILD_MINUTES
# below (3 min 14 s measured on 2 cores that other builds shared; CMake
# compiles the libraries in batches of files, see CMakeLists.txt); later runs
# build only what changed. The build shows one progress line; the compiler's
# output goes to build/quickstart-build.log and is shown when the build fails.
#
# The build directory is build/ (SLABFS_BUILD_DIR), configured with the
# options tests/run.sh uses, so that the tests reuse what quickstart built.
# SLABFS_BIN=DIR uses the slab and slabfs programs in DIR and builds nothing
# (SLABFS_BIN=/usr/bin after installing the .deb). The daemon logs to
# ./slabfs.log (SLABFS_LOG=PATH to change it).
#
# Unmount with:  fusermount3 -u MOUNTPOINT
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD_DIR=${SLABFS_BUILD_DIR:-$ROOT/build}
# The options tests/run.sh configures build/ with: the same ones here, or the
# tests would rebuild every file.
CMAKE_ARGS=(-DSLABFS_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo)
FIRST_BUILD_MINUTES=3        # slabfs, slab and the Python module, fresh build/, 2 cores
MAGIC=89534c414246530a        # the first 8 bytes of a superblock slot, at 0 or 4096 (docs/format.md)

die() { echo "quickstart: $*" >&2; exit 1; }
usage() {
  echo "usage: mount_scripts/quickstart.sh [FILE.slab [MOUNTPOINT]]"
  echo "  without arguments: builds, makes the demo container ./demo.slab and mounts it at ./mnt"
}

# ---------------------------------------------------------------- checks
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  -*) usage >&2; exit 2 ;;
esac
[ $# -le 2 ] || { usage >&2; exit 2; }

if [ $# -ge 1 ]; then
  CONTAINER=$(realpath -m -- "$1")
  [ -e "$CONTAINER" ] || die "$1 does not exist (without arguments quickstart makes and mounts a demo container)"
  [ -f "$CONTAINER" ] || die "$1 is not a regular file"
  [ -r "$CONTAINER" ] || die "$1 is not readable"
  slot0=$(od -An -tx1 -N 8 -- "$CONTAINER" | tr -d ' \n')
  slot1=$(od -An -tx1 -j 4096 -N 8 -- "$CONTAINER" 2>/dev/null | tr -d ' \n' || true)
  [ "$slot0" = $MAGIC ] || [ "$slot1" = $MAGIC ] || die "$1 is not a slabfs container (make one with: slab create FILE.slab)"
else
  CONTAINER=$PWD/demo.slab
fi

MNT=$(realpath -m -- "${2:-$PWD/mnt}")
if findmnt -rn --mountpoint "$MNT" >/dev/null 2>&1; then
  die "$MNT is already a mount point; unmount it first: fusermount3 -u $MNT"
fi
if [ -e "$MNT" ]; then
  [ -d "$MNT" ] || die "$MNT is not a directory"
  [ -z "$(ls -A -- "$MNT")" ] || die "$MNT is not empty, and a mount would hide what it holds: use an empty directory"
fi
[ -e /dev/fuse ] || die "/dev/fuse is missing: mounting needs FUSE (in a container: --device /dev/fuse --cap-add SYS_ADMIN)"
LOG=$(realpath -m -- "${SLABFS_LOG:-$PWD/slabfs.log}")

# ---------------------------------------------------------------- build
bash "$ROOT/mount_scripts/install_deps.sh"

# Builds TARGETS in BUILD_DIR showing steps, not compiler lines ("[3/20]
# building slabfs_engine (batch 2)": one line rewritten on a terminal, a line
# a step otherwise); the whole output goes to build/quickstart-build.log, and
# what is not progress (the compiler's diagnostics) is printed when the
# build fails.
build() {
  local blog=$BUILD_DIR/quickstart-build.log jobs total n=0 start=$SECONDS line src tgt rc tty=0
  mkdir -p "$BUILD_DIR"
  jobs=${SLABFS_JOBS:-$(nproc)}
  [ -t 1 ] && tty=1
  if ! cmake -S "$ROOT" -B "$BUILD_DIR" "${CMAKE_ARGS[@]}" >"$blog" 2>&1; then
    cat "$blog" >&2
    die "configuring the build failed (the log above is in $blog)"
  fi
  TARGETS=(slabfs slab)
  # The Python package (build/python), when pybind11 is there: docs/python.md.
  if cmake --build "$BUILD_DIR" --target help | grep 'slabfs_python' >/dev/null; then TARGETS+=(slabfs_python); fi
  # What make would compile (a dry run), for the step count.
  # (One target at a time, each listing the libraries under it again: count
  # each object once.)
  total=$(for t in "${TARGETS[@]}"; do cmake --build "$BUILD_DIR" --target "$t" -- -n 2>/dev/null; done |
            grep -o 'Building CXX object [^" ]*' | sort -u | wc -l)
  if [ "$total" -gt 10 ]; then
    echo "quickstart: building slabfs in $BUILD_DIR: $total compile steps, about $FIRST_BUILD_MINUTES minutes on 2 cores ($jobs here); later builds compile only what changed"
  elif [ "$total" -gt 1 ]; then
    echo "quickstart: building slabfs in $BUILD_DIR: $total compile steps"
  elif [ "$total" = 1 ]; then
    echo "quickstart: building slabfs in $BUILD_DIR: 1 compile step"
  fi
  set +e
  cmake --build "$BUILD_DIR" -j "$jobs" --target "${TARGETS[@]}" 2>&1 | {
    while IFS= read -r line; do
      printf '%s\n' "$line" >>"$blog"
      case $line in
        *"Building CXX object "*)
          # "CMakeFiles/slab_tool.dir/tools/cmd_list.cc.o", or a batch of
          # files: "CMakeFiles/slab_tool.dir/Unity/unity_0_cxx.cxx.o".
          n=$((n + 1)); src=${line##*Building CXX object }; tgt=${src%%.dir/*}; tgt=${tgt##*/}
          src=${src#*.dir/}; src=${src%.o}
          case $src in Unity/*) src="$tgt (batch ${src//[!0-9]/})" ;; esac
          if [ $tty = 1 ]; then
            printf '\r\033[K[%d/%d] building %s (%d s)' "$n" "$total" "$src" $((SECONDS - start))
          else
            printf '[%d/%d] building %s (%d s)\n' "$n" "$total" "$src" $((SECONDS - start))
          fi ;;
        *"Linking CXX "*)
          src=${line##* }
          [ $tty = 1 ] && printf '\r\033[K[%d/%d] linking %s (%d s)' "$n" "$total" "${src##*/}" $((SECONDS - start)) ;;
      esac
    done
    [ $tty = 1 ] && [ "$n" -gt 0 ] && printf '\r\033[K'
    true
  }
  rc=${PIPESTATUS[0]}
  set -e
  if [ "$rc" != 0 ]; then
    echo "quickstart: the build failed; the compiler said:" >&2
    grep -v -E '^\[ *[0-9]+%\] |^-- |^(Consolidate compiler generated dependencies|Scanning dependencies)|^g?make' "$blog" >&2 || true
    die "the build failed (the whole log: $blog)"
  fi
  [ "$total" = 0 ] || echo "quickstart: built in $((SECONDS - start)) s (log: $blog)"
}

if [ -n "${SLABFS_BIN:-}" ]; then
  BIN=$(realpath -- "$SLABFS_BIN")
else
  build
  BIN=$BUILD_DIR/bin
fi
SLAB=$BIN/slab
SLABFS=$BIN/slabfs
if [ ! -x "$SLAB" ] || [ ! -x "$SLABFS" ]; then die "no slab and slabfs programs in $BIN"; fi

# ---------------------------------------------------------------- mount
if [ ! -e "$CONTAINER" ]; then
  echo "quickstart: making the demo container $CONTAINER"
  SLABFS_BIN=$BIN bash "$ROOT/mount_scripts/make_examples.sh" --demo "$CONTAINER"
fi

mkdir -p "$MNT"
# The daemon's log: every refused operation with its reason.
"$SLABFS" "$CONTAINER" "$MNT" -o "log_file=$LOG" || die "mounting $CONTAINER at $MNT failed (the reason is above and in $LOG)"
for _ in $(seq 50); do mountpoint -q "$MNT" && break; sleep 0.1; done
mountpoint -q "$MNT" || die "mounting $CONTAINER at $MNT failed (see $LOG)"

# ---------------------------------------------------------------- hints
# Named after this container's own datasets: the first one (in path order),
# and the first compressed one.
q() { printf '%q' "$1"; }
xattr() { getfattr --only-values -n "$2" -- "$1" 2>/dev/null || true; }
DS="" PACKED=""
while IFS= read -r -d '' f; do
  [ -n "$DS" ] || DS=$f
  if [ -z "$PACKED" ] && [ "$(xattr "$f" user.slab.filters)" != none ]; then PACKED=$f; fi
done < <(find "$MNT" -type f -print0 | sort -z)

echo "Mounted $CONTAINER at $MNT. Try:"
echo
echo "  ls -lR $(q "$MNT")"
if [ -n "$DS" ]; then
  dtype=$(xattr "$DS" user.slab.dtype); shape=$(xattr "$DS" user.slab.shape)
  case $dtype in
    f4|f8|u1|u2|u4|u8) odt=$dtype ;;
    i1|i2|i4|i8) odt=d${dtype#i} ;;
    *) odt=x1 ;;
  esac
  echo "  getfattr -d -m - $(q "$DS")"
  echo "  od -A d -t $odt -N 64 $(q "$DS")"
  echo "  /usr/bin/python3 -c \"import numpy as np; a = np.fromfile('$DS', '<$dtype').reshape(${shape:-(-1)}); print(a.shape, a.mean())\""
  echo "  /usr/bin/python3 -c \"import numpy as np; print(np.load('$DS.npy', mmap_mode='r'))\"   # the .npy view"
fi
if [ -n "$PACKED" ]; then
  echo "  du -h --apparent-size $(q "$PACKED"); du -h $(q "$PACKED")   # $(xattr "$PACKED" user.slab.filters)"
fi
echo "  $(q "$SLAB") ls -l -r $(q "$CONTAINER")   # read-only commands work while it is mounted"
cat <<MSG

slab and slabfs are in $BIN (export PATH=$(q "$BIN"):\$PATH, as the README's tour
does; mount_scripts/make_examples.sh makes the tour's input files).

When a command fails (Permission denied, File too large, ...), the reason is
in the daemon's log, $LOG, and the last one is on the mount:

  tail $(q "$LOG")
  getfattr -n user.slab.last_error $(q "$MNT")

Unmount (changes are committed on unmount, fsync, close, and every 5 s):

  fusermount3 -u $(q "$MNT")
MSG
