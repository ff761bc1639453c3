"""The GIL is released while the engine reads and writes: another Python
thread keeps running during a long read, and threads read at once."""
import sys
import threading
import time

import numpy as np

import slabfs
from slabfs import _slabfs


def make(path):
    rng = np.random.default_rng(0)
    data = rng.random((2048, 2048), dtype=np.float32)    # 16 MiB, barely compressible: slow to inflate
    with slabfs.File(path, "w") as f:
        f.create_dataset("x", data=data, chunks=(256, 256), compression="gzip", compression_opts=1,
                         shuffle=True)
    return data


def test_engine_calls_run_without_the_gil(path):
    make(path)
    with slabfs.File(path, "r+") as f:
        ds = f["x"]
        ds[0:10, 0:10]
        assert _slabfs._io_gil_state() == 0
        ds[0, 0] = 1
        assert _slabfs._io_gil_state() == 0


def _spinner_share(ds):
    """The share of a whole-dataset read during which another Python thread
    ran, relative to its pace while this thread sleeps."""
    counter = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            counter[0] += 1

    t = threading.Thread(target=spin)
    t.start()
    try:
        time.sleep(0.02)
        c0, t0 = counter[0], time.perf_counter()
        time.sleep(0.1)
        rate = (counter[0] - c0) / (time.perf_counter() - t0)
        c0, t0 = counter[0], time.perf_counter()
        got = ds[...]
        elapsed = time.perf_counter() - t0
        during = counter[0] - c0
    finally:
        stop.set()
        t.join()
    assert elapsed > 0.02, "the read was too fast to tell"
    return got, during / (rate * elapsed), elapsed


def test_another_thread_runs_during_a_read(path):
    data = make(path)
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    shares = []
    try:
        # cache_bytes too small to keep chunks: every read inflates them all.
        with slabfs.File(path, "r", cache_bytes=1 << 20) as f:
            for _ in range(3):   # other load on the machine can slow the spinner: best of three
                got, share, elapsed = _spinner_share(f["x"])
                np.testing.assert_array_equal(got, data)
                shares.append(f"{share:.0%} of {elapsed * 1000:.0f} ms")
                # Holding the GIL, the spinner would run a switch interval or
                # two (about 1 ms each) of the read; released, through it.
                if share > 0.1:
                    return
    finally:
        sys.setswitchinterval(old)
    raise AssertionError(f"another thread hardly ran during reads: {shares}")


def test_threads_read_at_once(path):
    data = make(path)
    with slabfs.File(path, "r") as f:
        ds = f["x"]
        out = {}

        def read(i):
            out[i] = ds[i * 512:(i + 1) * 512]

        threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(4):
            np.testing.assert_array_equal(out[i], data[i * 512:(i + 1) * 512])
