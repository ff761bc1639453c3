"""kill -9 loop: the daemon is SIGKILLed at random moments while a writer
makes verifiable, fsync'd changes through a read-write mount; after every
kill the container must open (`slab ls -r`, `slab info`), every write whose
fsync returned must be in it (a write in flight at the kill is there whole
or not at all), and it must mount again. The writes: in place into dense,
filtered and sparse datasets, appends to a stream, small new files made
and appended to through the mount (stored trimmed: each stores exactly its
bytes), mkdir and setfattr. Also SIGKILL of `slab import`, `slab repack`
and `slab resize` part way.

Run by test_kill9.py with a short setting in CI; a soak:

    SLABFS_BIN=build/bin /usr/bin/python3 tests/integration/kill9.py --kills 1000

Prints one line per 50 kills and a summary: kills, containers that did not
open, fsync'd writes lost, writes seen torn.
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from mounting import is_mounted  # noqa: E402

ROW = 4096  # bytes in a row of the stream
# name -> (dtype, shape, chunks, extra mkdset arguments)
DATASETS = {
    "/dense": ("u4", (512, 512), (64, 64), []),
    "/g/filtered": ("u4", (256, 512), (32, 64), ["--filters", "shuffle,deflate=1,checksum"]),
    "/sparse": ("u4", (512, 512), (64, 64), ["--sparse"]),
}
MAX_WRITE = 64 * 1024  # one FUSE request: a write is all in a commit or not


class Bin:
    def __init__(self, path):
        self.slab = os.path.join(path, "slab")
        self.slabfs = os.path.join(path, "slabfs")

    def run(self, *args, check=True, timeout=120):
        cp = subprocess.run([self.slab, *map(str, args)], capture_output=True, text=True, timeout=timeout)
        if check and cp.returncode != 0:
            raise RuntimeError(f"slab {' '.join(map(str, args))}: exit {cp.returncode}: {cp.stderr.strip()}")
        return cp


def export(b, c, path, out):
    b.run("export", c, path, out)
    with open(out, "rb") as f:
        return f.read()


class Model:
    """What each dataset must hold: bytes whose fsync returned, and the
    write in flight (old and new bytes) that may or may not have landed."""

    def __init__(self):
        self.image = {}
        for name, (dt, shape, _, _) in DATASETS.items():
            self.image[name] = bytearray(int(np.prod(shape)) * np.dtype(dt).itemsize)
        self.image["/stream"] = bytearray()
        self.in_flight = None  # (name, offset, old bytes, new bytes)
        self.names = set()     # groups made with mkdir whose dir fsync returned
        self.names_in_flight = None
        self.attrs = {}        # user.* set on /dense, fsync'd
        self.attr_in_flight = None
        self.files = {}        # small new files: name -> fsync'd bytes
        self.file_in_flight = None  # (name, old bytes or None for a new file, new bytes)
        self.files_touched = set()  # changed since the last check


class Writer(threading.Thread):
    """Writes through the mount until an error (the daemon died)."""

    def __init__(self, mnt, model, rng):
        super().__init__(daemon=True)
        self.mnt, self.model, self.rng = mnt, model, rng
        self.error = None
        self.ops = 0

    def write_at(self, name, off, data):
        m = self.model
        old = bytes(m.image[name][off:off + len(data)])
        m.in_flight = (name, off, old, data)
        fd = os.open(self.mnt + name, os.O_WRONLY)
        try:
            assert os.pwrite(fd, data, off) == len(data)
            os.fsync(fd)
        finally:
            os.close(fd)
        m.image[name][off:off + len(data)] = data
        m.in_flight = None

    def append(self, data):
        m = self.model
        off = len(m.image["/stream"])
        m.in_flight = ("/stream", off, b"", data)
        fd = os.open(self.mnt + "/stream", os.O_WRONLY | os.O_APPEND)
        try:
            assert os.write(fd, data) == len(data)
            os.fsync(fd)
        finally:
            os.close(fd)
        m.image["/stream"] += data
        m.in_flight = None

    def small_file(self):
        """A new file of up to 6,000 bytes (a 1-D u1 dataset whose chunk is
        stored trimmed), or a few bytes appended to one, then fsync."""
        m, r = self.model, self.rng
        if m.files and r.random() < 0.4:
            name = r.choice(sorted(m.files))
            data = r.randbytes(r.randint(1, 300))
            m.file_in_flight = (name, bytes(m.files[name]), data)
            fd = os.open(self.mnt + name, os.O_WRONLY | os.O_APPEND)
        else:
            name = f"/f{r.randrange(1 << 40)}"
            data = r.randbytes(r.randint(1, 6000))
            m.file_in_flight = (name, None, data)
            fd = os.open(self.mnt + name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            assert os.write(fd, data) == len(data)
            os.fsync(fd)
        finally:
            os.close(fd)
        m.files[name] = bytearray(m.files.get(name, b"")) + data
        m.files_touched.add(name)
        m.file_in_flight = None

    def step(self):
        r = self.rng
        kind = r.random()
        if kind < 0.6:
            name = r.choice(sorted(DATASETS))
            size = len(self.model.image[name])
            n = r.randrange(4, MAX_WRITE, 4)
            off = r.randrange(0, size - n, 4)
            self.write_at(name, off, r.randbytes(n))
        elif kind < 0.8:
            self.append(r.randbytes(ROW * r.randint(1, 8)))
        elif kind < 0.9:
            self.small_file()
        elif kind < 0.96:
            name = f"/grp{r.randrange(1 << 30)}"
            self.model.names_in_flight = name
            os.mkdir(self.mnt + name)
            fd = os.open(self.mnt, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            self.model.names.add(name)
            self.model.names_in_flight = None
        else:
            key, value = f"user.k{r.randrange(8)}", str(r.randrange(1 << 40)).encode()
            self.model.attr_in_flight = (key, value)
            os.setxattr(self.mnt + "/dense", key, value)  # committed before the reply
            self.model.attrs[key] = value
            self.model.attr_in_flight = None

    def run(self):
        try:
            while True:
                self.step()
                self.ops += 1
        except Exception as e:  # noqa: BLE001 -- the daemon died: any error ends the run
            self.error = e


def mount(b, c, mnt, log):
    proc = subprocess.Popen([b.slabfs, c, mnt, "-f", "-o", "commit_interval=1"], stdout=log,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while not os.path.ismount(mnt):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"slabfs did not mount (exit {proc.poll()})")
        time.sleep(0.01)
    return proc


def force_unmount(mnt):
    if is_mounted(mnt):
        subprocess.run(["fusermount3", "-u", "-z", mnt], capture_output=True)
    if is_mounted(mnt):
        subprocess.run(["umount", "-l", mnt], capture_output=True)


class Result:
    def __init__(self):
        self.kills = 0
        self.unreadable = 0
        self.lost = 0
        self.torn = 0
        self.ops = 0  # changes the writers made through the mount
        self.problems = []

    def problem(self, what):
        self.problems.append(what)


def verify(b, c, model, work, res):
    """After a kill: the container opens and holds what the model says.
    Where a write was in flight, the model takes what is there."""
    try:
        b.run("ls", "-r", c, "/")
        for name in list(DATASETS) + ["/stream"]:
            b.run("info", "--json", c, name)
    except RuntimeError as e:
        res.unreadable += 1
        res.problem(f"kill {res.kills}: container does not open: {e}")
        return False
    # slab fsck: a crash leaves no damage and no leaked space (what was
    # written after the last commit is free space or past its file end).
    fk = subprocess.run([b.slab, "fsck", "--json", c], capture_output=True, text=True, timeout=300)
    if fk.returncode != 0:
        res.unreadable += 1
        res.problem(f"kill {res.kills}: slab fsck exited {fk.returncode}: {fk.stdout[-800:]} {fk.stderr[-300:]}")
        return False
    for name in list(DATASETS) + ["/stream"]:
        got = export(b, c, name, os.path.join(work, "out.bin"))
        want = model.image[name]
        fl = model.in_flight if model.in_flight and model.in_flight[0] == name else None
        if fl:
            _, off, old, new = fl
            if name == "/stream":
                if got == bytes(want) + new:
                    model.image[name] += new
                elif got != bytes(want):
                    res.lost += 1
                    res.problem(f"kill {res.kills}: /stream is {len(got)} bytes, want {len(want)} "
                                f"or {len(want) + len(new)}")
                continue
            region = got[off:off + len(new)]
            if region == new:
                model.image[name][off:off + len(new)] = new
            elif region != old:
                res.torn += 1
                res.problem(f"kill {res.kills}: {name} [{off}, +{len(new)}) torn")
                model.image[name][off:off + len(new)] = region
            rest_ok = got[:off] == bytes(want[:off]) and got[off + len(new):] == bytes(want[off + len(new):])
            if not rest_ok or len(got) != len(want):
                res.lost += 1
                res.problem(f"kill {res.kills}: {name} lost fsync'd bytes")
                model.image[name][:] = got
        elif got != bytes(want):
            res.lost += 1
            res.problem(f"kill {res.kills}: {name} differs from its fsync'd writes")
            model.image[name][:] = got
    model.in_flight = None
    listing = [n.rstrip("/") for n in b.run("ls", c, "/").stdout.split()]
    for n in model.names:
        if n.lstrip("/") not in listing:
            res.lost += 1
            res.problem(f"kill {res.kills}: group {n} made and fsync'd is gone")
    if model.names_in_flight and model.names_in_flight.lstrip("/") in listing:
        model.names.add(model.names_in_flight)
    model.names_in_flight = None
    verify_files(b, c, model, work, res, listing)
    info = json.loads(b.run("info", "--json", c, "/dense").stdout)
    attrs = {k: v for k, v in info.get("attributes", {}).items()}
    for key, value in model.attrs.items():
        name = key[len("user."):]
        if str(attrs.get(name)) != value.decode():
            if model.attr_in_flight and model.attr_in_flight[0] == key:
                continue
            res.lost += 1
            res.problem(f"kill {res.kills}: attribute {key} lost")
    if model.attr_in_flight:
        key, value = model.attr_in_flight
        if str(attrs.get(key[len("user."):])) == value.decode():
            model.attrs[key] = value
        model.attr_in_flight = None
    return True


def verify_files(b, c, model, work, res, listing):
    """Small new files: the one in flight is absent, empty or whole (a new
    file), or holds its old or its new bytes (an append); those changed
    since the last check, and three others, hold their fsync'd bytes and
    store exactly them (user.slab.stored, from slab info)."""
    out = os.path.join(work, "file.bin")
    if model.file_in_flight:
        name, old, new = model.file_in_flight
        model.file_in_flight = None
        if name.lstrip("/") in listing:
            got = export(b, c, name, out)
            if old is None and got in (b"", new):
                model.files[name] = bytearray(got)
            elif old is not None and got in (old, old + new):
                model.files[name] = bytearray(got)
            else:
                res.torn += 1
                res.problem(f"kill {res.kills}: {name} is {len(got)} bytes, neither before nor after its write")
                model.files[name] = bytearray(got)
            model.files_touched.add(name)
        elif old is not None:
            res.lost += 1
            res.problem(f"kill {res.kills}: {name}, made and fsync'd, is gone")
            del model.files[name]
    others = sorted(set(model.files) - model.files_touched)
    sample = random.Random(res.kills).sample(others, min(3, len(others)))
    for name in sorted(model.files_touched) + sample:
        want = bytes(model.files[name])
        if name.lstrip("/") not in listing:
            res.lost += 1
            res.problem(f"kill {res.kills}: {name}, made and fsync'd, is gone")
            del model.files[name]
            continue
        got = export(b, c, name, out)
        if got != want:
            res.lost += 1
            res.problem(f"kill {res.kills}: {name} is {len(got)} bytes, its fsync'd writes {len(want)}")
            model.files[name] = bytearray(got)
        stored = json.loads(b.run("info", "--json", c, name).stdout)["stored_bytes"]
        if stored != len(got):
            res.problem(f"kill {res.kills}: {name} holds {len(got)} bytes and stores {stored}")
    model.files_touched.clear()


def make_container(b, c):
    b.run("create", c)
    for name, (dt, shape, chunks, extra) in DATASETS.items():
        b.run("mkdset", "-p", c, name, "--dtype", dt, "--shape", ",".join(map(str, shape)),
              "--chunks", ",".join(map(str, chunks)), *extra)
    b.run("mkdset", c, "/stream", "--dtype", "u1", "--shape", f"0,{ROW}", "--maxshape", f"unlimited,{ROW}",
          "--chunks", f"16,{ROW}")


def mount_loop(b, work, kills, rng, res, progress):
    c = os.path.join(work, "c.slab")
    mnt = os.path.join(work, "mnt")
    os.makedirs(mnt, exist_ok=True)
    make_container(b, c)
    model = Model()
    log = open(os.path.join(work, "daemon.log"), "ab")
    try:
        for _ in range(kills):
            proc = mount(b, c, mnt, log)
            writer = Writer(mnt, model, random.Random(rng.random()))
            writer.start()
            time.sleep(rng.uniform(0.02, 0.4))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            res.kills += 1
            force_unmount(mnt)
            writer.join(timeout=30)
            if writer.is_alive():
                res.problem(f"kill {res.kills}: the writer hung after the kill")
                break
            res.ops += writer.ops
            if not verify(b, c, model, work, res):
                break
            if progress and res.kills % 50 == 0:
                print(f"kills {res.kills}: unreadable {res.unreadable}, lost {res.lost}, torn {res.torn}",
                      flush=True)
        # It mounts again, and unmounts cleanly.
        proc = mount(b, c, mnt, log)
        subprocess.run(["fusermount3", "-u", mnt], check=True)
        if proc.wait(timeout=30) != 0:
            res.problem(f"the last clean mount exited {proc.returncode}")
    finally:
        force_unmount(mnt)
        log.close()


def tool_kills(b, work, rounds, rng, res):
    """SIGKILL of slab import, repack and resize part way: the container
    (and repack's destination, if it exists) opens, and holds the old or
    the new contents."""
    c = os.path.join(work, "t.slab")
    n = 1024
    old = np.arange(n * n, dtype="<u4").reshape(n, n)
    new = (old * 3 + 1).astype("<u4")
    raw_new = os.path.join(work, "new.bin")
    new.tofile(raw_new)
    for i in range(rounds):
        for path in (c, c + ".repacked"):
            if os.path.exists(path):
                os.unlink(path)
        b.run("create", c)
        b.run("mkdset", c, "/d", "--dtype", "u4", "--shape", f"{n},{n}", "--maxshape", f"unlimited,{n}",
              "--chunks", "64,64", "--filters", "shuffle,deflate=6")
        old.tofile(os.path.join(work, "old.bin"))
        b.run("import", c, "/d", os.path.join(work, "old.bin"))
        op = ["import", c, "/d", raw_new] if i % 3 == 0 else (
            ["repack", c, c + ".repacked", "--filters", "deflate=9"] if i % 3 == 1 else
            ["resize", c, "/d", f"{n // 2},{n}"])
        p = subprocess.Popen([b.slab, *op], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.0, 0.15))
        p.send_signal(signal.SIGKILL)
        p.wait()
        res.kills += 1
        try:
            got = np.frombuffer(export(b, c, "/d", os.path.join(work, "out.bin")), "<u4")
        except RuntimeError as e:
            res.unreadable += 1
            res.problem(f"slab {op[0]} killed: container does not open: {e}")
            continue
        if op[0] == "import":
            ok = np.array_equal(got, old.ravel()) or np.array_equal(got, new.ravel())
        elif op[0] == "resize":
            ok = np.array_equal(got, old.ravel()) or np.array_equal(got, old[: n // 2].ravel())
        else:
            ok = np.array_equal(got, old.ravel())
            if os.path.exists(c + ".repacked"):
                try:
                    rp = np.frombuffer(export(b, c + ".repacked", "/d", os.path.join(work, "out2.bin")), "<u4")
                    ok = ok and np.array_equal(rp, old.ravel())
                except RuntimeError as e:
                    res.unreadable += 1
                    res.problem(f"slab repack killed: the destination exists but does not open: {e}")
        if not ok:
            res.lost += 1
            res.problem(f"slab {op[0]} killed: contents are neither the old nor the new")


def run(bin_dir, kills, tool_rounds, seed, progress=False):
    b = Bin(bin_dir)
    rng = random.Random(seed)
    res = Result()
    work = tempfile.mkdtemp(prefix="slabfs-kill9-")
    try:
        mount_loop(b, work, kills, rng, res, progress)
        tool_kills(b, work, tool_rounds, rng, res)
    finally:
        force_unmount(os.path.join(work, "mnt"))
        shutil.rmtree(work, ignore_errors=True)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=1000, help="daemon kills (default 1000)")
    ap.add_argument("--tool-rounds", type=int, default=60, help="kills of slab import/repack/resize")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    args = ap.parse_args()
    bin_dir = os.environ.get("SLABFS_BIN", os.path.join(HERE, "..", "..", "build", "bin"))
    t0 = time.monotonic()
    res = run(bin_dir, args.kills, args.tool_rounds, args.seed, progress=True)
    print(f"seed {args.seed}: {res.kills} kills in {time.monotonic() - t0:.0f} s, {res.ops} fsync'd changes: "
          f"{res.unreadable} unreadable containers, {res.lost} lost fsync'd writes, {res.torn} torn writes")
    for p in res.problems[:20]:
        print("  " + p)
    sys.exit(1 if res.problems else 0)


if __name__ == "__main__":
    main()
