#!/usr/bin/python3
"""Whole reads of HDF5 datasets: the HDF5 store (bench_h5store) next to
h5py, on the same file, in one run.

    bench/bench_h5store.py [--n 4096] [--chunk 256] [--rounds 5] [--dir DIR] [--bin build/bin]

Makes an n x n f4 field (smooth, so deflate finds something to do) in
three datasets of one file made by h5py: unfiltered chunks, shuffle +
deflate level 4, and contiguous. Then, in interleaved rounds, reads each
dataset whole with h5py (`ds[()]`, a fresh File per round) and with the
store (a fresh process per round: open, learn the chunk map, read), and
prints, per dataset, the seconds (min/median/max over rounds), the store's
open time, and the ratio of h5py's median to the store's (above 1: the
store is faster). The page cache is warm (the file was just written and
is read every round), so this measures decoding and copying, not the disk.
The question of issue 23 item 4: >= 2x h5py on compressed data, >= 1x on
unfiltered.
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


def make(path, n, chunk):
    y, x = np.mgrid[0:n, 0:n].astype("f4")
    field = np.sin(x / 97.0) * np.cos(y / 53.0) * 100 + (x * y % 7)
    with h5py.File(path, "w") as f:
        f.create_dataset("plain", data=field, chunks=(chunk, chunk))
        f.create_dataset("deflate", data=field, chunks=(chunk, chunk), shuffle=True, compression="gzip",
                         compression_opts=4)
        f.create_dataset("contiguous", data=field)
    with h5py.File(path, "r") as f:
        return {name: f[name].id.get_storage_size() for name in ("plain", "deflate", "contiguous")}


def h5py_read(path, name):
    t0 = time.perf_counter()
    with h5py.File(path, "r") as f:
        a = f[name][()]
    return time.perf_counter() - t0, a.nbytes


def store_read(binary, path, name):
    out = subprocess.run([binary, path, "/" + name, "1"], check=True, capture_output=True, text=True).stdout
    open_s, read_s, nbytes = out.splitlines()[0].split()
    return float(open_s), float(read_s), int(nbytes)


def fmt(values):
    return f"{min(values):.4f} / {statistics.median(values):.4f} / {max(values):.4f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--bin", default=os.path.join(os.path.dirname(__file__), "..", "build", "bin"))
    args = ap.parse_args()
    binary = os.path.join(args.bin, "bench_h5store")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        path = os.path.join(tmp, "field.h5")
        stored = make(path, args.n, args.chunk)
        print(f"# {machine()}")
        print(f"# {args.n} x {args.n} f4 ({args.n * args.n * 4 / 2**20:.0f} MiB), chunks {args.chunk} x {args.chunk},"
              f" {args.rounds} rounds, h5py {h5py.__version__}, libhdf5 {h5py.version.hdf5_version}")
        print(f"{'dataset':<11} {'stored MiB':>10}  {'h5py s (min/med/max)':>26}  {'store s (min/med/max)':>26}"
              f"  {'store open s':>12}  {'ratio':>6}")
        for name in ("deflate", "plain", "contiguous"):
            h, s, o = [], [], []
            for _ in range(args.rounds):
                t, _ = h5py_read(path, name)
                h.append(t)
                open_s, read_s, _ = store_read(binary, path, name)
                s.append(read_s)
                o.append(open_s)
            ratio = statistics.median(h) / statistics.median(s)
            print(f"{name:<11} {stored[name] / 2**20:>10.1f}  {fmt(h):>26}  {fmt(s):>26}  "
                  f"{statistics.median(o):>12.4f}  {ratio:>6.2f}")


if __name__ == "__main__":
    main()
