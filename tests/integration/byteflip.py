"""Byte-flip campaign: containers with random bytes changed, read by `slab`.

A container with dense, filtered (deflate + checksum) and sparse datasets,
nested groups and attributes is damaged N times (1 to 8 random bytes
flipped, or a run of bytes overwritten; half the time anywhere, half the
time in the metadata: every byte that is no chunk), and each damaged copy
is listed (`slab ls -r -l`), described (`slab info --json`) and exported.
Each outcome is one of:

  same        every dataset exports its original bytes
  error       a clean refusal: exit 1 with one line naming what is wrong
  wrong data  a dataset exports other bytes without an error
  crash       a signal, a sanitizer report, "terminate called"
  hang        no answer within the time limit

Every Nth copy (--mount-every, default 10) is also mounted read-only and
every dataset read through the mount: the daemon refuses to mount with a
message, or serves every file (EIO for a damaged chunk), and exits 0 at
the unmount; it never dies.

Crashes and hangs must be 0; wrong data must be 0 for the checksummed
dataset. (Unchecksummed chunk bytes may change undetected: that is what the
checksum filter is for.) Run by test_byteflip.py with a short setting;
standalone:

    SLABFS_BIN=build/bin /usr/bin/python3 tests/integration/byteflip.py --files 2000
"""
import argparse
import errno
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

TIMEOUT = 20


def slab(bin_dir, *args, check=True):
    cp = subprocess.run([os.path.join(bin_dir, "slab"), *map(str, args)], capture_output=True, text=True,
                        timeout=TIMEOUT)
    if check and cp.returncode != 0:
        raise RuntimeError(f"slab {args}: {cp.stderr}")
    return cp


def make_container(bin_dir, path, work):
    slab(bin_dir, "create", path)
    rng = np.random.default_rng(5)
    dense = rng.integers(0, 1 << 30, (64, 96), dtype="<u4")
    smooth = (np.sin(np.arange(128 * 64) / 30.0) * 1000).astype("<f4").reshape(128, 64)
    for name, arr, extra in (("/a/dense", dense, ["--chunks", "16,32"]),
                             ("/a/b/filtered", smooth, ["--chunks", "32,32", "--filters",
                                                        "shuffle,deflate=6,checksum"])):
        np.save(os.path.join(work, "x.npy"), arr)
        slab(bin_dir, "mkdset", "-p", path, name, "--dtype", arr.dtype.str[1:],
             "--shape", ",".join(map(str, arr.shape)), *extra)
        slab(bin_dir, "import", path, name, os.path.join(work, "x.npy"))
    slab(bin_dir, "mkdset", "-p", path, "/s/sparse", "--dtype", "u2", "--shape", "8,100,100", "--chunks",
         "1,50,50", "--sparse", "--fill", "3")
    slab(bin_dir, "mkdset", "-p", path, "/grow", "--dtype", "u1", "--shape", "0,64", "--maxshape", "unlimited,64",
         "--chunks", "4,64", "--index", "btree")
    slab(bin_dir, "attr", path, "/a/dense", "units", "counts")
    slab(bin_dir, "attr", path, "/a", "note", "a group attribute")
    return ["/a/dense", "/a/b/filtered", "/s/sparse", "/grow"]


def exports(bin_dir, path, datasets, work):
    out = {}
    for d in datasets:
        dest = os.path.join(work, "out.bin")
        cp = subprocess.run([os.path.join(bin_dir, "slab"), "export", path, d, dest], capture_output=True,
                            text=True, timeout=TIMEOUT)
        out[d] = (cp, open(dest, "rb").read() if cp.returncode == 0 else None)
        if os.path.exists(dest):
            os.unlink(dest)
    return out


CRASH_WORDS = ("terminate called", "Aborted", "Segmentation", "AddressSanitizer", "runtime error",
               "Assertion", "core dumped")


def crashed(cp):
    return cp.returncode < 0 or any(w in cp.stderr for w in CRASH_WORDS)


def clean_error(cp):
    err = cp.stderr.strip()
    return cp.returncode == 1 and err.startswith("slab") and len(err.splitlines()) == 1


def through_mount(bin_dir, victim, datasets, want, mnt):
    """Mounts a damaged copy read-only (-f, so the daemon is our child) and
    reads everything. Returns (outcome, problem or None)."""
    proc = subprocess.Popen([os.path.join(bin_dir, "slabfs"), victim, mnt, "-f", "-o", "ro,log_level=off"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(400):
            if os.path.ismount(mnt) or proc.poll() is not None:
                break
            time.sleep(0.01)
        if proc.poll() is not None:
            err = proc.stderr.read()
            if proc.returncode < 0 or any(w in err for w in CRASH_WORDS):
                return "crash", f"slabfs at mount: {proc.returncode} {err[-300:]}"
            return "error", None  # refused to mount, with a message
        outcome = "same"
        for root, dirs, files in os.walk(mnt):
            pass
        for d in datasets:
            try:
                got = open(mnt + d, "rb").read()
            except OSError as e:
                if e.errno == errno.ENOTCONN:
                    return "crash", f"the daemon died reading {d}"
                outcome = "error" if outcome == "same" else outcome
                continue
            if got != want[d]:
                outcome = "wrong data"
        subprocess.run(["fusermount3", "-u", mnt], capture_output=True, timeout=TIMEOUT)
        rc = proc.wait(timeout=TIMEOUT)
        if rc != 0:
            return "crash", f"slabfs exited {rc}: {proc.stderr.read()[-300:]}"
        return outcome, None
    except subprocess.TimeoutExpired:
        return "hang", "the mount hung"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if os.path.ismount(mnt):
            subprocess.run(["umount", "-l", mnt], capture_output=True)


def campaign(bin_dir, files, seed, mount_every=0):
    """mount_every: also read every such copy through a read-only mount."""
    work = tempfile.mkdtemp(prefix="slabfs-byteflip-")
    counts = {"same": 0, "error": 0, "wrong data": 0, "crash": 0, "hang": 0}
    mounts = dict(counts)
    fsck_counts = {"clean": 0, "leaks": 0, "damaged": 0, "crash": 0, "hang": 0}
    wrong_checksummed = []
    wrong_after_metadata = []  # wrong data though every damaged byte was metadata
    problems = []
    try:
        orig = os.path.join(work, "orig.slab")
        datasets = make_container(bin_dir, orig, work)
        want = {d: r[1] for d, r in exports(bin_dir, orig, datasets, work).items()}
        image = open(orig, "rb").read()
        # Where the metadata is: every byte that is no dataset's chunk (the
        # superblocks, object blocks, index nodes, the free list). Half the
        # damage goes there, since chunk bytes are most of the file.
        in_chunk = bytearray(len(image))
        for d in datasets:
            for c in json.loads(slab(bin_dir, "chunks", "--json", orig, d).stdout):
                in_chunk[c["offset"]:c["offset"] + c["bytes"]] = b"\x01" * c["bytes"]
        meta = [i for i, v in enumerate(in_chunk) if not v]
        rng = random.Random(seed)
        victim = os.path.join(work, "v.slab")
        for i in range(files):
            data = bytearray(image)
            where = (lambda: rng.choice(meta)) if rng.random() < 0.5 else (lambda: rng.randrange(len(data)))
            if rng.random() < 0.8:
                for _ in range(rng.randint(1, 8)):
                    data[where()] ^= 1 << rng.randrange(8)
            else:
                at = where()
                n = rng.randint(1, 64)
                data[at:at + n] = bytes(rng.randrange(256) for _ in range(min(n, len(data) - at)))
            with open(victim, "wb") as f:
                f.write(data)
            changed = [k for k in range(len(data)) if data[k] != image[k]] if len(data) == len(image) else []
            meta_only = bool(changed) and all(not in_chunk[k] for k in changed)
            outcome = "same"
            try:
                for args in (["ls", "-r", "-l", victim, "/"], *[["info", "--json", victim, d] for d in datasets]):
                    cp = slab(bin_dir, *args, check=False)
                    if crashed(cp):
                        outcome = "crash"
                        problems.append(f"file {i}: slab {args[0]}: {cp.returncode} {cp.stderr[-300:]}")
                        break
                    if cp.returncode != 0:
                        outcome = "error"
                        if not clean_error(cp):
                            problems.append(f"file {i}: slab {args[0]} unclear error: {cp.stderr[-300:]}")
                if outcome != "crash":
                    for d, (cp, got) in exports(bin_dir, victim, datasets, work).items():
                        if crashed(cp):
                            outcome = "crash"
                            problems.append(f"file {i}: slab export {d}: {cp.returncode} {cp.stderr[-300:]}")
                            break
                        if cp.returncode != 0:
                            if outcome == "same":
                                outcome = "error"
                            if not clean_error(cp):
                                problems.append(f"file {i}: export {d} unclear error: {cp.stderr[-300:]}")
                        elif got != want[d]:
                            if outcome in ("same", "error"):
                                outcome = "wrong data"
                            if "filtered" in d:
                                wrong_checksummed.append(i)
            except subprocess.TimeoutExpired:
                outcome = "hang"
                problems.append(f"file {i}: hang")
            # slab fsck on the same copy: never a crash or a hang, and it
            # must find the damage whenever a read refused the file.
            try:
                fk = slab(bin_dir, "fsck", "--json", victim, check=False)
                if crashed(fk) or fk.returncode not in (0, 3, 4):
                    fsck_counts["crash"] += 1
                    problems.append(f"file {i}: slab fsck: {fk.returncode} {fk.stderr[-300:]}")
                else:
                    fsck_counts[{0: "clean", 3: "leaks", 4: "damaged"}[fk.returncode]] += 1
                    if outcome == "error" and fk.returncode != 4:
                        problems.append(f"file {i}: reads refused the file but slab fsck exited "
                                        f"{fk.returncode}: {fk.stdout[-600:]}")
            except subprocess.TimeoutExpired:
                fsck_counts["hang"] += 1
                problems.append(f"file {i}: slab fsck hangs")
            if mount_every and i % mount_every == 0 and outcome != "crash":
                mnt = os.path.join(work, "mnt")
                os.makedirs(mnt, exist_ok=True)
                m_outcome, problem = through_mount(bin_dir, victim, datasets, want, mnt)
                mounts[m_outcome] += 1
                if problem:
                    problems.append(f"file {i} (mount): {problem}")
                if m_outcome == "wrong data" and meta_only:
                    wrong_after_metadata.append(i)
            if outcome == "wrong data" and meta_only:
                wrong_after_metadata.append(i)
            counts[outcome] += 1
            if outcome in ("crash", "hang"):
                shutil.copy(victim, os.path.join(tempfile.gettempdir(), f"slabfs-byteflip-{seed}-{i}.slab"))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if wrong_after_metadata:
        problems.append(f"wrong data after damage to metadata for files {wrong_after_metadata[:10]}")
    if wrong_checksummed:
        problems.append(f"wrong data in the checksummed dataset for files {wrong_checksummed[:10]}")
    counts["mounted"] = mounts
    counts["fsck"] = fsck_counts
    return counts, problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mount-every", type=int, default=10, help="read every Nth copy through a mount too (0: never)")
    args = ap.parse_args()
    bin_dir = os.environ.get("SLABFS_BIN", os.path.join(os.path.dirname(__file__), "..", "..", "build", "bin"))
    counts, problems = campaign(bin_dir, args.files, args.seed, args.mount_every)
    mounted = counts.pop("mounted")
    print(f"seed {args.seed}, {args.files} damaged containers: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"  of them {sum(mounted.values())} also through a read-only mount: "
          + ", ".join(f"{k} {v}" for k, v in mounted.items()))
    for p in problems[:30]:
        print("  " + p)
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
