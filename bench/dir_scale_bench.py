#!/usr/bin/python3
"""Does a file operation cost the same in a big directory as in a small one?

    bench/dir_scale_bench.py [--sizes 1000,10000,99000] [--ops 200] [--bin build/bin]

One directory grows to each size in turn (files of 100 bytes, filled
through a `-o bulk` mount), in a container and in a plain directory on the
same disk. At each size, through a mount with the default settings (close
commits), it times --ops single operations of each kind, interleaved with
the same operation on the plain directory:

    create   open(O_CREAT), write 100 bytes, close (one commit)
    lookup   lstat of an entry not looked up before
    rename   rename of an entry within the directory (one commit)
    remove   unlink of an entry (one commit)
    readdir  listing the whole directory, per entry

and prints milliseconds min/median/max, the median's ratio to the same
operation at the first size (flat is 1.0) and to the plain directory.
"""
import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

from bench_common import Mount, machine  # bench/, the script's own directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAYLOAD = b"x" * 100


def create(path):
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, PAYLOAD)
    os.close(fd)


def plain_create(path):
    # As durable as a close through the mount: the file and its name.
    fd = os.open(path, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
    os.write(fd, PAYLOAD)
    os.fdatasync(fd)
    os.close(fd)
    dfd = os.open(os.path.dirname(path), os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


def fsync_dir(d):
    dfd = os.open(d, os.O_RDONLY)
    os.fsync(dfd)
    os.close(dfd)


def ms(fn):
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


def row(name, size, xs, first, peer):
    med = statistics.median(xs)
    print(f"{name:8} {size:>8} {min(xs):8.3f} {med:8.3f} {max(xs):8.3f}   {med / first:5.2f}x   "
          f"{med / peer:6.2f}x", flush=True)


def main():
    ap = argparse.ArgumentParser()
    # A group holds at most 100,000 entries; the creates of the last size
    # need room.
    ap.add_argument("--sizes", default="1000,10000,99000")
    ap.add_argument("--ops", type=int, default=200)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()
    sizes = [int(x) for x in a.sizes.split(",")]
    slabfs = os.path.join(a.bin, "slabfs")
    slab = os.path.join(a.bin, "slab")
    work = tempfile.mkdtemp(prefix="dir-scale-", dir=a.dir)
    try:
        container = os.path.join(work, "c.slab")
        mnt = os.path.join(work, "mnt")
        plain = os.path.join(work, "plain", "big")
        os.makedirs(mnt)
        os.makedirs(plain)
        os.spawnv(os.P_WAIT, slab, [slab, "create", container])
        print(f"# dir_scale_bench: {machine()}; {a.ops} ops per row; ms min median max, "
              f"x the first size, x a plain directory")
        print(f"{'op':8} {'entries':>8} {'min':>8} {'median':>8} {'max':>8}   {'flat':>6}   {'plain':>7}")
        rng = random.Random(5)
        n = 0  # files f0000000 ... filled so far
        made = 0  # names n0000000 ... the create rows used (each removed again)
        first = {}
        for size in sizes:
            with Mount(slabfs, container, mnt, ["bulk"]):
                big = os.path.join(mnt, "big")
                os.makedirs(big, exist_ok=True)
                while n < size:
                    name = f"f{n:07d}"
                    create(os.path.join(big, name))
                    with open(os.path.join(plain, name), "wb") as f:
                        f.write(PAYLOAD)
                    n += 1
            fsync_dir(plain)
            with Mount(slabfs, container, mnt, []):
                big = os.path.join(mnt, "big")
                t = {k: [] for k in ("create", "lookup", "rename", "remove", "readdir")}
                p = {k: [] for k in t}
                looked = set()
                for k in range(a.ops):
                    name = f"n{made:07d}"
                    made += 1
                    t["create"].append(ms(lambda: create(os.path.join(big, name))))
                    p["create"].append(ms(lambda: plain_create(os.path.join(plain, name))))
                    while True:
                        victim = f"f{rng.randrange(size):07d}"
                        if victim not in looked:
                            break
                    looked.add(victim)
                    t["lookup"].append(ms(lambda: os.lstat(os.path.join(big, victim))))
                    p["lookup"].append(ms(lambda: os.lstat(os.path.join(plain, victim))))
                    t["rename"].append(ms(lambda: os.rename(os.path.join(big, victim), os.path.join(big, victim + "r"))))
                    p["rename"].append(ms(lambda: (os.rename(os.path.join(plain, victim), os.path.join(plain, victim + "r")),
                                                   fsync_dir(plain))))
                    os.rename(os.path.join(big, victim + "r"), os.path.join(big, victim))
                    os.rename(os.path.join(plain, victim + "r"), os.path.join(plain, victim))
                    t["remove"].append(ms(lambda: os.unlink(os.path.join(big, name))))
                    p["remove"].append(ms(lambda: (os.unlink(os.path.join(plain, name)), fsync_dir(plain))))
                for _ in range(3):
                    entries = len(os.listdir(big))
                    t["readdir"].append(ms(lambda: os.listdir(big)) / entries)
                    p["readdir"].append(ms(lambda: os.listdir(plain)) / entries)
            for k in t:
                med = statistics.median(t[k])
                first.setdefault(k, med)
                row(k, size, t[k], first[k], statistics.median(p[k]))
        print(f"# container {os.path.getsize(container) / 1048576:.1f} MiB for {n} files")
    finally:
        if os.path.ismount(mnt):
            os.system(f"fusermount3 -u {mnt}")
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
