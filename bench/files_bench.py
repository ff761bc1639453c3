#!/usr/bin/python3
"""Many small files through the mount next to a plain directory, in one run.

    bench/files_bench.py [--files 4650] [--rounds 3] [--bin build/bin] [--modes default,bulk]
                         [--repo PATH] [--peer-bin OTHER/bin]

The workloads of issue 21 that a user meets when a mount is used as a
file system for ordinary files:

    tar x     unpack a tar of a generated source tree (--files files of
              100 B to 20 KB, log-uniform, about 2.8 KB each on average, in
              directories of about 15 files, three levels deep; fixed seed)
    git clone a local clone (--no-hardlinks) of --repo (default: this
              repository) into the directory
    rm -rf    remove the unpacked tree

each into a plain directory on the same disk (the peer) and into a fresh
slabfs mount per round and mode (`default`: the daemon's default settings;
`bulk`: -o bulk, where close does not wait for a commit), and through
bindfs over a plain directory on the same disk (`fuse`: a mature FUSE
file system that only passes every call through, the cost of FUSE's round
trips that any FUSE file system pays; mount_scripts/install_deps.sh
installs it). Rounds are interleaved (plain, fuse, default, bulk, plain,
...). It prints, per row,
seconds min/median/max over rounds, the ratio of the median to the plain
directory's and to bindfs's (above 1 is slower), and the container's bytes after the
unpack next to the files' bytes.

--peer-bin adds the modes again as `default@peer`, `bulk@peer`, run with
the daemon of another build (a previous commit's build/bin; the container
is made with --bin's slab) in the same
interleaved rounds, to compare two builds on one noisy machine.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
from bench_common import Mount, machine  # bench/, the script's own directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_tree_tar(path, files, seed=21):
    """A tar of a source-like tree; returns (files, bytes)."""
    rng = np.random.default_rng(seed)
    sizes = np.exp(rng.uniform(np.log(100), np.log(20000), files)).astype(int)
    words = np.frombuffer(b"int main void return static const char struct if else for while ", "u1")
    total = 0
    with tempfile.TemporaryDirectory() as src:
        for i, n in enumerate(sizes):
            d = os.path.join(src, "tree", f"d{i // 300}", f"e{(i // 15) % 20}")
            os.makedirs(d, exist_ok=True)
            body = rng.choice(words, int(n)).tobytes()
            with open(os.path.join(d, f"f{i}.c"), "wb") as f:
                f.write(body)
            total += int(n)
        with tarfile.open(path, "w") as t:
            t.add(os.path.join(src, "tree"), arcname="tree")
    return files, total


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run(*args, cwd=None):
    subprocess.run(args, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


class Bindfs:
    """bindfs DIR MOUNTPOINT (a FUSE passthrough); close() unmounts."""

    def __init__(self, under, mountpoint):
        if not shutil.which("bindfs"):
            sys.exit("files_bench: the fuse mode needs bindfs (mount_scripts/install_deps.sh installs it)")
        self.mountpoint = mountpoint
        run("bindfs", "-o", "multithreaded", under, mountpoint)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mountpoint], capture_output=True)


def one_round(mode, work, tar_path, repo, bindir, peer_bin=None):
    """Times of (tar x, git clone, rm -rf) and the container bytes."""
    daemon_dir = peer_bin if mode.endswith("@peer") else bindir
    target = os.path.join(work, f"target-{mode}")
    os.makedirs(target)
    mount = None
    container = None
    if mode == "fuse":
        under = os.path.join(work, "under-fuse")
        os.makedirs(under)
        mount = Bindfs(under, target)
    elif mode != "plain":
        container = os.path.join(work, f"{mode}.slab")
        run(os.path.join(bindir, "slab"), "create", container)
        mount = Mount(os.path.join(daemon_dir, "slabfs"), container, target,
                      ["bulk"] if mode.startswith("bulk") else [])
    try:
        t_tar = timed(lambda: run("tar", "xf", tar_path, "-C", target))
        t_git = timed(lambda: run("git", "clone", "-q", "--no-hardlinks", repo, os.path.join(target, "repo")))
        t_sync = timed(lambda: os.sync())
        if container:
            stored = os.path.getsize(container)
        else:
            stored = None
        t_rm = timed(lambda: run("rm", "-rf", os.path.join(target, "tree")))
    finally:
        if mount:
            mount.close()
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(os.path.join(work, "under-fuse"), ignore_errors=True)
    if container:
        os.unlink(container)
    return t_tar, t_git, t_rm, t_sync, stored


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--files", type=int, default=4650)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--modes", default="default,bulk")
    ap.add_argument("--repo", default=ROOT)
    ap.add_argument("--dir", default=None, help="working directory (default: a temporary one)")
    ap.add_argument("--peer-bin", default=None, help="another build's bin directory, run as MODE@peer")
    a = ap.parse_args()
    asked = [m for m in a.modes.split(",") if m and m not in ("plain", "fuse")]
    modes = ["plain", "fuse"] + asked
    if a.peer_bin:
        modes += [m + "@peer" for m in asked]
    work = tempfile.mkdtemp(prefix="slabfs-files-bench-", dir=a.dir)
    try:
        tar_path = os.path.join(work, "tree.tar")
        nfiles, nbytes = make_tree_tar(tar_path, a.files)
        commits = subprocess.run(["git", "-C", a.repo, "rev-list", "--count", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()
        print(f"# files_bench: {machine()}; tree of {nfiles} files, {nbytes} bytes; "
              f"git clone of {commits} commits; {a.rounds} rounds interleaved, modes {','.join(modes)}")
        results = {m: [] for m in modes}
        for _ in range(a.rounds):
            for m in modes:
                results[m].append(one_round(m, work, tar_path, a.repo, a.bin, a.peer_bin))
        names = ["tar x", "git clone", "rm -rf"]
        print(f"{'workload':<12}{'mode':<14}{'seconds min/med/max':<26}{'x plain':>8}{'x fuse':>8}  (medians)")
        for k, name in enumerate(names):
            base = statistics.median(r[k] for r in results["plain"])
            fuse = statistics.median(r[k] for r in results["fuse"])
            for m in modes:
                ts = [r[k] for r in results[m]]
                med = statistics.median(ts)
                ratio = med / base if base > 0 else float("nan")
                vs_fuse = med / fuse if fuse > 0 else float("nan")
                print(f"{name:<12}{m:<14}{min(ts):.3f}/{med:.3f}/{max(ts):<12.3f}{ratio:>7.1f}x{vs_fuse:>7.1f}x")
        for m in modes:
            if m in ("plain", "fuse"):
                continue
            stored = statistics.median(r[4] for r in results[m])
            print(f"container after tar x + git clone ({m}): {stored} bytes "
                  f"({stored / max(nbytes, 1):.1f} x the tree's file bytes)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
