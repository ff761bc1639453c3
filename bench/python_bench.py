#!/usr/bin/python3
"""The Python binding next to h5py, and Dask over the binding, in one run.

    bench/python_bench.py [--n 16384] [--rounds 5] [--dask-gib 4] [--workers 1,2,4] [--dir DIR]

1. Read a whole n x n f4 dataset (256 x 256 chunks; 1 GiB at n = 16384)
   into numpy, `ds[...]`, with slabfs.File and with h5py.File on the same
   data as HDF5, for no filter and for shuffle + deflate level 1: a fresh
   open per read, rounds interleaved, min/median/max and the ratio
   (h5py's median time / slabfs's: above 1, the binding is faster).
2. A Dask mean over a --dask-gib GiB f4 dataset (chunks of 256 x 256 in the
   container, 4096 x 4096 per Dask task), computed by Dask's
   multiprocessing scheduler and by a dask.distributed LocalCluster with 1,
   2 and 4 worker processes, while a writer process appends rows to
   another dataset of the same container and commits every 50 ms; each
   computed mean is checked against the exact value. Workers reopen the
   dataset read-only by path (it pickles that way) and refresh when the
   container changed.
"""
import argparse
import multiprocessing as mp
import os
import shutil
import statistics
import sys
import tempfile
import time

import dask
import dask.array as da
import h5py
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.environ.get("SLABFS_PYTHON_DIR", os.path.join(ROOT, "build", "python")))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [sys.path[0], os.environ.get("PYTHONPATH")]))
import slabfs  # noqa: E402
from bench_common import machine  # bench/, the script's own directory


def field_block(r0, rows, n):
    i = np.arange(r0, r0 + rows, dtype=np.float64)[:, None]
    j = np.arange(n, dtype=np.float64)[None, :]
    return (np.round((np.sin(i / 100.0) + np.cos(j / 70.0)) * 1024) / 1024).astype("<f4")


def spread(ts):
    s = sorted(ts)
    return f"{s[0]:.3f}/{statistics.median(s):.3f}/{s[-1]:.3f}"


def read_bench(work, n, rounds):
    print(f"\n## reading a {n}x{n} f4 dataset ({n * n * 4 / 2**30:.2f} GiB) into numpy, ds[...], "
          f"fresh open each time, {rounds} rounds interleaved")
    print(f"{'filters':<20} {'slabfs s':>22} {'h5py s':>22} {'ratio':>7}")
    for name, h5kw, slkw in (("none", {}, {}),
                             ("shuffle,deflate=1", {"compression": "gzip", "compression_opts": 1, "shuffle": True},
                              {"compression": "gzip", "compression_opts": 1, "shuffle": True})):
        sp = os.path.join(work, "read.slab")
        hp = os.path.join(work, "read.h5")
        with slabfs.File(sp, "w") as s, h5py.File(hp, "w") as h:
            sd = s.create_dataset("data", (n, n), "<f4", chunks=(256, 256), **slkw)
            hd = h.create_dataset("data", (n, n), "<f4", chunks=(256, 256), **h5kw)
            for r0 in range(0, n, 1024):
                b = field_block(r0, min(1024, n - r0), n)
                sd[r0:r0 + len(b)] = b
                hd[r0:r0 + len(b)] = b
        ts, th = [], []
        for _ in range(rounds):
            t0 = time.perf_counter()
            with slabfs.File(sp, "r") as s:
                a = s["data"][...]
            ts.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with h5py.File(hp, "r") as h:
                b = h["data"][...]
            th.append(time.perf_counter() - t0)
            assert np.array_equal(a, b)
            del a, b
        ratio = statistics.median(th) / statistics.median(ts)
        print(f"{name:<20} {spread(ts):>22} {spread(th):>22} {ratio:>7.2f}")
        os.remove(sp)
        os.remove(hp)


def appender(path, stop_at):
    """A writer: appends a row to /log and commits, every 50 ms."""
    with slabfs.File(path, "r+") as f:
        log = f["log"]
        k = log.shape[0]
        while time.time() < stop_at:
            log.resize((k + 1, 1024))
            log[k] = k
            f.flush()
            k += 1
            time.sleep(0.05)


def dask_bench(work, gib, workers, rounds):
    from dask.distributed import Client, LocalCluster

    rows = int(gib * 2**30 / (32768 * 4))
    path = os.path.join(work, "big.slab")
    print(f"\n## Dask mean over {rows}x32768 f4 ({rows * 32768 * 4 / 2**30:.2f} GiB; container chunks "
          f"256x256, Dask chunks 4096x4096), a writer appending and committing meanwhile")
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("data", (rows, 32768), "<f4", chunks=(256, 256))
        total = 0.0
        for r0 in range(0, rows, 512):
            b = field_block(r0, min(512, rows - r0), 32768)
            ds[r0:r0 + len(b)] = b
            total += float(b.astype(np.float64).sum())
        f.create_dataset("log", (0, 1024), "<u8", chunks=(16, 1024), maxshape=(None, 1024))
    expect = total / (rows * 32768)
    ctx = mp.get_context("spawn")
    print(f"{'scheduler':<28} {'workers':>7} {'s min/med/max':>22} {'GB/s':>6} {'vs 1 worker':>11}")
    for kind in ("processes", "distributed"):
        base = None
        for w in workers:
            ts = []
            for _ in range(rounds):
                writer = ctx.Process(target=appender, args=(path, time.time() + 3600))
                writer.start()
                try:
                    with slabfs.File(path, "r") as f:
                        x = da.from_array(f["data"], chunks=(4096, 4096))
                        if kind == "processes":
                            t0 = time.perf_counter()
                            m = x.mean(dtype=np.float64).compute(scheduler="processes", num_workers=w)
                            ts.append(time.perf_counter() - t0)
                        else:
                            with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                                              dashboard_address=None) as cluster, Client(cluster) as client:
                                client.run(lambda: None)  # workers up
                                t0 = time.perf_counter()
                                m = x.mean(dtype=np.float64).compute()
                                ts.append(time.perf_counter() - t0)
                    assert abs(m - expect) < 1e-9 * max(1.0, abs(expect)), (m, expect)
                finally:
                    writer.terminate()
                    writer.join()
            med = statistics.median(ts)
            base = base or med
            gbs = rows * 32768 * 4 / med / 1e9
            label = "multiprocessing scheduler" if kind == "processes" else "distributed LocalCluster"
            print(f"{label:<28} {w:>7} {spread(ts):>22} {gbs:>6.2f} {base / med:>11.2f}")
    with slabfs.File(path, "r") as f:
        print(f"# the writer appended {f['log'].shape[0]} rows meanwhile; every mean was exact")
    os.remove(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--dask-gib", type=float, default=4.0)
    ap.add_argument("--dask-rounds", type=int, default=2)
    ap.add_argument("--workers", default="1,2,4")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix="slabfs-pybench-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    print(f"# python_bench  machine: {machine()}")
    print(f"# slabfs {slabfs.version()}, h5py {h5py.__version__} (libhdf5 {h5py.version.hdf5_version}), "
          f"dask {dask.__version__}, numpy {np.__version__}")
    try:
        read_bench(work, a.n, a.rounds)
        if a.dask_gib > 0:
            dask_bench(work, a.dask_gib, [int(w) for w in a.workers.split(",")], a.dask_rounds)
    finally:
        if a.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
