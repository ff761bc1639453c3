#!/usr/bin/python3
"""HDF5 files and Zarr stores mounted in place (`slabfs data.h5 mnt`,
`slabfs store.zarr mnt`) and opened with `slabfs.File`, next to h5py and
zarr-python on the same data, in one run with rounds interleaved: issue 23
item 4.

    bench/bench_mount_h5.py [--n 16384] [--chunk 256] [--windows 1000] [--rounds 3]
                            [--dir DIR] [--bin build/bin] [--cache 64M]
                            [--formats hdf5,zarr] [--datasets deflate,plain]
                            [--reads whole,windows,views]

Makes an n x n f4 field (smooth, so deflate finds something to do; n =
16384 is 1 GiB) twice, in an HDF5 file made by h5py and in a Zarr v2 store
made by zarr-python: shuffle + deflate level 4 (HDF5's shuffle and gzip
filters; Zarr's Shuffle filter and Zlib compressor), and unfiltered chunks.
Then, per format, dataset and round, alternating, the native library, the
mount, and slabfs.File (the Python binding reading the same file or store
through slabfs's own store, no mount):

  whole    native: `ds[()]` (a fresh h5py File / zarr open); mount:
           `np.fromfile` of the dataset's file; File: `ds[()]`
  windows  1,000 random 64 x 64 windows, other ones each round, the same
           for all: native and File `ds[y:y+64, x:x+64]` (a fresh open);
           mount: `np.memmap` of the file, each window copied out (the
           kernel's read-around of each page fault reads far more than the
           window)
  views    the same windows read through the mount's slice views, one
           file each (`open("ds[y:y+64,x:x+64]").read()`): the mount reads
           exactly the window (no File column)

One mount per format serves the whole run (its start time printed); before
each of its reads the kernel's cached pages of the dataset's file are
dropped (posix_fadvise DONTNEED), so every byte goes through the daemon,
whose chunk cache (cache_size, 64M by default) holds a few percent of a
1 GiB dataset's chunks; slabfs.File gets the same cache_bytes.

The files themselves are in the page cache for all readers (they were just
written and are read every round): this measures decoding and copying, not
the disk. Prints seconds min/median/max per reader and the ratios of the
native library's median to the mount's and to File's (above 1: slabfs is
faster), and the daemons' peak resident memory (VmHWM) against the cache
budget. Targets (issue 23): >= 2x the native library for whole reads of
compressed data, >= 1x for unfiltered data, memory bounded by the cache
budget.

Whole reads have one more column, the ceiling of any mount here: the same
bytes (the native read's, written to a plain file) served by bench/nullfs
--file, a FUSE filesystem that does nothing but copy them, read the same
way (np.fromfile after its pages are dropped), with slabfs's readahead
window. A mount that decodes can only come close to it.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import machine  # noqa: E402

sys.path.insert(0, os.environ.get("SLABFS_PYTHON_DIR", os.path.join(ROOT, "build", "python")))
import slabfs  # noqa: E402

WINDOW = 64


def field_rows(n, chunk):
    """The field, a band of `chunk` rows at a time."""
    x = np.arange(n, dtype="f4")
    for r0 in range(0, n, chunk):
        y = np.arange(r0, min(n, r0 + chunk), dtype="f4")[:, None]
        yield r0, np.sin(x / 97.0) * np.cos(y / 53.0) * 100 + (x * y % 7)


def make_hdf5(path, n, chunk):
    with h5py.File(path, "w") as f:
        for name, kw in (("deflate", dict(shuffle=True, compression="gzip", compression_opts=4)), ("plain", {})):
            d = f.create_dataset(name, shape=(n, n), dtype="f4", chunks=(chunk, chunk), **kw)
            for r0, rows in field_rows(n, chunk):
                d[r0:r0 + len(rows)] = rows
    with h5py.File(path, "r") as f:
        return {name: f[name].id.get_storage_size() for name in ("deflate", "plain")}


def make_zarr(path, n, chunk):
    import numcodecs
    import zarr
    root = zarr.open_group(path, mode="w")
    for name, kw in (("deflate", dict(compressor=numcodecs.Zlib(level=4), filters=[numcodecs.Shuffle(elementsize=4)])),
                     ("plain", dict(compressor=None))):
        d = root.create_dataset(name, shape=(n, n), dtype="<f4", chunks=(chunk, chunk), **kw)
        for r0, rows in field_rows(n, chunk):
            d[r0:r0 + len(rows)] = rows
    stored = {}
    for name in ("deflate", "plain"):
        folder = os.path.join(path, name)
        stored[name] = sum(os.path.getsize(os.path.join(folder, f)) for f in os.listdir(folder) if f[0] != ".")
    return stored


class Native:
    """h5py or zarr-python, opened afresh for each read."""

    def __init__(self, fmt, path):
        self.fmt, self.path = fmt, path
        if fmt == "zarr":
            import zarr
            self.zarr = zarr

    def label(self):
        if self.fmt == "hdf5":
            return f"h5py {h5py.__version__}, libhdf5 {h5py.version.hdf5_version}"
        return f"zarr-python {self.zarr.__version__}"

    def open(self, name):
        if self.fmt == "hdf5":
            f = h5py.File(self.path, "r")
            return f, f[name]
        return None, self.zarr.open_array(os.path.join(self.path, name), mode="r")

    def whole(self, name):
        t0 = time.perf_counter()
        f, d = self.open(name)
        a = d[()] if self.fmt == "hdf5" else d[...]
        if f is not None:
            f.close()
        return time.perf_counter() - t0, a

    def windows(self, name, corners):
        t0 = time.perf_counter()
        total = 0.0
        f, d = self.open(name)
        for y, x in corners:
            total += float(d[y:y + WINDOW, x:x + WINDOW][0, 0])
        if f is not None:
            f.close()
        return time.perf_counter() - t0, total


def file_whole(path, name, cache_bytes):
    t0 = time.perf_counter()
    with slabfs.File(path, "r", cache_bytes=cache_bytes) as f:
        a = f[name][()]
    return time.perf_counter() - t0, a


def file_windows(path, name, corners, cache_bytes):
    t0 = time.perf_counter()
    total = 0.0
    with slabfs.File(path, "r", cache_bytes=cache_bytes) as f:
        d = f[name]
        for y, x in corners:
            total += float(d[y:y + WINDOW, x:x + WINDOW][0, 0])
    return time.perf_counter() - t0, total


class Mount:
    def __init__(self, binary, path, cache):
        self.mnt = tempfile.mkdtemp(prefix="slabfs-bench-mnt-")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen([binary, path, self.mnt, "-f", "-o", f"cache_size={cache},log_level=warn"],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                raise RuntimeError(f"slabfs exited: {self.proc.stderr.read().decode()}")
            time.sleep(0.005)
        self.start_s = time.perf_counter() - t0

    def peak_rss(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False, capture_output=True)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.rmdir(self.mnt)


class NullMount:
    """bench/nullfs serving a plain file of the dataset's bytes: what a FUSE
    filesystem that does nothing but copy real bytes costs (the ceiling of
    any mount's whole reads on this machine), with the same readahead
    window as slabfs's (1 MiB, docs/mount.md), as bench/mount_bench.sh does."""

    def __init__(self, binary, path):
        self.mnt = tempfile.mkdtemp(prefix="slabfs-bench-null-")
        self.proc = subprocess.Popen([binary, self.mnt, str(os.path.getsize(path)), "-f", "--file", path],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        while not os.path.ismount(self.mnt):
            if self.proc.poll() is not None:
                raise RuntimeError(f"nullfs exited: {self.proc.stderr.read().decode()}")
            time.sleep(0.005)
        dev = os.stat(self.mnt).st_dev
        try:
            with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb", "w") as f:
                f.write("1024")
        except OSError:
            pass

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False, capture_output=True)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.rmdir(self.mnt)


def nullfs_whole(nm, n):
    drop_pages(os.path.join(nm.mnt, "data"))
    t0 = time.perf_counter()
    a = np.fromfile(os.path.join(nm.mnt, "data"), dtype="<f4").reshape(n, n)
    return time.perf_counter() - t0, a


def drop_pages(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def mount_whole(m, name, n):
    drop_pages(os.path.join(m.mnt, name))
    t0 = time.perf_counter()
    a = np.fromfile(os.path.join(m.mnt, name), dtype="<f4").reshape(n, n)
    return time.perf_counter() - t0, a


def mount_windows(m, name, n, corners):
    drop_pages(os.path.join(m.mnt, name))
    t0 = time.perf_counter()
    total = 0.0
    a = np.memmap(os.path.join(m.mnt, name), dtype="<f4", mode="r", shape=(n, n))
    for y, x in corners:
        total += float(np.array(a[y:y + WINDOW, x:x + WINDOW])[0, 0])
    del a
    return time.perf_counter() - t0, total


def mount_views(m, name, n, corners):
    t0 = time.perf_counter()
    total = 0.0
    for y, x in corners:
        with open(os.path.join(m.mnt, f"{name}[{y}:{y + WINDOW},{x}:{x + WINDOW}]"), "rb") as f:
            total += float(np.frombuffer(f.read(), dtype="<f4")[0])
    return time.perf_counter() - t0, total


def fmt_times(values):
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def parse_size(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def ratio(native, other):
    return statistics.median(native) / statistics.median(other) if other else float("nan")


def run_format(fmt, args, tmp, rng):
    n = args.n
    path = os.path.join(tmp, "field.h5" if fmt == "hdf5" else "field.zarr")
    t0 = time.perf_counter()
    stored = (make_hdf5 if fmt == "hdf5" else make_zarr)(path, n, args.chunk)
    made_s = time.perf_counter() - t0
    native = Native(fmt, path)
    cache_bytes = parse_size(args.cache)
    print(f"# {fmt}: {native.label()}; made in {made_s:.0f} s")
    m = Mount(os.path.join(args.bin, "slabfs"), path, args.cache)
    try:
        print(f"# {fmt}: mount started in {m.start_s:.3f} s")
        print(f"{'format':<6} {'dataset':<8} {'read':<8} {'stored MiB':>10}  {'native s (min/med/max)':>24}  "
              f"{'mount s (min/med/max)':>24}  {'ratio':>6}  {'File s (min/med/max)':>24}  {'ratio':>6}  "
              f"{'nullfs s (min/med/max)':>24}  {'ratio':>6}")
        for name in args.datasets.split(","):
            for kind in args.reads.split(","):
                nat, mnt, fil, nul = [], [], [], []
                null_mount = None
                for _ in range(args.rounds):
                    corners = [(int(y), int(x)) for y, x in rng.integers(0, n - WINDOW, size=(args.windows, 2))]
                    if kind == "whole":
                        t, want = native.whole(name)
                    else:
                        t, want = native.windows(name, corners)
                    nat.append(t)
                    if kind == "whole":
                        t, got = mount_whole(m, name, n)
                        if not np.array_equal(got, want):
                            raise SystemExit(f"{fmt} {name}: the mount read other values than the native library")
                    else:
                        reader = mount_windows if kind == "windows" else mount_views
                        t, got = reader(m, name, n, corners)
                        if got != want:
                            raise SystemExit(f"{fmt} {name}: the mount's {kind} differ from the native windows")
                    mnt.append(t)
                    del got
                    if kind != "views":
                        if kind == "whole":
                            t, got = file_whole(path, name, cache_bytes)
                            same = np.array_equal(got, want)
                        else:
                            t, got = file_windows(path, name, corners, cache_bytes)
                            same = got == want
                        if not same:
                            raise SystemExit(f"{fmt} {name}: slabfs.File read other values than the native library")
                        fil.append(t)
                        del got
                    if kind == "whole":
                        # The ceiling: the same bytes through a FUSE
                        # filesystem that only copies them.
                        if null_mount is None:
                            flat = os.path.join(tmp, "nullfs.bin")
                            want.tofile(flat)
                            null_mount = NullMount(os.path.join(args.bin, "nullfs"), flat)
                        t, got = nullfs_whole(null_mount, n)
                        if not np.array_equal(got, want):
                            raise SystemExit(f"{fmt} {name}: nullfs served other bytes")
                        nul.append(t)
                        del got
                    del want
                if null_mount is not None:
                    null_mount.close()
                    os.unlink(os.path.join(tmp, "nullfs.bin"))
                null_cols = f"{fmt_times(nul):>24}  {ratio(nat, nul):>6.2f}" if nul else f"{'-':>24}  {'-':>6}"
                file_cols = f"{fmt_times(fil):>24}  {ratio(nat, fil):>6.2f}" if fil else f"{'-':>24}  {'-':>6}"
                print(f"{fmt:<6} {name:<8} {kind:<8} {stored[name] / 2**20:>10.1f}  {fmt_times(nat):>24}  "
                      f"{fmt_times(mnt):>24}  {ratio(nat, mnt):>6.2f}  {file_cols}  {null_cols}", flush=True)
        print(f"# {fmt}: daemon peak resident memory {m.peak_rss() / 2**20:.0f} MiB (cache_size={args.cache})")
    finally:
        m.close()
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.unlink(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--windows", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="64M")
    ap.add_argument("--formats", default="hdf5,zarr", help="which of hdf5,zarr to make and read")
    ap.add_argument("--datasets", default="deflate,plain", help="which of deflate,plain to read")
    ap.add_argument("--reads", default="whole,windows,views", help="which of whole,windows,views to time")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    args = ap.parse_args()
    rng = np.random.default_rng(23)
    n = args.n
    print(f"# {machine()}")
    print(f"# {n} x {n} f4 ({n * n * 4 / 2**20:.0f} MiB a dataset), chunks {args.chunk} x {args.chunk}, "
          f"{args.rounds} rounds, {args.windows} windows of {WINDOW} x {WINDOW}, mount cache_size={args.cache}, "
          f"slabfs.File cache_bytes the same")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for fmt in args.formats.split(","):
            run_format(fmt, args, tmp, rng)


if __name__ == "__main__":
    main()
