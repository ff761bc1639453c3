#!/usr/bin/python3
"""What one tiny new file costs through the mount (issue 21: "one tiny file
created and closed", "container bytes for a 6-byte new file").

    bench/tiny_file_bench.py [--files 200] [--rounds 3] [--bin build/bin] [--dir DIR]

Each round creates --files files of 6 bytes (open O_CREAT, write, close:
the close commits) in a fresh container through a mount with the default
settings, and the same files in a plain directory on the same disk with
the durability the close gives (fdatasync of the file, fsync of the
directory); rounds are interleaved. It prints milliseconds per file
(min/median/max over the rounds' medians) for both and their ratio, and,
from one more mount run under `strace -f -c` (strace's own slowness kept
out of the timings), the daemon's pwrite and fdatasync calls per file
(those of a mount with no files, its open and unmount, taken off), and the
container's bytes per file.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from bench_common import Mount, machine  # bench/, the script's own directory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAYLOAD = b"hello\n"


def make_files(d, n, durable_like_close):
    times = []
    for i in range(n):
        p = os.path.join(d, f"t{i:05d}")
        t0 = time.perf_counter()
        fd = os.open(p, os.O_CREAT | os.O_WRONLY | os.O_TRUNC, 0o644)
        os.write(fd, PAYLOAD)
        if durable_like_close:
            os.fdatasync(fd)
        os.close(fd)
        if durable_like_close:
            dfd = os.open(d, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times) if times else 0.0


def syscalls(slab, slabfs, work, n):
    """pwrite/fdatasync counts of a daemon run that makes n files."""
    container = os.path.join(work, f"s{n}.slab")
    mnt = os.path.join(work, f"smnt{n}")
    out = os.path.join(work, f"strace{n}.txt")
    os.makedirs(mnt)
    subprocess.run([slab, "create", container], check=True)

    class Traced(Mount):
        def __init__(self):
            self.mountpoint = mnt
            self.proc = subprocess.Popen(
                ["strace", "-f", "-c", "-o", out, "-e", "trace=pwrite64,pwritev,pwritev2,write,fdatasync,fsync",
                 slabfs, container, mnt, "-f"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            for _ in range(600):
                if os.path.ismount(mnt):
                    return
                time.sleep(0.05)
            raise RuntimeError("slabfs did not mount under strace")

    with Traced():
        make_files(mnt, n, False)
    counts = {}
    with open(out) as f:
        for line in f:
            m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
            if m:
                counts[m.group(2)] = int(m.group(1))
    return counts, os.path.getsize(container)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    ap.add_argument("--dir", default=tempfile.gettempdir())
    a = ap.parse_args()
    slabfs = os.path.join(a.bin, "slabfs")
    slab = os.path.join(a.bin, "slab")
    work = tempfile.mkdtemp(prefix="tiny-file-", dir=a.dir)
    try:
        print(f"# tiny_file_bench: {machine()}; {a.files} files of {len(PAYLOAD)} bytes per round, "
              f"{a.rounds} rounds")
        mount_ms, plain_ms = [], []
        for r in range(a.rounds):
            plain = os.path.join(work, f"plain{r}")
            os.makedirs(plain)
            plain_ms.append(make_files(plain, a.files, True))
            container = os.path.join(work, f"c{r}.slab")
            mnt = os.path.join(work, f"mnt{r}")
            os.makedirs(mnt)
            subprocess.run([slab, "create", container], check=True)
            with Mount(slabfs, container, mnt, []):
                mount_ms.append(make_files(mnt, a.files, False))

        def row(name, xs):
            print(f"{name:28} {min(xs):8.3f} {statistics.median(xs):8.3f} {max(xs):8.3f} ms per file")

        row("mount (close commits)", mount_ms)
        row("plain (fdatasync + dir fsync)", plain_ms)
        print(f"ratio mount/plain (medians): {statistics.median(mount_ms) / statistics.median(plain_ms):.2f}x")
        if shutil.which("strace"):
            base, base_bytes = syscalls(slab, slabfs, work, 0)
            many, many_bytes = syscalls(slab, slabfs, work, a.files)
            for call in ("pwrite64", "pwritev", "write", "fdatasync", "fsync"):
                d = many.get(call, 0) - base.get(call, 0)
                if d or call in ("pwrite64", "fdatasync"):
                    print(f"daemon {call:10} per file: {d / a.files:6.2f}")
            print(f"container bytes per file: {(many_bytes - base_bytes) / a.files:,.0f} "
                  f"(file {len(PAYLOAD)} bytes)")
        else:
            print("# strace is missing: no syscall counts")
    finally:
        for d in os.listdir(work):
            p = os.path.join(work, d)
            if os.path.ismount(p):
                subprocess.run(["fusermount3", "-u", p], capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
