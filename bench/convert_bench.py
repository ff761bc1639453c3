#!/usr/bin/python3
"""Import and export throughput of `slab` next to h5repack, in one run.

    bench/convert_bench.py [--n 16384] [--chunk 256] [--rounds 3] [--dir DIR] [--bin build/bin]

For each pipeline (none, and shuffle + deflate level 1) it makes the same
n x n f4 field (256 x 256 chunks by default: 1 GiB at n = 16384) as an HDF5
file (h5py) and as a Zarr v2 store (python3-zarr), then runs, in
interleaved rounds:

    h5repack        HDF5 -> HDF5, the peer (libhdf5 copying its own format:
                    the stored chunks as they are, not decoded)
    h5repack re-encoding  the same, told the layout and filters the source
                    has, so that it reads and writes the elements as slab
                    does
    import h5       slab import new.slab src.h5 (chunks deflated as the
                    container stores them are copied as stored, after a
                    decode that checks them)
    import h5 recompress  the same with --recompress: every chunk decoded
                    and encoded again
    export h5       slab export imported.slab out.h5
    import zarr     slab import new.slab src.zarr
    export zarr2    slab export imported.slab out.zarr --format zarr2

and prints, per row, MB/s of element bytes (min/median/max over rounds),
the peak resident memory of the process (GNU time's %M), and the ratio of
slab's median time to h5repack's (above 1: slab is faster). Outputs are
removed after each run; the page cache is warm (every source was just
written or read), so this measures the copy, not the disk.
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
import zarr
from numcodecs import Shuffle, Zlib
from bench_common import machine  # bench/, the script's own directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def field_block(r0, rows, n):
    """Rows r0 .. r0+rows of the test field: smooth, rounded so that it
    compresses about as much as real measurements do."""
    i = np.arange(r0, r0 + rows, dtype=np.float64)[:, None]
    j = np.arange(n, dtype=np.float64)[None, :]
    return (np.round((np.sin(i / 100.0) + np.cos(j / 70.0)) * 1024) / 1024).astype("<f4")


def make_sources(d, n, chunk, pipeline):
    h5 = os.path.join(d, f"src-{pipeline}.h5")
    zs = os.path.join(d, f"src-{pipeline}.zarr")
    kw = {} if pipeline == "none" else {"compression": "gzip", "compression_opts": 1, "shuffle": True}
    zkw = ({"compressor": None} if pipeline == "none"
           else {"compressor": Zlib(level=1), "filters": [Shuffle(elementsize=4)]})
    with h5py.File(h5, "w") as f:
        ds = f.create_dataset("data", (n, n), "<f4", chunks=(chunk, chunk), **kw)
        z = zarr.open(zs, mode="w", shape=(n, n), chunks=(chunk, chunk), dtype="<f4", **zkw)
        for r0 in range(0, n, chunk * 4):
            rows = min(chunk * 4, n - r0)
            block = field_block(r0, rows, n)
            ds[r0:r0 + rows] = block
            z[r0:r0 + rows] = block
    return h5, zs


def timed(cmd):
    """(seconds, peak RSS in MiB) of one run of cmd."""
    t0 = time.perf_counter()
    cp = subprocess.run(["/usr/bin/time", "-f", "%M", *cmd], capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if cp.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({cp.returncode}):\n{cp.stderr}")
    rss_kb = int(cp.stderr.strip().splitlines()[-1])
    return elapsed, rss_kb / 1024.0


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=16384)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--dir", default=None, help="work directory (default: a temporary one under /var/tmp)")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--pipelines", default="none,shuffle+deflate1")
    a = ap.parse_args()
    slab = os.path.join(a.bin, "slab")
    work = a.dir or tempfile.mkdtemp(prefix="slabfs-convert-", dir="/var/tmp")
    os.makedirs(work, exist_ok=True)
    mb = a.n * a.n * 4 / 1e6
    print(f"# convert_bench  machine: {machine()}")
    print(f"# {a.n}x{a.n} f4 ({mb:.0f} MB of elements), chunks {a.chunk}x{a.chunk}, {a.rounds} rounds "
          f"interleaved, page cache warm, work dir {work}")
    print(f"# libhdf5 {h5py.version.hdf5_version} (h5py {h5py.__version__}), zarr {zarr.__version__}")
    try:
        for pipeline in a.pipelines.split(","):
            h5, zs = make_sources(work, a.n, a.chunk, pipeline)
            imported_h5 = os.path.join(work, "imported-h5.slab")
            imported_z = os.path.join(work, "imported-zarr.slab")
            subprocess.run([slab, "import", "-q", imported_h5, h5], check=True)
            subprocess.run([slab, "import", "-q", imported_z, zs], check=True)
            out = {
                "h5repack (peer)": lambda: ["h5repack", "-i", h5, "-o", os.path.join(work, "out.h5")],
                # Told the layout and filters (the ones the source has), h5repack
                # reads and writes every element as slab does instead of copying
                # the stored chunks.
                "h5repack re-encoding": lambda: ["h5repack", "-l", f"CHUNK={a.chunk}x{a.chunk}"]
                + (["-f", "SHUF", "-f", "GZIP=1"] if pipeline != "none" else [])
                + ["-i", h5, "-o", os.path.join(work, "out.h5")],
                "slab import h5": lambda: [slab, "import", "-q", os.path.join(work, "new.slab"), h5],
                # Every chunk decoded and encoded again (what slab import did
                # before it copied chunks that share the container's encoding).
                "slab import h5 recompress": lambda: [slab, "import", "-q", "--recompress",
                                                      os.path.join(work, "new.slab"), h5],
                "slab export h5": lambda: [slab, "export", "-q", imported_h5, os.path.join(work, "out.h5")],
                "slab import zarr": lambda: [slab, "import", "-q", os.path.join(work, "new.slab"), zs],
                "slab export zarr2": lambda: [slab, "export", "-q", imported_z,
                                              os.path.join(work, "out.zarr"), "--format", "zarr2"],
            }
            times = {k: [] for k in out}
            rss = {k: 0.0 for k in out}
            for _ in range(a.rounds):
                for name, cmd in out.items():
                    t, r = timed(cmd())
                    times[name].append(t)
                    rss[name] = max(rss[name], r)
                    for p in ("out.h5", "new.slab", "out.zarr"):
                        remove(os.path.join(work, p))
            peer = statistics.median(times["h5repack (peer)"])
            print(f"\n## {pipeline}: source {os.path.getsize(h5) / 1e6:.0f} MB as HDF5")
            print(f"{'copy':<20} {'MB/s min/med/max':>22} {'peak RSS MiB':>13} {'vs h5repack':>12}")
            for name in out:
                ts = times[name]
                rates = sorted(mb / t for t in ts)
                ratio = peer / statistics.median(ts)
                print(f"{name:<20} {rates[0]:>6.0f}/{statistics.median(rates):>6.0f}/{rates[-1]:>6.0f}"
                      f"       {rss[name]:>8.0f}    {ratio:>9.2f}")
            for p in (h5, zs, imported_h5, imported_z):
                remove(p)
        print("\n# MB/s: element bytes per second; vs h5repack: h5repack's median time / this row's "
              "(above 1: faster than libhdf5 copying its own format)")
    finally:
        if a.dir is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
