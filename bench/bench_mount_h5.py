#!/usr/bin/python3
"""An HDF5 file mounted in place (`slabfs data.h5 mnt`) next to h5py on the
same file, in one run with rounds interleaved: issue 23 item 4.

    bench/bench_mount_h5.py [--n 16384] [--chunk 256] [--windows 1000] [--rounds 3]
                            [--dir DIR] [--bin build/bin] [--cache 64M]
                            [--datasets deflate,plain] [--reads whole,windows,views]

Makes an n x n f4 field (smooth, so deflate finds something to do; n =
16384 is 1 GiB) twice in one file made by h5py: shuffle + deflate level 4,
and unfiltered chunks. Then, per dataset and round, alternating:

  whole    h5py: `ds[()]` (a fresh File); mount: `np.fromfile` of the
           dataset's file
  windows  1,000 random 64 x 64 windows, other ones each round, the same
           for both: h5py `ds[y:y+64, x:x+64]` (a fresh File); mount:
           `np.memmap` of the file, each window copied out (the kernel's
           read-around of each page fault reads far more than the window)
  views    the same windows read through the mount's slice views, one
           file each (`open("ds[y:y+64,x:x+64]").read()`): the mount reads
           exactly the window

One mount serves the whole run (started once, its start time printed);
before each of its reads the kernel's cached pages of the dataset's file
are dropped (posix_fadvise DONTNEED), so every byte goes through the
daemon, whose chunk cache (cache_size, 64M by default) holds a few percent
of a 1 GiB dataset's chunks.

The .h5 file itself is in the page cache for both (it was just written and
is read every round): this measures decoding and copying, not the disk.
Prints seconds min/median/max per reader, the ratio of h5py's median to
the mount's (above 1: the mount is faster), and the daemon's peak
resident memory (VmHWM) over the run against its cache budget.
Targets (issue 23): >= 2x h5py for whole reads of compressed data, >= 1x
for unfiltered data, memory bounded by the cache budget.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_common import machine  # noqa: E402

WINDOW = 64


def make(path, n, chunk):
    with h5py.File(path, "w") as f:
        for name, kw in (("deflate", dict(shuffle=True, compression="gzip", compression_opts=4)), ("plain", {})):
            d = f.create_dataset(name, shape=(n, n), dtype="f4", chunks=(chunk, chunk), **kw)
            x = np.arange(n, dtype="f4")
            for r0 in range(0, n, chunk):
                y = np.arange(r0, min(n, r0 + chunk), dtype="f4")[:, None]
                d[r0:r0 + len(y)] = np.sin(x / 97.0) * np.cos(y / 53.0) * 100 + (x * y % 7)
    with h5py.File(path, "r") as f:
        return {name: f[name].id.get_storage_size() for name in ("deflate", "plain")}


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


def h5py_whole(path, name):
    t0 = time.perf_counter()
    with h5py.File(path, "r") as f:
        a = f[name][()]
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


def h5py_windows(path, name, corners):
    t0 = time.perf_counter()
    total = 0.0
    with h5py.File(path, "r") as f:
        d = f[name]
        for y, x in corners:
            total += float(d[y:y + WINDOW, x:x + WINDOW][0, 0])
    return time.perf_counter() - t0, total


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


def fmt(values):
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--windows", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cache", default="64M")
    ap.add_argument("--datasets", default="deflate,plain", help="which of deflate,plain to read")
    ap.add_argument("--reads", default="whole,windows,views", help="which of whole,windows,views to time")
    ap.add_argument("--dir", default=None)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    args = ap.parse_args()
    binary = os.path.join(args.bin, "slabfs")
    n = args.n
    rng = np.random.default_rng(23)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "field.h5")
        t0 = time.perf_counter()
        stored = make(path, n, args.chunk)
        made_s = time.perf_counter() - t0
        print(f"# {machine()}")
        print(f"# {n} x {n} f4 ({n * n * 4 / 2**20:.0f} MiB a dataset), chunks {args.chunk} x {args.chunk}, "
              f"{args.rounds} rounds, {args.windows} windows of {WINDOW} x {WINDOW}, mount cache_size={args.cache}; "
              f"h5py {h5py.__version__}, libhdf5 {h5py.version.hdf5_version}; file made in {made_s:.0f} s")
        m = Mount(binary, path, args.cache)
        try:
            print(f"# mount started in {m.start_s:.3f} s")
            print(f"{'dataset':<8} {'read':<8} {'stored MiB':>10}  {'h5py s (min/med/max)':>24}  "
                  f"{'mount s (min/med/max)':>24}  {'ratio':>6}")
            for name in args.datasets.split(","):
                for kind in args.reads.split(","):
                    h, s = [], []
                    for _ in range(args.rounds):
                        corners = [(int(y), int(x)) for y, x in rng.integers(0, n - WINDOW, size=(args.windows, 2))]
                        if kind == "whole":
                            t, want = h5py_whole(path, name)
                        else:
                            t, want = h5py_windows(path, name, corners)
                        h.append(t)
                        if kind == "whole":
                            t, got = mount_whole(m, name, n)
                            if not np.array_equal(got, want):
                                raise SystemExit(f"{name}: the mount read other values than h5py")
                        else:
                            reader = mount_windows if kind == "windows" else mount_views
                            t, got = reader(m, name, n, corners)
                            if got != want:
                                raise SystemExit(f"{name}: the mount's {kind} differ from h5py's windows")
                        s.append(t)
                        del got, want
                    ratio = statistics.median(h) / statistics.median(s)
                    print(f"{name:<8} {kind:<8} {stored[name] / 2**20:>10.1f}  {fmt(h):>24}  {fmt(s):>24}  "
                          f"{ratio:>6.2f}", flush=True)
            print(f"# daemon peak resident memory {m.peak_rss() / 2**20:.0f} MiB (cache_size={args.cache})")
        finally:
            m.close()


if __name__ == "__main__":
    main()
