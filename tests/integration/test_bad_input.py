"""The bad-input table (docs/reliability.md): each bad name, shape, dtype,
chunk shape, slice, offset and layout field, given to the CLI and through
the mount, is a clear error (one line, or one errno with a log line), and
the container is exactly as before: it opens, lists the same and holds the
same bytes."""
import errno
import os

import numpy as np
import pytest

from conftest import fails, mpath, slab
from mounting import container, export, make_dataset, mounter  # noqa: F401

LONG = "n" * 4096


def snapshot(c):
    return slab("ls", "-r", "-l", c, "/").stdout, export(c, "/g/ds")


@pytest.fixture
def populated(container):
    make_dataset(container, "/g/ds", np.arange(4 * 5, dtype="<u2").reshape(4, 5), (2, 5))
    slab("mkdset", container, "/stream", "--dtype", "u1", "--shape", "0,4", "--maxshape", "unlimited,4")
    return container


CLI_CASES = [
    # names
    (["mkdset", "{c}", "/", "--dtype", "u1", "--shape", "1"], 1),
    (["mkdset", "{c}", "/g/.", "--dtype", "u1", "--shape", "1"], 1),
    (["mkdset", "{c}", "/g/..", "--dtype", "u1", "--shape", "1"], 1),
    (["mkdset", "{c}", "/" + LONG, "--dtype", "u1", "--shape", "1"], 1),
    (["mkgroup", "{c}", "/g/ds"], 1),                         # over a dataset
    (["mkgroup", "{c}", "//"], 1),
    # shapes
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "0"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "-3"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "99999999999999999999"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", ",".join(["1"] * 33)], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", ""], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u8", "--shape", "4294967296,4294967296,4294967296"], 1),
    # dtypes and chunks
    (["mkdset", "{c}", "/x", "--dtype", "c8", "--shape", "3"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "", "--shape", "3"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "3", "--chunks", "0"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "3,3", "--chunks", "3"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "3", "--filters", "gzip=99"], 1),
    (["mkdset", "{c}", "/x", "--dtype", "u1", "--shape", "3", "--fill", "300"], 1),
    # slices
    (["erase", "{c}", "/g/ds", "1:2:0"], 1),
    (["erase", "{c}", "/g/ds", "9"], 1),
    (["erase", "{c}", "/g/ds", "1,2,3"], 1),
    (["defined", "{c}", "/g/ds", "[0]"], 1),
    # resize, rename
    (["resize", "{c}", "/g/ds", "5,5"], 1),                   # fixed
    (["resize", "{c}", "/stream", "1,5"], 1),                 # a fixed dimension
    (["mv", "{c}", "/g", "/g/sub"], 1),                       # into itself
    (["mv", "{c}", "/g/ds", "/g/" + LONG], 1),
    # import of the wrong size
    (["import", "{c}", "/g/ds", "{short}"], 1),
    # attributes
    (["attr", "{c}", "/g/ds", "", "1"], 1),
    (["attr", "{c}", "/nope", "a", "1"], 1),
]


@pytest.mark.parametrize("argv,code", CLI_CASES, ids=lambda v: " ".join(v)[:60] if isinstance(v, list) else str(v))
def test_cli_refuses_and_loses_nothing(populated, tmp_path, argv, code):
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x01" * 7)
    before = snapshot(populated)
    args = [a.format(c=populated, short=short) for a in argv]
    cp = fails(*args, code=code)
    assert len(cp.stderr) < 8192
    assert snapshot(populated) == before


def test_bad_input_through_the_mount(populated, mounter):
    before = snapshot(populated)
    m = mounter(populated)

    def refused(code, fn, *args):
        with pytest.raises(OSError) as e:
            fn(*args)
        assert e.value.errno == code, (fn.__name__, args, e.value)

    g = mpath(m, "/g")
    refused(errno.ENAMETOOLONG, os.mkdir, g + "/" + "n" * 256)
    refused(errno.ENAMETOOLONG, os.open, g + "/" + "n" * 256, os.O_CREAT | os.O_WRONLY)
    refused(errno.EEXIST, os.mkdir, g + "/ds")                       # over a dataset
    refused(errno.EEXIST, os.mkdir, g + "/.")
    refused(errno.EINVAL, os.rename, g, g + "/sub")                  # into itself
    refused(errno.ENOTDIR, os.mkdir, g + "/ds/sub")
    # The layout of a dataset holding data is fixed; bad values are EINVAL.
    refused(errno.EPERM, os.setxattr, g + "/ds", "user.slab.shape", b"2,10")
    open(g + "/new", "wb").close()
    for field, value in (("shape", b"-1"), ("shape", b"0,0,0," + b"1," * 31 + b"1"), ("dtype", b"c8"),
                         ("chunks", b"0"), ("maxshape", b"x"), ("fill", b"nan-ish"), ("filters", b"gzip=99"),
                         ("sparse", b"maybe"), ("layout", b"dtype=u1;bogus=1")):
        refused(errno.EINVAL, os.setxattr, g + "/new", "user.slab." + field, value)
    # A figure is accepted and ignored (copies carry it); a bad type is EINVAL.
    stored = os.getxattr(g + "/ds", "user.slab.stored")
    os.setxattr(g + "/ds", "user.slab.stored", b"1")
    assert os.getxattr(g + "/ds", "user.slab.stored") == stored
    refused(errno.EINVAL, os.setxattr, g + "/ds", "user.slab.type.units", b"c8")
    refused(errno.EINVAL, os.setxattr, g + "/ds", "user.slab.type.units", b"f4[0]")
    # Offsets past what a fixed dataset holds, and sizes it cannot take.
    fd = os.open(g + "/ds", os.O_WRONLY)
    refused(errno.EFBIG, os.pwrite, fd, b"\x01\x02", 40)
    refused(errno.EFBIG, os.pwrite, fd, b"\x01", 1 << 62)
    os.close(fd)
    refused(errno.EINVAL, os.truncate, g + "/ds", 17)
    refused(errno.EINVAL, os.truncate, mpath(m, "/stream"), 3)      # not whole rows
    # Bad slices.
    refused(errno.EINVAL, os.stat, g + "/ds[7]")
    refused(errno.EINVAL, os.stat, g + "/ds[::0]")
    refused(errno.ENOENT, os.stat, g + "/nope[1]")
    # A second writer is refused while the mount holds the container.
    cp = fails("mkdset", populated, "/x", "--dtype", "u1", "--shape", "1")
    assert "open for writing by slabfs" in cp.stderr
    # Unusual but valid names work: non-UTF-8 bytes, brackets (a real child
    # wins over a view of the same name).
    weird = os.fsencode(g) + b"/caf\xe9"
    os.mkdir(weird)
    assert os.path.isdir(weird)
    with open(g + "/a[0]", "wb") as f:
        f.write(b"real")
    assert open(g + "/a[0]", "rb").read() == b"real"
    os.rmdir(weird)
    os.unlink(g + "/a[0]")
    os.unlink(g + "/new")
    assert "refused (EINVAL)" in m.log() and "refused (EFBIG)" in m.log()
    assert m.unmount() == 0
    assert snapshot(populated) == before
