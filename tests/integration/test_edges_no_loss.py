"""The edges where one step off the main path used to lose data or brick a
container (issue 20, items 1-5 and 8), each with the tool a user runs:
cp and > over a fixed dataset, a write refused on a full disk, deep mkdir
and mv, a damaged free list, posix_fallocate past the end, and tar -S of a
sparse dataset."""
import errno
import os
import struct
import subprocess
import tarfile
import time

import numpy as np
import pytest

from conftest import slab
from mounting import export, mounter  # noqa: F401

MiB = 1 << 20


def getx(path, name):
    return os.getxattr(path, name).decode()


# ------------------------------------------------ 1. cp over a fixed dataset

@pytest.mark.parametrize("size", [1000, 3 * MiB + 12])
def test_cp_of_a_longer_file_over_a_fixed_dataset_keeps_what_fits(tmp_path, mounter, size):
    """Before: the O_TRUNC open reset every element to the fill value, then
    the first write that crossed the end was refused whole (EFBIG): the old
    data was gone and the new refused. Now the write stores what fits, as
    write(2) does at a file size limit; cp still fails (EFBIG)."""
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "u1", "--shape", str(size), "--chunks", "65536")
    old = np.random.default_rng(1).integers(0, 255, size, dtype="u1").tobytes()
    (tmp_path / "old.bin").write_bytes(old)
    slab("import", c, "/d", tmp_path / "old.bin")
    new = np.random.default_rng(2).integers(0, 255, size + 5000, dtype="u1").tobytes()
    (tmp_path / "new.bin").write_bytes(new)
    m = mounter(c)
    cp = subprocess.run(["cp", str(tmp_path / "new.bin"), str(m / "d")], capture_output=True, text=True)
    assert cp.returncode != 0 and "File too large" in cp.stderr, cp
    got = open(m / "d", "rb").read()
    assert got == new[:size], "the dataset must hold the start of the new file, not fill"
    # A shell redirection of a longer text does the same.
    cp = subprocess.run(["sh", "-c", f"head -c {size + 1} /dev/zero | tr '\\0' 'z' > '{m / 'd'}'"],
                        capture_output=True, text=True)
    assert cp.returncode != 0 and "File too large" in cp.stderr, cp
    assert open(m / "d", "rb").read() == b"z" * size
    # dd conv=notrunc across the end: the bytes inside are written, dd fails.
    cp = subprocess.run(["dd", f"of={m / 'd'}", "bs=64", f"seek={size // 64 - 1}", "conv=notrunc",
                         "status=none"], input=b"q" * 128, capture_output=True)
    assert cp.returncode != 0 and b"File too large" in cp.stderr, cp
    start = (size // 64 - 1) * 64
    assert open(m / "d", "rb").read()[start:] == b"q" * (size - start)
    # A file of the dataset's size still replaces every byte.
    cp = subprocess.run(["cp", str(tmp_path / "old.bin"), str(m / "d")], capture_output=True, text=True)
    assert cp.returncode == 0, cp
    assert m.unmount() == 0
    assert export(c, "/d") == old


def test_a_write_starting_at_the_end_of_a_fixed_dataset_changes_nothing(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "f4", "--shape", "10,10")
    m = mounter(c)
    with open(m / "d", "r+b") as f:
        f.write(b"\x01" * 400)
        f.flush()
        with pytest.raises(OSError) as e:
            os.pwrite(f.fileno(), b"\x02" * 8, 400)
        assert e.value.errno == errno.EFBIG
    assert open(m / "d", "rb").read() == b"\x01" * 400


# --------------------------------------- 2. a write refused for a full disk

def daemon_bytes(path, size):
    """The bytes as the daemon holds them, read with O_DIRECT (no page cache)."""
    import mmap
    buf = mmap.mmap(-1, size)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        got = os.preadv(fd, [buf], 0)
    finally:
        os.close(fd)
    return bytes(buf[:got])


def punch(fd, off, length):
    """fallocate(PUNCH_HOLE | KEEP_SIZE) through the mount."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
    if libc.fallocate(fd, 0x02 | 0x01, off, length) != 0:
        raise OSError(ctypes.get_errno(), "fallocate")


def test_a_write_refused_for_a_full_disk_changes_nothing(small_fs, mounter):
    """Writes that cut elements (600 bytes at an unaligned offset) and
    writes of two boxes (513 bytes across a row) into chunks that are not
    yet in the cache, while a filler file eats the disk in steps smaller
    than a chunk: a write that gets ENOSPC must leave every byte as it was.
    Before, the first element (or the first row's part) was written before
    the rest was refused. Each accepted write is punched out again, so that
    the cache holds no changes between steps."""
    c = os.path.join(small_fs, "c.slab")
    row = 1 << 18  # f4 elements: 1 MiB rows, one chunk each
    slab("create", c)
    slab("mkdset", c, "/f", "--dtype", "f4", "--shape", f"4,{row}", "--chunks", f"1,{row}")
    m = mounter(c, "-o", "commit_interval=0")
    size = 4 * row * 4
    zeros = bytes(size)
    rng = np.random.default_rng(7)
    refused = {600: 0, 513: 0}
    filler = os.path.join(small_fs, "filler")
    fd = os.open(m / "f", os.O_RDWR)
    try:
        with open(filler, "wb") as fill:
            # Quickly down to 6 MiB free, then in 64 KiB steps.
            free = os.statvfs(small_fs).f_bavail * os.statvfs(small_fs).f_frsize
            fill.write(b"\0" * max(0, free - 6 * MiB))
            fill.flush()
            for step in range(200):
                n = 600 if step % 2 == 0 else 513
                off = row * 4 - 3 if n == 600 else 3 * row * 4 - 256 - 1
                data = rng.integers(0, 255, n, dtype="u1").tobytes()
                # The kernel sends a write that starts inside a page it has
                # not cached as two requests (that page alone first, and a
                # short count if the rest fails); with the pages read, it
                # sends one request, which the daemon must take whole or not
                # at all.
                page = off - off % 4096
                os.pread(fd, off + n - page + 4096, page)
                try:
                    written = os.pwrite(fd, data, off)
                except OSError as e:
                    assert e.errno == errno.ENOSPC, e
                    refused[n] += 1
                    # Past the kernel's page cache: what the daemon holds.
                    got = daemon_bytes(m / "f", size)
                    changed = [i for i in range(off - 8, off + n + 8) if got[i] != 0]
                    assert got == zeros, f"step {step}: a refused {n}-byte write at {off} changed bytes {changed[:5]}..{changed[-3:]} ({len(changed)}), data starts {data[:4]}"
                    if min(refused.values()) >= 3:
                        break
                else:
                    assert written == n
                    assert os.pread(fd, n, off) == data
                    punch(fd, 0, size)
                    assert daemon_bytes(m / "f", size) == zeros, f"step {step}: the punch left bytes"
                try:
                    fill.write(b"\0" * (64 << 10))
                    fill.flush()
                except OSError as e:
                    assert e.errno == errno.ENOSPC
                # The daemon trusts a disk reading for 100 ms while there is
                # plenty (engine/space/dirty_room.h).
                time.sleep(0.11)
    finally:
        # Room again before the close, which commits.
        if os.path.exists(filler):
            os.unlink(filler)
        os.close(fd)
    assert min(refused.values()) >= 1, f"the disk never filled: {refused}"
    assert m.unmount() == 0
    assert export(c, "/f") == zeros


# ------------------------------------------- 3. limits checked at write time

def test_deep_mkdir_is_refused_and_the_container_still_opens(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    m = mounter(c)
    path = m.path
    for depth in range(1, 513):
        path = path / "g"
        os.mkdir(path)
    with pytest.raises(OSError) as e:
        os.mkdir(path / "g")  # depth 513
    assert e.value.errno == errno.EINVAL
    with pytest.raises(OSError):
        open(path / "file", "wb").close()  # a dataset at depth 513 too
    # A subtree two levels tall cannot move below depth 511.
    os.makedirs(m / "t" / "u")
    with pytest.raises(OSError) as e:
        os.rename(m / "t", path.parent / "t")
    assert e.value.errno == errno.EINVAL
    assert os.path.isdir(m / "t" / "u")
    assert m.unmount() == 0
    # Every reader opens it.
    assert slab("ls", "-r", c, "/").returncode == 0
    m = mounter(c, "-o", "ro")
    assert os.path.isdir(m.path / "/".join(["g"] * 512))
    assert m.unmount() == 0
    # The CLI refuses the same, and the container still opens afterwards.
    cp = slab("mkgroup", "-p", c, "/x" + "/y" * 600, check=False)
    assert cp.returncode == 1 and "nested at most 512" in cp.stderr, cp
    assert slab("ls", c, "/").returncode == 0


# ---------------------------------------------------- 4. a damaged free list

def newest_superblock(path):
    with open(path, "rb") as f:
        head = f.read(8192)
    best = None
    for slot in (0, 4096):
        sb = head[slot:slot + 128]
        if sb[:8] != b"\x89SLABFS\n":
            continue
        gen, = struct.unpack_from("<Q", sb, 16)
        fl_addr, fl_len = struct.unpack_from("<QI", sb, 40)
        if best is None or gen > best[0]:
            best = (gen, fl_addr, fl_len)
    return best


def test_a_flipped_bit_in_the_free_list_locks_out_nothing(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "u2", "--shape", "300,300", "--chunks", "50,50")
    data = np.arange(90000, dtype="<u2").tobytes()
    (tmp_path / "d.bin").write_bytes(data)
    slab("import", c, "/d", tmp_path / "d.bin")
    # Rewrites leave free space behind, so the free list is not empty.
    slab("import", c, "/d", tmp_path / "d.bin")
    slab("mkgroup", c, "/g")
    gen, fl_addr, fl_len = newest_superblock(c)
    assert fl_addr != 0 and fl_len > 0
    with open(c, "r+b") as f:
        f.seek(fl_addr + fl_len // 2)
        b = f.read(1)
        f.seek(fl_addr + fl_len // 2)
        f.write(bytes([b[0] ^ 0x10]))
    # Every reader still reads everything.
    assert slab("ls", "-r", c, "/").returncode == 0
    assert export(c, "/d") == data
    m = mounter(c, "-o", "ro")
    assert open(m / "d", "rb").read() == data
    assert m.unmount() == 0
    # fsck calls it damage, and --repair rewrites it.
    cp = slab("fsck", c, check=False)
    assert cp.returncode == 4 and "free list" in cp.stdout, cp
    cp = slab("fsck", "--repair", c, check=False)
    assert cp.returncode == 0, cp
    assert "free list rebuilt" in cp.stdout
    assert slab("fsck", c, check=False).returncode == 0
    assert export(c, "/d") == data


def test_a_writer_rebuilds_a_damaged_free_list(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/d", "--dtype", "u1", "--shape", "100000", "--chunks", "10000")
    data = os.urandom(100000)
    (tmp_path / "d.bin").write_bytes(data)
    slab("import", c, "/d", tmp_path / "d.bin")
    slab("import", c, "/d", tmp_path / "d.bin")
    gen, fl_addr, fl_len = newest_superblock(c)
    with open(c, "r+b") as f:
        f.seek(fl_addr + fl_len - 3)
        f.write(b"\xff\xff\xff")
    m = mounter(c)
    assert open(m / "d", "rb").read() == data
    with open(m / "d", "r+b") as f:
        f.write(b"\x00" * 10)
    assert m.unmount() == 0
    assert "free list" in m.log()
    assert slab("fsck", c, check=False).returncode == 0
    assert export(c, "/d") == b"\x00" * 10 + data[10:]


# --------------------------------------- 5. posix_fallocate past the end

def test_posix_fallocate_past_a_fixed_end_writes_nothing(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    slab("mkdset", c, "/dense", "--dtype", "u1", "--shape", str(MiB), "--chunks", "65536")
    slab("mkdset", c, "/sparse", "--dtype", "u2", "--shape", "4096", "--chunks", "512", "--sparse")
    slab("mkdset", c, "/stream", "--dtype", "u1", "--shape", "0", "--maxshape", "unlimited")
    m = mounter(c)
    for name in ("dense", "sparse"):
        fd = os.open(m / name, os.O_RDWR)
        try:
            with pytest.raises(OSError) as e:
                os.posix_fallocate(fd, 0, 64 * MiB)
            assert e.value.errno == errno.EFBIG, e
        finally:
            os.close(fd)
        assert getx(m / name, "user.slab.stored") == "0"
    assert getx(m / "sparse", "user.slab.defined") == "0"
    # Within the size, allocation succeeds and stores nothing either.
    fd = os.open(m / "dense", os.O_RDWR)
    os.posix_fallocate(fd, 0, 4096)
    os.close(fd)
    assert getx(m / "dense", "user.slab.stored") == "0"
    # A growable stream grows, as a file does, with nothing stored.
    fd = os.open(m / "stream", os.O_RDWR)
    os.posix_fallocate(fd, 0, 10000)
    os.close(fd)
    assert os.path.getsize(m / "stream") == 10000
    assert getx(m / "stream", "user.slab.stored") == "0"
    assert m.unmount() == 0


# ----------------------------------------------- 8. tar -S of a sparse set

def test_tar_sparse_archives_read_back(tmp_path, mounter):
    c = tmp_path / "c.slab"
    slab("create", c)
    n = 1 << 20  # u2: 2 MiB
    slab("mkdset", c, "/s", "--dtype", "u2", "--shape", str(n), "--chunks", "4096", "--sparse")
    m = mounter(c)
    rng = np.random.default_rng(3)
    with open(m / "s", "r+b") as f:
        for e in rng.choice(n, 300, replace=False):
            f.seek(int(e) * 2)
            f.write(struct.pack("<H", int(e) % 65521 + 1))
    expect = open(m / "s", "rb").read()
    # Regions are whole 4 KiB blocks.
    fd = os.open(m / "s", os.O_RDONLY)
    try:
        off = 0
        while True:
            try:
                d = os.lseek(fd, off, os.SEEK_DATA)
            except OSError as e:
                assert e.errno == errno.ENXIO
                break
            h = os.lseek(fd, d, os.SEEK_HOLE)
            assert d % 4096 == 0 and (h % 4096 == 0 or h == len(expect)), (d, h)
            off = h
    finally:
        os.close(fd)
    archive = tmp_path / "a.tar"
    subprocess.run(["tar", "-S", "-cf", str(archive), "-C", str(m.path), "s"], check=True)
    assert archive.stat().st_size < 3 * MiB
    listing = subprocess.run(["tar", "-tvf", str(archive)], capture_output=True, text=True)
    assert listing.returncode == 0 and " s\n" in listing.stdout + "\n", listing
    with tarfile.open(archive) as t:
        assert t.extractfile("s").read() == expect
    out = tmp_path / "x"
    out.mkdir()
    subprocess.run(["tar", "-xf", str(archive), "-C", str(out)], check=True)
    assert (out / "s").read_bytes() == expect
    assert m.unmount() == 0
