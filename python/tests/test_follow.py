"""Readers that follow a writer, from Python: one writer commits
continuously while reader processes refresh and check every commit they
see (each dataset holds the version the root attribute names, the stream
has one row per version); no reader ever gets an error, and the file stays
within a few copies of the live data however many commits there are.
SLABFS_FOLLOW_SECONDS sets the run's length (3 in CI)."""
import multiprocessing as mp
import os
import time

import numpy as np

import slabfs

SECONDS = float(os.environ.get("SLABFS_FOLLOW_SECONDS", "3"))
N = 96


def reader(path, until, out):
    """Refreshes and checks until `until`; puts (commits seen, error) on out."""
    seen, error = set(), None
    try:
        with slabfs.File(path, "r") as f:
            while time.time() < until and error is None:
                f.refresh()
                v = int(f.attrs["version"])
                for name in ("dense", "filtered"):
                    a = f[name][...]
                    if not (a == v).all():
                        error = f"{name} holds {np.unique(a)[:4]} at version {v}"
                s = f["sparse"][...]
                want = np.zeros((N, N), "<u4")
                want[v % N] = v
                if error is None and not np.array_equal(s, want):
                    error = f"sparse is wrong at version {v}"
                st = f["stream"]
                if error is None and st.shape != (v, 8):
                    error = f"stream has shape {st.shape} at version {v}"
                if error is None and v > 0 and not (st[v - 1] == v - 1).all():
                    error = f"stream row {v - 1} is wrong"
                seen.add(v)
    except Exception as e:  # noqa: BLE001 - reported to the parent
        error = f"{type(e).__name__}: {e}"
    out.put((len(seen), error))


def test_reader_processes_follow_a_committing_writer(path):
    with slabfs.File(path, "w") as w:
        w.create_dataset("dense", (N, N), "<u4", chunks=(32, 32))
        w.create_dataset("filtered", (N, N), "<u4", chunks=(32, 32), compression="gzip",
                         compression_opts=1, shuffle=True, fletcher32=True)
        w.create_dataset("sparse", (N, N), "<u4", chunks=(32, 32), sparse=True)
        w.create_dataset("stream", (0, 8), "<u4", chunks=(16, 8), maxshape=(None, 8))
        w.attrs["version"] = 0
        w.flush()
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        until = time.time() + SECONDS + 3  # spawning takes a moment
        procs = [ctx.Process(target=reader, args=(path, until, out)) for _ in range(4)]
        for p in procs:
            p.start()
        v, largest = 0, 0
        while time.time() < until - 0.5:
            v += 1
            w["dense"][...] = v
            w["filtered"][...] = v
            w["sparse"].erase(np.s_[...])
            w["sparse"][v % N] = v
            w["stream"].resize((v, 8))
            w["stream"][v - 1] = v - 1
            w.attrs["version"] = v
            w.flush()
            largest = max(largest, os.path.getsize(path))
        results = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        # The readers are gone: nothing stays held, rewrites reuse space.
        w["dense"][...] = 0
        w.flush()
        assert w.space()["held_bytes"] == 0
        settled = os.path.getsize(path)
        for k in range(30):
            w["dense"][...] = k
            w["filtered"][...] = k
            w.flush()
        # Within one copy of what a commit rewrites (where the free space
        # left at `settled` lies can put a new copy past its end once); a
        # leak would be that times the 30 commits.
        assert os.path.getsize(path) <= settled + N * N * 4
    errors = [e for _, e in results if e]
    assert not errors, errors
    assert all(n >= 3 for n, _ in results), results
    assert v > 10
    # Readers pin the commits they read, a few each: bounded by some copies
    # of the live data (a leak would grow with the number of commits).
    live = 3 * N * N * 4 + v * 8 * 4
    assert largest < 32 * live + (1 << 20), (v, largest)
