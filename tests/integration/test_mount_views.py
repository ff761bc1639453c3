"""Slice and typed views through a real mount (docs/mount.md, "Views"):
random numpy slices read and written against numpy on dense, filtered and
sparse datasets, `dd conv=notrunc` into a strided slice, `np.load` of
.npy views (also with mmap), the .txt view against np.loadtxt and awk,
sizes, listings, growth, and the refusals."""
import errno
import os
import random
import subprocess

import numpy as np
import pytest

from conftest import run, slab
from mounting import container, export, make_dataset, mounter  # noqa: F401


def random_slice(rng, shape):
    """A slice in the grammar of slabfs/slice.h and its numpy index."""
    items = []
    for n in shape:
        kind = rng.random()
        if kind < 0.2:
            i = rng.randrange(-n, n)
            items.append(str(i))
        else:
            def bound():
                r = rng.random()
                if r < 0.3:
                    return ""
                return str(rng.randrange(-n - 3, n + 3))
            start, stop = bound(), bound()
            step = rng.choice(["", "", "1", "2", "3", "5"])
            items.append(f"{start}:{stop}" + (f":{step}" if step else ""))
    if rng.random() < 0.15 and len(items) > 1:
        k = rng.randrange(len(items))
        items = items[:k] + ["..."] + items[k + 1:]
    text = ", ".join(items) if rng.random() < 0.5 else ",".join(items)
    return text


def numpy_index(text):
    """The numpy index for a slice text; an integer index keeps its
    dimension (as slabfs does), which changes no byte."""
    parts = []
    for item in text.split(","):
        item = item.strip()
        if item == "...":
            parts.append(Ellipsis)
        elif ":" in item:
            a = [int(x) if x.strip() else None for x in item.split(":")]
            parts.append(slice(*a))
        else:
            i = int(item)
            parts.append(slice(i, i + 1 if i != -1 else None))
    return tuple(parts)


def check_views(m, path, model, rng, count, write):
    for _ in range(count):
        text = random_slice(rng, model.shape)
        view = f"{m.path}{path}[{text}]"
        idx = numpy_index(text)
        want = np.ascontiguousarray(model[idx])
        assert os.path.getsize(view) == want.nbytes, text
        got = open(view, "rb").read()
        assert got == want.tobytes(), text
        if write and want.size:
            new = np.frombuffer(rng.randbytes(want.nbytes), dtype=model.dtype).reshape(want.shape)
            if model.dtype.kind == "f":
                new = np.nan_to_num(new, nan=1.5, posinf=2.5, neginf=-2.5)
            with open(view, "r+b") as f:
                f.write(new.tobytes())
            model[idx] = new
            assert open(view, "rb").read() == new.tobytes(), text


def test_random_slices_read_and_write_like_numpy(container, mounter):
    rng = random.Random(20261124)
    dense = np.arange(30 * 40, dtype="<f4").reshape(30, 40) / 7
    make_dataset(container, "/dense", dense, (7, 9))
    filt = (np.arange(25 * 33, dtype="<i2").reshape(25, 33) * 3 - 400).astype("<i2")
    slab("mkdset", container, "/filtered", "--dtype", "i2", "--shape", "25,33", "--chunks", "8,8",
         "--filters", "shuffle,deflate=6,checksum")
    np.save("/tmp/_slabfs_views_filt.npy", filt)
    slab("import", container, "/filtered", "/tmp/_slabfs_views_filt.npy")
    os.unlink("/tmp/_slabfs_views_filt.npy")
    slab("mkdset", container, "/sparse", "--dtype", "u4", "--shape", "4,20,30", "--chunks", "2,6,7", "--sparse",
         "--fill", "9")
    sparse = np.full((4, 20, 30), 9, dtype="<u4")
    m = mounter(container)
    with open(m / "sparse", "r+b") as f:  # define some elements
        block = np.arange(2 * 30, dtype="<u4").reshape(2, 30)
        f.seek((1 * 20 + 5) * 30 * 4)
        f.write(block.tobytes())
        sparse[1, 5:7, :] = block
    check_views(m, "/dense", dense, rng, 70, write=True)
    check_views(m, "/filtered", filt, rng, 70, write=True)
    check_views(m, "/sparse", sparse, rng, 70, write=True)
    # Views are not listed, and the datasets hold what was written.
    assert sorted(os.listdir(m.path)) == ["dense", "filtered", "sparse"]
    assert open(m / "dense", "rb").read() == dense.tobytes()
    assert m.unmount() == 0
    assert export(container, "/dense") == dense.tobytes()
    assert export(container, "/filtered") == filt.tobytes()
    assert export(container, "/sparse") == sparse.tobytes()


def test_dd_into_a_strided_slice(container, mounter, tmp_path):
    a = np.zeros((16, 16), dtype="<u2")
    make_dataset(container, "/img", a, (4, 4))
    m = mounter(container)
    patch = np.arange(8 * 4, dtype="<u2").reshape(8, 4) + 1000
    src = tmp_path / "patch.bin"
    src.write_bytes(patch.tobytes())
    run("dd", f"if={src}", f"of={m.path}/img[::2, 1:16:4]", "conv=notrunc", "status=none")
    a[::2, 1:16:4] = patch
    assert open(m / "img", "rb").read() == a.tobytes()
    # Part of the slice, at an offset: elements 3..5 of the view.
    run("dd", f"if={src}", f"of={m.path}/img[::2, 1:16:4]", "conv=notrunc", "bs=2", "skip=0", "seek=3", "count=3",
        "status=none")
    flat = a[::2, 1:16:4].copy().ravel()
    flat[3:6] = patch.ravel()[0:3]
    a[::2, 1:16:4] = flat.reshape(8, 4)
    assert open(m / "img", "rb").read() == a.tobytes()
    # Past the view's end: EFBIG, nothing written.
    fd = os.open(f"{m.path}/img[0, 0:4]", os.O_WRONLY)
    with pytest.raises(OSError) as e:
        os.pwrite(fd, b"\xff" * 10, 0)
    os.close(fd)
    assert e.value.errno == errno.EFBIG
    assert open(m / "img", "rb").read() == a.tobytes()
    # O_TRUNC would empty a dataset through its view: refused.
    with pytest.raises(OSError) as e:
        open(f"{m.path}/img[0:2]", "wb")
    assert e.value.errno == errno.EINVAL
    assert m.unmount() == 0
    assert export(container, "/img") == a.tobytes()


def test_npy_views_load_with_numpy(container, mounter):
    a = (np.arange(3 * 50 * 70, dtype="<f8").reshape(3, 50, 70) ** 1.5)
    make_dataset(container, "/g/cube", a, (1, 16, 16))
    m = mounter(container)
    got = np.load(m / "g" / "cube.npy")
    assert got.dtype == np.dtype("<f8") and got.shape == a.shape and np.array_equal(got, a)
    mm = np.load(m / "g" / "cube.npy", mmap_mode="r")
    assert mm.shape == a.shape and np.array_equal(mm[2, 10:20, ::3], a[2, 10:20, ::3])
    del mm
    part = np.load(f"{m.path}/g/cube[1, 0:10, -5:].npy")
    assert part.shape == (1, 10, 5) and np.array_equal(part[0], a[1, 0:10, -5:])
    assert (os.path.getsize(m / "g" / "cube.npy") - a.nbytes) % 64 == 0
    # Read-only.
    with pytest.raises(OSError) as e:
        open(m / "g" / "cube.npy", "r+b")
    assert e.value.errno in (errno.EACCES, errno.EPERM)
    assert sorted(os.listdir(m / "g")) == ["cube"]
    assert m.unmount() == 0


def test_txt_view_for_loadtxt_and_awk(container, mounter):
    ints = (np.arange(12 * 5, dtype="<i4").reshape(12, 5) - 30) * 1000003
    make_dataset(container, "/ints", ints, (5, 5))
    fl = np.array([[0.1, -2.5e-8, np.nan], [np.inf, -np.inf, 3.0e38]], dtype="<f4")
    make_dataset(container, "/floats", fl, (2, 3))
    m = mounter(container)
    assert np.array_equal(np.loadtxt(m / "ints.txt", dtype="<i4"), ints)
    back = np.loadtxt(m / "floats.txt", dtype="<f4")
    assert np.array_equal(back, fl, equal_nan=True)
    out = run("awk", "{ s += $2 } END { print s, NR }", m / "ints.txt").stdout.split()
    assert int(out[0]) == int(ints[:, 1].sum()) and int(out[1]) == 12
    # Fixed width: a byte range maps to elements without scanning.
    lines = open(m / "ints.txt").read().splitlines()
    assert len({len(l) for l in lines}) == 1
    with open(m / "ints.txt", "rb") as f:
        f.seek(len(lines[0]) + 1)
        assert f.readline().decode().split() == [str(v) for v in ints[1]]
    part = np.loadtxt(f"{m.path}/ints[2:4, ::2].txt", dtype="<i4")
    assert np.array_equal(part, ints[2:4, ::2])
    assert m.unmount() == 0


def test_views_of_a_growing_dataset_follow_it(container, mounter):
    slab("mkdset", container, "/stream", "--dtype", "u1", "--shape", "0,8", "--maxshape", "unlimited,8",
         "--chunks", "4,8")
    m = mounter(container)
    assert os.path.getsize(m / "stream.npy") > 0
    with open(m / "stream", "ab") as f:
        f.write(bytes(range(24)))
    assert os.path.getsize(f"{m.path}/stream[:]") == 24
    assert open(f"{m.path}/stream[-1]", "rb").read() == bytes(range(16, 24))
    with open(m / "stream", "ab") as f:
        f.write(bytes(range(24, 32)))
    assert open(f"{m.path}/stream[-1]", "rb").read() == bytes(range(24, 32))
    assert np.load(m / "stream.npy").shape == (4, 8)
    assert m.unmount() == 0


def test_bad_views(container, mounter):
    make_dataset(container, "/g/ds", np.zeros((4, 5), dtype="<u1"), (2, 5))
    m = mounter(container)
    for name, code in (("ds[9]", errno.EINVAL), ("ds[1:2:0]", errno.EINVAL), ("ds[1,2,3]", errno.EINVAL),
                       ("ds[a]", errno.EINVAL), ("ds[]", errno.EINVAL), ("nope[1]", errno.ENOENT),
                       ("nope.npy", errno.ENOENT), ("ds.csv", errno.ENOENT), ("[1]", errno.ENOENT)):
        with pytest.raises(OSError) as e:
            os.stat(f"{m.path}/g/{name}")
        assert e.value.errno == code, name
    # A group has no views.
    with pytest.raises(OSError) as e:
        os.stat(f"{m.path}/g.npy")
    assert e.value.errno == errno.ENOENT
    # Views cannot be made, renamed or removed.
    with pytest.raises(OSError):
        os.unlink(f"{m.path}/g/ds.npy")
    assert "lookup /g/ds[9] refused (EINVAL)" in m.log()
    assert m.unmount() == 0
    assert export(container, "/g/ds") == bytes(20)


def test_views_of_a_large_dataset_are_streamed(container, mounter):
    """A 2 GiB dataset (never written: every element is the fill value)
    read whole through its .npy and .txt views: the daemon's memory stays
    bounded, far below the view's size."""
    slab("mkdset", container, "/big", "--dtype", "u2", "--shape", f"{1 << 20},1024", "--chunks", "256,1024",
         "--fill", "7")
    m = mounter(container)
    size = os.path.getsize(m / "big.npy")
    assert size > 2 << 30
    cp = run("dd", f"if={m.path}/big.npy", "of=/dev/null", "bs=1M", "status=none", timeout=600)
    assert cp.returncode == 0
    head = open(m / "big.npy", "rb").read(256)
    assert head.startswith(b"\x93NUMPY") and b"(1048576, 1024)" in head
    with open(f"{m.path}/big[-2:].txt") as f:
        assert f.read().split() == ["7"] * 2048
    with open(f"/proc/{m.proc.pid}/status") as f:
        hwm_kib = int(next(line for line in f if line.startswith("VmHWM")).split()[1])
    assert hwm_kib < 256 * 1024, f"daemon peak RSS {hwm_kib} KiB while streaming a 2 GiB view"
    assert m.unmount() == 0
