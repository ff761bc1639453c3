"""File modes, commits and the mapping of every slabfs error to the Python
exception h5py and the standard library would raise."""
import errno
import gc
import os
import subprocess
import sys

import numpy as np
import pytest

import slabfs


def make(path, **kw):
    with slabfs.File(path, "w") as f:
        f.create_dataset("g/x", data=np.arange(12, dtype="i4").reshape(3, 4), **kw)


# ------------------------------------------------------------------ modes
def test_modes(path):
    with pytest.raises(FileNotFoundError) as e:
        slabfs.File(path, "r")
    assert e.value.errno == errno.ENOENT and e.value.filename == path
    with pytest.raises(FileNotFoundError):
        slabfs.File(path, "r+")
    with slabfs.File(path, "a") as f:          # creates
        assert f.mode == "r+"
        f.create_group("a")
    with slabfs.File(path, "a") as f:          # opens
        assert "a" in f
    for mode in ("w-", "x"):
        with pytest.raises(FileExistsError) as e:
            slabfs.File(path, mode)
        assert e.value.errno == errno.EEXIST
    with slabfs.File(path, "r") as f:
        assert f.mode == "r" and list(f) == ["a"]
    with slabfs.File(path, "w") as f:          # replaces
        assert list(f) == []
    with pytest.raises(ValueError, match="invalid mode"):
        slabfs.File(path, "rw")
    with pytest.raises(TypeError):                 # HDF5 free-space tuning: not an argument here
        slabfs.File(path, "r", fs_strategy="page")
    with slabfs.File(path, "r", libver="latest") as f:   # h5py's HDF5 format versions: accepted
        assert f.mode == "r"


def test_w_replaces_any_file_but_keeps_old_readers_reading(path):
    make(path)
    reader = slabfs.File(path, "r")
    with slabfs.File(path, "w") as f:
        f.create_dataset("new", data=[1, 2, 3])
    np.testing.assert_array_equal(reader["g/x"][0], [0, 1, 2, 3])   # the old file, still open
    reader.close()
    with slabfs.File(path) as f:
        assert list(f) == ["new"]
    with open(path, "w") as fh:
        fh.write("not a container\n")
    with slabfs.File(path, "w") as f:
        assert list(f) == []
    assert not [n for n in os.listdir(os.path.dirname(path)) if ".new-" in n], "temporary file left"


def test_flush_commits_and_discard_drops(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(4,), dtype="f8")
        ds[0] = 1.5
        f.flush()
        with slabfs.File(path, "r") as r:
            assert r["x"][0] == 1.5
        ds[1] = 2.5
        f.discard()
    with slabfs.File(path, "r") as f:
        np.testing.assert_array_equal(f["x"][...], [1.5, 0, 0, 0])


def test_context_manager_commits_after_an_exception(path):
    with pytest.raises(RuntimeError):
        with slabfs.File(path, "w") as f:
            f.create_dataset("x", data=[1, 2])
            raise RuntimeError("boom")
    assert f.closed and not f
    with slabfs.File(path) as f:
        np.testing.assert_array_equal(f["x"][...], [1, 2])


# ------------------------------------------------------------------ errors
def test_closed_objects_raise_value_error(path):
    make(path)
    f = slabfs.File(path, "r+")
    g, ds, attrs = f["g"], f["g/x"], f["g"].attrs
    f.close()
    f.close()  # twice is fine
    for call in (lambda: f["g"], lambda: ds[0], lambda: ds.shape, lambda: list(g), lambda: attrs["a"],
                 lambda: f.create_group("h"), lambda: ds.resize((4, 4)), lambda: f.flush()):
        with pytest.raises(ValueError, match="closed"):
            call()
    assert not ds and not g
    assert "Closed" in repr(f) and "Closed" in repr(ds) and "Closed" in repr(g)


def test_missing_names_are_key_errors(path):
    make(path)
    with slabfs.File(path, "r+") as f:
        for name in ("nope", "g/nope", "/g/x/deeper", "nope/x"):
            with pytest.raises(KeyError) as e:
                f[name]
            assert e.value.slabfs_code in ("not found", "not a group")
            assert name not in f
        assert f.get("nope") is None
        with pytest.raises(KeyError):
            del f["nope"]
        with pytest.raises(KeyError):
            f["g"].attrs["nope"]
        with pytest.raises(KeyError):
            del f["g"].attrs["nope"]


def test_existing_names_are_value_errors(path):
    make(path)
    with slabfs.File(path, "r+") as f:
        with pytest.raises(ValueError, match="exists"):
            f.create_group("g")
        with pytest.raises(ValueError, match="exists"):
            f.create_dataset("g/x", shape=(2,))
        with pytest.raises(ValueError):
            f.move("g/x", "g")  # a group is there
        with pytest.raises(TypeError):
            f.require_group("g/x")
        with pytest.raises(TypeError):
            f.require_dataset("g", shape=(3, 4), dtype="i4")
        with pytest.raises(TypeError, match="shapes"):
            f.require_dataset("g/x", shape=(3, 5), dtype="i4")
        with pytest.raises(TypeError, match="cast"):
            f.require_dataset("g/x", shape=(3, 4), dtype="f8")
        assert f.require_dataset("g/x", shape=(3, 4), dtype="i2").shape == (3, 4)


def test_bad_creation_arguments(path):
    with slabfs.File(path, "w") as f:
        cases = [
            (TypeError, dict(shape=(3,), dtype=bool)),
            (TypeError, dict(shape=(3,), dtype="c8")),
            (TypeError, dict(shape=(3,), dtype="f2")),
            (TypeError, dict(data=["a", "b"])),
            (ValueError, dict(shape=(3,), compression="lzf")),
            (ValueError, dict(shape=(3,), compression="gzip", compression_opts=12)),
            (ValueError, dict(shape=(3,), compression_opts=4)),
            (ValueError, dict(shape=(3,), chunks=False)),
            (ValueError, dict(shape=(3, 3), chunks=(2,))),
            (ValueError, dict(shape=(3,), chunks=(0,))),
            (ValueError, dict(shape=(3,), maxshape=(2,))),
            (ValueError, dict(shape=(3,), maxshape=(3, 3))),
            (ValueError, dict(shape=(1,) * 33)),
            (ValueError, dict(shape=(2,), data=[1, 2, 3])),
            (ValueError, dict(shape=(3,), fillvalue=[1, 2])),
            (ValueError, dict(shape=(3,), index="hash")),
            (ValueError, dict(shape=(3,), scaleoffset=2)),
            (TypeError, dict(shape=(3,), dtype="i4", track_bananas=True)),
            (TypeError, dict()),
        ]
        for exc, kw in cases:
            with pytest.raises(exc):
                f.create_dataset("d", **kw)
            assert "d" not in f, kw
        for bad in ("", "a\0b", "x" * 300):
            with pytest.raises((ValueError, KeyError)):
                f.create_group(bad)
        assert list(f) == []


def test_failed_data_write_leaves_no_dataset(path, monkeypatch):
    import slabfs.dataset as dsmod

    def fail(self, key, value):
        raise OSError(errno.ENOSPC, "simulated full disk")
    monkeypatch.setattr(dsmod.Dataset, "__setitem__", fail)
    with slabfs.File(path, "w") as f:
        with pytest.raises(OSError):
            f.create_dataset("d", data=np.arange(10))
        assert "d" not in f


def test_read_only_changes_are_erofs(path):
    make(path)
    with slabfs.File(path, "r") as f:
        ds = f["g/x"]
        calls = [lambda: ds.__setitem__(0, 1), lambda: f.create_group("h"), lambda: ds.resize((4, 4)),
                 lambda: f["g"].attrs.__setitem__("a", 1), lambda: f.__delitem__("g/x"), lambda: ds.erase(),
                 lambda: f.create_dataset("y", shape=(2,)), lambda: f.move("g", "h")]
        for call in calls:
            with pytest.raises(OSError) as e:
                call()
            assert e.value.errno == errno.EROFS, e.value
            assert e.value.slabfs_code == "read-only"
        np.testing.assert_array_equal(ds[...], np.arange(12).reshape(3, 4))


def test_second_writer_is_ebusy_naming_the_holder(path):
    make(path)
    with slabfs.File(path, "r+", holder="writer-one") as f:
        with pytest.raises(OSError) as e:
            slabfs.File(path, "r+")
        assert e.value.errno == errno.EBUSY and "writer-one" in str(e.value), e.value
        with pytest.raises(OSError) as e:
            slabfs.File(path, "w")            # does not replace a container in use
        assert e.value.errno == errno.EBUSY
        code = ("import slabfs, errno, sys\n"
                "try:\n    slabfs.File(sys.argv[1], 'a')\nexcept OSError as e:\n"
                "    sys.exit(0 if e.errno == errno.EBUSY and 'writer-one' in str(e) else 3)\nsys.exit(4)")
        assert subprocess.run([sys.executable, "-c", code, path]).returncode == 0
        with slabfs.File(path, "r") as r:     # readers are fine
            assert r["g/x"][2, 3] == 11
        f["g/x"][0, 0] = 100
    with slabfs.File(path) as f:
        assert f["g/x"][0, 0] == 100


def test_a_file_that_is_not_a_container_is_enotsup_not_eio(tmp_path):
    # As h5py for a file that is not HDF5: OSError, but not damage.
    junk = tmp_path / "junk.slab"
    junk.write_bytes(b"hello, this is not a container" * 1000)
    for mode in ("r", "r+", "a"):
        with pytest.raises(OSError) as e:
            slabfs.File(str(junk), mode)
        assert e.value.errno == errno.ENOTSUP and e.value.slabfs_code == "not supported"
        assert "not a slabfs container" in str(e.value) and "corruption" not in str(e.value)
    assert junk.read_bytes() == b"hello, this is not a container" * 1000


def test_damaged_files_are_eio(path, tmp_path):
    # A checksummed chunk with one byte flipped: that chunk is EIO, the rest reads.
    pattern = np.frombuffer(b"slabfs-python-checksum-test-rows" * 128, dtype="u1").copy()
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("c", shape=(2, pattern.size), dtype="u1", chunks=(1, pattern.size), fletcher32=True)
        ds[0] = pattern
        ds[1] = 7
    raw = bytearray(open(path, "rb").read())
    at = raw.find(pattern.tobytes())
    assert at > 0
    raw[at + 1000] ^= 0xFF
    open(path, "wb").write(bytes(raw))
    with slabfs.File(path, "r") as f:
        with pytest.raises(OSError) as e:
            f["c"][0]
        assert e.value.errno == errno.EIO and e.value.slabfs_code == "corruption"
        np.testing.assert_array_equal(f["c"][1], 7)


def test_resize_errors(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("x", shape=(4, 4), maxshape=(None, 6), dtype="i2")
        with pytest.raises(ValueError):
            ds.resize((4, 7))       # past maxshape
        with pytest.raises(ValueError):
            ds.resize((4,))         # wrong rank
        with pytest.raises(ValueError):
            ds.resize(-1, axis=0)
        with pytest.raises(ValueError):
            ds.resize(3, axis=2)
        assert ds.shape == (4, 4)
        fixed = f.create_dataset("y", shape=(3,), dtype="i2")
        with pytest.raises(ValueError):
            fixed.resize((5,))


def test_forked_child_cannot_use_or_commit_a_writable_file(path):
    make(path)
    f = slabfs.File(path, "r+")
    f["g/x"][0, 0] = 42   # not committed
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            try:
                f["g/x"][1, 1] = 5
            except ValueError as e:
                status = 0 if "forked child" in str(e) else 2
            f.__dict__.clear()   # drop the parent's container: must not commit
            gc.collect()
        finally:
            os._exit(status)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 0
    f.discard()
    with slabfs.File(path) as r:
        assert r["g/x"][0, 0] == 0, "the child committed the parent's changes"


def test_exceptions_carry_the_code():
    with pytest.raises(FileNotFoundError) as e:
        slabfs.File("/nonexistent/dir/x.slab")
    assert e.value.slabfs_code == "not found"


def test_paths_that_are_not_containers(tmp_path):
    for mode in ("r", "r+", "w", "a"):
        with pytest.raises(IsADirectoryError):
            slabfs.File(tmp_path, mode)
        with pytest.raises(FileNotFoundError):
            slabfs.File(tmp_path / "missing-dir" / "x.slab", mode)
    assert list(tmp_path.iterdir()) == []


def test_refresh_follows_a_writer(path):
    with slabfs.File(path, "w") as w:
        x = w.create_dataset("x", shape=(0, 4), maxshape=(None, 4), dtype="i4", chunks=(4, 4))
        w.flush()
        with slabfs.File(path, "r") as r:
            rx = r["x"]
            x.resize(10, axis=0)
            x[...] = np.arange(40).reshape(10, 4)
            w.create_group("new")
            w.flush()
            assert rx.shape == (0, 4) and "new" not in r      # a reader keeps its commit
            info = r.refresh()
            assert info["changed"] and x.id in info["changed_objects"]
            assert rx.shape == (10, 4) and "new" in r
            np.testing.assert_array_equal(rx[...], np.arange(40).reshape(10, 4))
            assert rx.refresh()["changed"] is False
            assert w.refresh()["changed"] is False             # a writer always sees its own state


# Every code in every context: the one table in python/src/errors.cc.
TABLE = {
    # code: (data, lookup, create, file)
    "not found": (FileNotFoundError, KeyError, KeyError, FileNotFoundError),
    "already exists": (ValueError, ValueError, ValueError, FileExistsError),
    "invalid argument": (ValueError,) * 4,
    "out of range": (ValueError,) * 4,
    "corruption": (OSError,) * 4,
    "I/O error": (OSError,) * 4,
    "no space": (OSError,) * 4,
    "not supported": (OSError,) * 4,
    "busy": (OSError,) * 4,
    "read-only": (OSError,) * 4,
    "not empty": (OSError,) * 4,
    "permission denied": (PermissionError,) * 4,
    "not a group": (TypeError, KeyError, TypeError, TypeError),
    "not a dataset": (TypeError, KeyError, TypeError, TypeError),
}
ERRNO = {"not found": errno.ENOENT, "already exists": errno.EEXIST, "corruption": errno.EIO,
         "I/O error": errno.EIO, "no space": errno.ENOSPC, "not supported": errno.ENOTSUP,
         "busy": errno.EBUSY, "read-only": errno.EROFS, "not empty": errno.ENOTEMPTY,
         "permission denied": errno.EPERM}


@pytest.mark.parametrize("code", list(TABLE))
def test_error_table(code):
    from slabfs import _slabfs
    for context, want in zip(("data", "lookup", "create", "file"), TABLE[code]):
        with pytest.raises(Exception) as e:
            _slabfs._raise_for_test(code, context, "f.slab" if context == "file" else "")
        assert type(e.value) is want, (code, context, type(e.value))
        assert e.value.slabfs_code == code and "test message" in str(e.value)
        if isinstance(e.value, OSError):
            assert e.value.errno == ERRNO[code], (code, context)
            assert e.value.filename == ("f.slab" if context == "file" else None)


@pytest.fixture
def small_fs(tmp_path):
    """An 8 MiB tmpfs, always unmounted at the end."""
    d = tmp_path / "fs"
    d.mkdir()
    cp = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8M", "tmpfs", str(d)], capture_output=True, text=True)
    assert cp.returncode == 0, f"mount tmpfs: {cp.stderr}"
    try:
        yield d
    finally:
        subprocess.run(["umount", "-l", str(d)], capture_output=True)


def test_full_disk_is_enospc_and_loses_nothing(small_fs):
    path = str(small_fs / "c.slab")
    keep = np.random.default_rng(1).integers(0, 255, (4, 65536), dtype="u1")
    with slabfs.File(path, "w") as f:
        f.create_dataset("keep", data=keep, chunks=(1, 65536))
    f = slabfs.File(path, "r+")
    big = f.create_dataset("big", shape=(256, 65536), dtype="u1", chunks=(1, 65536))
    with pytest.raises(OSError) as e:
        for i in range(256):
            big[i] = np.random.default_rng(i).integers(0, 255, 65536, dtype="u1")
        f.flush()
    assert e.value.errno == errno.ENOSPC and e.value.slabfs_code == "no space", e.value
    f.discard()
    with slabfs.File(path, "r") as f:
        assert list(f) == ["keep"]
        np.testing.assert_array_equal(f["keep"][...], keep)
