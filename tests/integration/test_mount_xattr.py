"""Extended attributes through a real mount: the read-only user.slab.*
metadata, user.NAME as the object's attributes (getfattr/setfattr, listing,
removal, create/replace flags, the size probe), and other namespaces."""
import ctypes
import errno
import os

import numpy as np
import pytest

from conftest import mpath, run, slab
from mounting import container, make_dataset, mounter  # noqa: F401

libc = ctypes.CDLL(None, use_errno=True)


@pytest.fixture
def c(container):
    make_dataset(container, "/g/ds", np.arange(600, dtype="<f4").reshape(20, 30), (8, 16),
                 fill=1.5)
    return container


def getfattr_value(path, name):
    return run("getfattr", "--only-values", "-n", name, path).stdout


def test_slab_metadata_is_readable(c, mounter):
    m = mounter(c)
    ds = mpath(m, "/g/ds")
    assert getfattr_value(ds, "user.slab.dtype") == "f4"
    assert getfattr_value(ds, "user.slab.shape") == "20,30"
    assert getfattr_value(ds, "user.slab.chunks") == "8,16"
    assert getfattr_value(ds, "user.slab.fill") == "1.5"
    assert os.getxattr(ds, "user.slab.shape") == b"20,30"
    names = os.listxattr(ds)
    for n in ("user.slab.dtype", "user.slab.shape", "user.slab.chunks", "user.slab.fill"):
        assert n in names
    assert int(os.getxattr(ds, "user.slab.stored")) > 0
    # Groups have none.
    assert not [n for n in os.listxattr(mpath(m, "/g")) if n.startswith("user.slab.")]
    with pytest.raises(OSError) as e:
        os.getxattr(mpath(m, "/g"), "user.slab.dtype")
    assert e.value.errno == errno.ENODATA
    with pytest.raises(OSError) as e:
        os.getxattr(ds, "user.slab.colour")
    assert e.value.errno == errno.ENODATA


def fields(text):
    return {k: int(v) for k, v in (f.split("=") for f in text.split())}


def test_the_root_shows_the_cache_and_space_figures(c, mounter):
    m = mounter(c, "-o", "cache_size=8M")
    # Read by name, not listed: rsync -X and cp -a would copy them and
    # then fail to set them back (test_mount_replace's rsync round trip).
    assert [n for n in os.listxattr(m.path) if n.startswith("user.slab.")] == []
    before = fields(getfattr_value(m.path, "user.slab.cache"))
    assert before["budget_bytes"] == 8 << 20
    for key in ("hits", "misses", "bytes_read", "bytes_written", "evictions", "bypass_reads",
                "bypass_writes", "resident_bytes"):
        assert key in before
    # Reads of the dataset reach the engine (a fresh mount has no page
    # cache for it): the counters move.
    with open(mpath(m, "/g/ds"), "rb") as f:
        f.read()
    after = fields(getfattr_value(m.path, "user.slab.cache"))
    assert after["bytes_read"] + after["hits"] > before["bytes_read"] + before["hits"]
    space = fields(getfattr_value(m.path, "user.slab.space"))
    assert space["file_bytes"] == os.path.getsize(c)
    assert space["objects"] == 3
    assert int(getfattr_value(m.path, "user.slab.generation")) >= 2
    # Read-only figures; other groups have none.
    r = run("setfattr", "-n", "user.slab.cache", "-v", "0", m.path, check=False)
    assert r.returncode != 0
    with pytest.raises(OSError) as e:
        os.getxattr(mpath(m, "/g"), "user.slab.cache")
    assert e.value.errno == errno.ENODATA
    with pytest.raises(OSError) as e:
        os.getxattr(m.path, "user.slab.dtype")
    assert e.value.errno == errno.ENODATA


def test_slab_layout_of_a_dataset_holding_data_is_fixed(c, mounter):
    m = mounter(c)
    ds = mpath(m, "/g/ds")
    cp = run("setfattr", "-n", "user.slab.dtype", "-v", "f8", ds, check=False)
    assert cp.returncode != 0 and "Operation not permitted" in cp.stderr
    for name in ("user.slab.shape", "user.slab.new"):
        with pytest.raises(OSError) as e:
            os.setxattr(ds, name, b"1")
        assert e.value.errno == errno.EPERM
    with pytest.raises(OSError) as e:
        os.removexattr(ds, "user.slab.fill")
    assert e.value.errno == errno.EPERM
    assert getfattr_value(ds, "user.slab.dtype") == "f4"
    # The refusal is logged with the reason.
    assert "user.slab" in m.log() and "EPERM" in m.log()


def test_a_refused_user_attribute_is_a_warning_in_the_log(c, mounter, tmp_path):
    """cp -a says nothing when an attribute it copies is refused, so the
    daemon's line for it is a warning, not info; other namespaces, which
    every cp -a tries and no slabfs object has, stay at info."""
    m = mounter(c)
    src = tmp_path / "src.bin"
    src.write_bytes(b"0123456789abcdef")
    os.setxattr(src, "user.slab.dtype", b"no-such-dtype")
    cp = run("cp", "-a", src, mpath(m, "/copied"), check=False)
    assert cp.returncode == 0, cp.stderr  # the refusal is hidden from the user
    assert open(mpath(m, "/copied"), "rb").read() == b"0123456789abcdef"
    with pytest.raises(OSError) as e:
        os.setxattr(mpath(m, "/g/ds"), "trusted.x", b"1")
    assert e.value.errno in (errno.ENOTSUP, errno.EPERM)
    lines = m.log().splitlines()
    refused = [ln for ln in lines if "setxattr user.slab.dtype /copied refused" in ln]
    assert refused and all("warning:" in ln for ln in refused), lines
    other = [ln for ln in lines if "setxattr trusted.x" in ln]
    assert other and all("info:" in ln for ln in other), lines


def test_user_attributes_round_trip(c, mounter):
    m = mounter(c, "-o", "commit_interval=0")
    ds, g = mpath(m, "/g/ds"), mpath(m, "/g")
    run("setfattr", "-n", "user.units", "-v", "m/s", ds)
    run("setfattr", "-n", "user.note", "-v", "hello world", g)
    assert getfattr_value(ds, "user.units") == "m/s"
    assert getfattr_value(g, "user.note") == "hello world"
    assert "user.units" in os.listxattr(ds)
    assert os.listxattr(g) == ["user.note"]
    dump = run("getfattr", "-d", ds).stdout
    assert 'user.units="m/s"' in dump
    # Replace, then remove.
    os.setxattr(ds, "user.units", b"km/h")
    assert os.getxattr(ds, "user.units") == b"km/h"
    run("setfattr", "-x", "user.units", ds)
    cp = run("getfattr", "-n", "user.units", ds, check=False)
    assert cp.returncode != 0 and "No such attribute" in cp.stderr
    with pytest.raises(OSError) as e:
        os.removexattr(ds, "user.units")
    assert e.value.errno == errno.ENODATA
    assert "user.units" not in os.listxattr(ds)
    # Committed at unmount; the CLI sees the group's attribute.
    assert m.unmount() == 0
    assert "hello world" in slab("attr", c, "/g", "note").stdout


def test_attributes_from_slab_read_as_text(c, mounter):
    slab("attr", c, "/g/ds", "scale", "2.5")
    slab("attr", c, "/g", "counts", "1,2,3")
    slab("attr", c, "/g", "label", "run 7")
    m = mounter(c)
    assert getfattr_value(mpath(m, "/g/ds"), "user.scale") == "2.5"
    assert getfattr_value(mpath(m, "/g"), "user.counts") == "1,2,3"
    assert getfattr_value(mpath(m, "/g"), "user.label") == "run 7"
    # A numeric attribute also shows its type (test_mount_roundtrip_meaning.py).
    assert sorted(os.listxattr(mpath(m, "/g"))) == ["user.counts", "user.label", "user.slab.type.counts"]
    assert os.getxattr(mpath(m, "/g"), "user.slab.type.counts") == b"i8[3]"


def test_create_and_replace_flags(c, mounter):
    m = mounter(c)
    ds = mpath(m, "/g/ds")
    os.setxattr(ds, "user.a", b"1", os.XATTR_CREATE)
    with pytest.raises(OSError) as e:
        os.setxattr(ds, "user.a", b"2", os.XATTR_CREATE)
    assert e.value.errno == errno.EEXIST
    os.setxattr(ds, "user.a", b"3", os.XATTR_REPLACE)
    assert os.getxattr(ds, "user.a") == b"3"
    with pytest.raises(OSError) as e:
        os.setxattr(ds, "user.b", b"x", os.XATTR_REPLACE)
    assert e.value.errno == errno.ENODATA


def test_size_probe_and_small_buffer(c, mounter):
    m = mounter(c)
    ds = mpath(m, "/g/ds").encode()
    os.setxattr(ds, "user.long", b"x" * 1000)
    ctypes.set_errno(0)
    assert libc.getxattr(ds, b"user.long", None, ctypes.c_size_t(0)) == 1000
    buf = ctypes.create_string_buffer(10)
    assert libc.getxattr(ds, b"user.long", buf, ctypes.c_size_t(10)) == -1
    assert ctypes.get_errno() == errno.ERANGE
    total = libc.listxattr(ds, None, ctypes.c_size_t(0))
    assert total == len(b"\0".join(n.encode() for n in os.listxattr(ds))) + 1
    buf = ctypes.create_string_buffer(4)
    assert libc.listxattr(ds, buf, ctypes.c_size_t(4)) == -1
    assert ctypes.get_errno() == errno.ERANGE


def test_empty_and_odd_values(c, mounter):
    m = mounter(c)
    ds = mpath(m, "/g/ds")
    os.setxattr(ds, "user.empty", b"")
    assert os.getxattr(ds, "user.empty") == b""
    os.setxattr(ds, "user.bytes", b"a\nb\tc")
    assert os.getxattr(ds, "user.bytes") == b"a\nb\tc"


def test_bad_attribute_name_is_einval(c, mounter):
    m = mounter(c)
    with pytest.raises(OSError) as e:
        os.setxattr(mpath(m, "/g/ds"), "user.", b"x")
    assert e.value.errno == errno.EINVAL


def test_other_namespaces(c, mounter, tmp_path):
    m = mounter(c)
    ds = mpath(m, "/g/ds")
    for name in ("trusted.x", "security.x"):
        with pytest.raises(OSError) as e:
            os.setxattr(ds, name, b"1")
        assert e.value.errno in (errno.ENOTSUP, errno.EPERM), name
    for name in ("security.selinux", "system.posix_acl_access", "trusted.x"):
        with pytest.raises(OSError) as e:
            os.getxattr(ds, name)
        assert e.value.errno in (errno.ENODATA, errno.ENOTSUP), name
    # ls and cp, which probe for ACLs and labels, stay quiet.
    cp = run("ls", "-l", mpath(m, "/g"))
    assert cp.stderr == ""
    cp = run("cp", "--preserve=all", ds, tmp_path / "copy.bin", check=False)
    assert cp.returncode == 0, cp.stderr
    assert (tmp_path / "copy.bin").read_bytes() == np.arange(600, dtype="<f4").tobytes()


def test_xattrs_on_a_read_only_mount(c, mounter):
    slab("attr", c, "/g/ds", "units", "m")
    m = mounter(c, "-o", "ro")
    ds = mpath(m, "/g/ds")
    assert os.getxattr(ds, "user.units") == b"m"
    assert os.getxattr(ds, "user.slab.dtype") == b"f4"
    with pytest.raises(OSError) as e:
        os.setxattr(ds, "user.units", b"km")
    assert e.value.errno == errno.EROFS
    with pytest.raises(OSError) as e:
        os.removexattr(ds, "user.units")
    assert e.value.errno == errno.EROFS
