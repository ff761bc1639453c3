#!/usr/bin/python3
"""Container bytes for many small files unpacked into a mount (issue 21, item 1).

    bench/small_files_bench.py [--tree small|source|both] [--bin build/bin] [--dir DIR]

Answers one question: how many container bytes does `tar x` of a tree of
small new files cost, against the files' own bytes? For each tree it makes
a tar (fixed seed), unpacks it into a fresh slabfs mount with the daemon's
default settings, and reads, while mounted, `du` of the tree (st_blocks, the
bytes stored) and the sum of `user.slab.stored`; after the unmount, the
container file's size. The target of the issue:

    container bytes <= 1.25 x the files' bytes + 4 KiB per file

Trees (both generated, no file holds the fill value throughout):

    small   400 files of 10 B to 6,000 B (log-uniform), in 20 directories
    source  4,650 files of 100 B to 14 KB (log-uniform, about 2.8 KB each,
            13 MB), in directories of 15 files three levels deep: the size
            of the issue's source tree

Run it against two builds to compare (--bin DIR holds `slab` and `slabfs`).
Mounts go through tests/integration/mounting.py, which always unmounts.

Figures (Intel Xeon, 2 cores, kernel 6.18, ext4; 26 November 2026), before
and after trimmed edge chunks (docs/format.md, "Chunks"):

    tree    files  file bytes     container   x files  target      ok
    small     400     385,723   420,470,520  1,090.08   2,120,553  no   (before)
    small     400     385,723       659,608      1.71   2,120,553  yes  (after)
    source  4,650  13,409,201 5,001,789,496    373.01  35,807,901  no   (before)
    source  4,650  13,409,201    16,195,768      1.21  35,807,901  yes  (after)
"""
import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
from bench_common import machine  # bench/, the script's own directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def file_system(path):
    cp = subprocess.run(["stat", "-f", "-c", "%T", path], capture_output=True, text=True)
    return cp.stdout.strip() or "?"


TREES = {
    # name: (files, smallest, largest, files per directory, seed)
    "small": (400, 10, 6000, 20, 2101),
    "source": (4650, 100, 14000, 15, 21),
}


def make_tree_tar(path, tree):
    """A tar of the named tree; returns (files, bytes)."""
    files, lo, hi, per_dir, seed = TREES[tree]
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(lo), np.log(hi), files)).astype(int)
    words = np.frombuffer(b"int main void return static const char struct if else for while ", "u1")
    total = 0
    with tempfile.TemporaryDirectory() as src:
        for i, n in enumerate(sizes):
            d = os.path.join(src, "tree", f"d{i // (per_dir * 20)}", f"e{(i // per_dir) % 20}")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, f"f{i}.c"), "wb") as f:
                f.write(rng.choice(words, int(n)).tobytes())
            total += int(n)
        with tarfile.open(path, "w") as t:
            t.add(os.path.join(src, "tree"), arcname="tree")
    return files, total


def tree_figures(top):
    """(files, du bytes, sum of user.slab.stored) under top, through the mount."""
    files = du = stored = 0
    for d, _, names in os.walk(top):
        for n in names:
            p = os.path.join(d, n)
            files += 1
            du += os.stat(p).st_blocks * 512
            stored += int(os.getxattr(p, "user.slab.stored"))
    return files, du, stored


def one_tree(tree, work, bindir):
    import mounting  # tests/integration; needs SLABFS_BIN set first
    tar_path = os.path.join(work, f"{tree}.tar")
    nfiles, nbytes = make_tree_tar(tar_path, tree)
    container = os.path.join(work, f"{tree}.slab")
    subprocess.run([os.path.join(bindir, "slab"), "create", container], check=True)
    with mounting.mounted(container) as m:
        t0 = time.perf_counter()
        subprocess.run(["tar", "xf", tar_path, "-C", str(m.path)], check=True)
        seconds = time.perf_counter() - t0
        # tar sets times and modes on each open file, before the close that
        # commits it; the kernel keeps those replies' st_blocks for the
        # attribute timeout (1 s).
        time.sleep(1.1)
        seen, du, stored = tree_figures(os.path.join(m.path, "tree"))
    assert seen == nfiles, (seen, nfiles)
    size = os.path.getsize(container)
    os.unlink(container)
    os.unlink(tar_path)
    target = 1.25 * nbytes + 4096 * nfiles
    return dict(tree=tree, files=nfiles, bytes=nbytes, container=size, du=du, stored=stored,
                target=target, seconds=seconds)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", choices=["small", "source", "both"], default="both")
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--dir", default=None, help="working directory (default: a temporary one)")
    a = ap.parse_args()
    os.environ["SLABFS_BIN"] = os.path.abspath(a.bin)
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    work = tempfile.mkdtemp(prefix="slabfs-small-files-", dir=a.dir)
    trees = ["small", "source"] if a.tree == "both" else [a.tree]
    try:
        print(f"# small_files_bench: {machine()}; container on {file_system(work)}; "
              f"binaries {os.path.abspath(a.bin)}")
        print(f"{'tree':<8}{'files':>7}{'file bytes':>12}{'container':>13}{'x files':>9}"
              f"{'du':>13}{'stored':>13}{'target':>13}{'ok':>4}{'tar x s':>9}")
        for tree in trees:
            r = one_tree(tree, work, a.bin)
            ok = "yes" if r["container"] <= r["target"] else "no"
            print(f"{r['tree']:<8}{r['files']:>7}{r['bytes']:>12}{r['container']:>13}"
                  f"{r['container'] / r['bytes']:>9.2f}{r['du']:>13}{r['stored']:>13}"
                  f"{int(r['target']):>13}{ok:>4}{r['seconds']:>9.2f}", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
