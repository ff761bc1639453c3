"""New files and replacing files through a real mount, with the tools that
do it: touch, cp, tar x (with and without --overwrite), rsync -a both ways
(and -X), sed -i, vim, Python's tempfile + os.replace, mv across
filesystems, git init. Each replacing tool must leave the exact bytes AND
the dataset's dtype, shape, chunks, filters, fill and attributes when the
new bytes fit the old layout (docs/mount.md, "New files and replacing
files"). Checked after unmount with `slab info` / `slab export`, which also
shows that the container is complete and free as soon as the unmount
returns."""
import errno
import os
import subprocess
import tempfile

import numpy as np
import pytest

from conftest import expect_errno, info, mpath, run, slab
from mounting import container, export, make_dataset, mounter  # noqa: F401

TEXT = b"alpha beta gamma delta epsilon!\n" * 64  # 2048 bytes, 32-byte rows
SHORT = b"three rows of thirty-two bytes!\n" * 3
ODD = np.arange(-12, 12, dtype="<i2").reshape(4, 6)  # 48 bytes


def layout(c, path):
    """The parts of `slab info` a replace must keep."""
    j = info(c, path)
    return {k: j[k] for k in ("dtype", "shape", "max_shape", "chunks", "filters", "fill", "sparse")}


def attrs(c, path):
    return slab("attr", c, path).stdout


def typed_text_dataset(c, path="/g/text", growable=False, filters="shuffle,deflate=6"):
    """TEXT as a 2-D u2 dataset of 64 rows x 16 elements, deflated, with a
    fill value and two attributes: a layout a byte stream cannot guess."""
    args = ["mkdset", "-p", c, path, "--dtype", "u2", "--shape", "64,16", "--chunks", "8,16",
            "--fill", "7", "--filters", filters]
    if growable:
        args += ["--maxshape", "unlimited,16"]
    slab(*args)
    with tempfile.TemporaryDirectory() as d:
        npy = os.path.join(d, "t.npy")
        np.save(npy, np.frombuffer(TEXT, "<u2").reshape(64, 16))
        slab("import", c, path, npy)
    slab("attr", c, path, "units", "counts")
    slab("attr", c, path, "scale", "0.5")
    return layout(c, path), attrs(c, path)


def check_kept(c, path, want_layout, want_attrs, want_bytes, shape=None):
    got = layout(c, path)
    if shape is not None:
        want_layout = dict(want_layout, shape=list(shape))
    assert got == want_layout
    assert attrs(c, path) == want_attrs
    assert export(c, path) == want_bytes


# ------------------------------------------------------------------ new files

def test_new_files_are_growable_byte_streams(container, mounter, tmp_path):
    m = mounter(container)
    run("touch", mpath(m, "/empty"))
    assert os.path.getsize(mpath(m, "/empty")) == 0
    with open(mpath(m, "/echo"), "w") as f:
        f.write("hello\n")
    src = tmp_path / "src.bin"
    payload = os.urandom(300_000)
    src.write_bytes(payload)
    run("cp", src, mpath(m, "/copy.bin"))
    assert open(mpath(m, "/copy.bin"), "rb").read() == payload
    fd = os.open(mpath(m, "/excl"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.write(fd, b"x" * 10)
    os.close(fd)
    expect_errno(errno.EEXIST, os.open, mpath(m, "/excl"), os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    # Appending grows it; the size is what was written.
    with open(mpath(m, "/echo"), "a") as f:
        f.write("world\n")
    assert open(mpath(m, "/echo"), "rb").read() == b"hello\nworld\n"
    assert sorted(os.listdir(m.path)) == ["copy.bin", "echo", "empty", "excl"]
    assert m.unmount() == 0
    # Right after the unmount, the container holds every new file.
    assert export(container, "/copy.bin") == payload
    assert export(container, "/echo") == b"hello\nworld\n"
    j = info(container, "/empty")
    assert (j["dtype"], j["shape"], j["max_shape"]) == ("u1", [0], [None])
    assert info(container, "/excl")["shape"] == [10]


def test_unsupported_operations_answer_eperm(container, mounter):
    make_dataset(container, "/ds", np.arange(10, dtype="u1"), (5,))
    m = mounter(container)
    ds = mpath(m, "/ds")
    expect_errno(errno.EPERM, os.mknod, mpath(m, "/fifo"), 0o644 | 0o010000)
    expect_errno(errno.EPERM, os.symlink, "ds", mpath(m, "/sym"))
    expect_errno(errno.EPERM, os.link, ds, mpath(m, "/hard"))
    # Modes are not kept: a chmod is accepted and changes nothing.
    os.chmod(ds, 0o600)
    assert os.stat(ds).st_mode & 0o7777 == 0o644
    for argv in (["ln", "-s", "ds", mpath(m, "/sym")], ["ln", ds, mpath(m, "/hard")],
                 ["mkfifo", mpath(m, "/fifo")]):
        cp = run(*argv, check=False)
        assert cp.returncode != 0 and "Operation not permitted" in cp.stderr, (argv, cp.stderr)
        assert "Function not implemented" not in cp.stderr
    # mknod of a regular file is a new file.
    os.mknod(mpath(m, "/reg"), 0o644 | 0o100000)
    assert os.path.getsize(mpath(m, "/reg")) == 0
    assert sorted(os.listdir(m.path)) == ["ds", "reg"]
    assert "symlink" in m.log() and "link" in m.log() and "mknod" in m.log()
    assert m.unmount() == 0
    assert export(container, "/ds") == bytes(range(10))


# ---------------------------------------------------------- replacing a file

def test_cp_over_a_dataset_writes_in_place(container, mounter, tmp_path):
    want_layout, want_attrs = typed_text_dataset(container)
    m = mounter(container)
    new = TEXT.replace(b"gamma", b"GAMMA")
    (tmp_path / "t").write_bytes(new)
    run("cp", tmp_path / "t", mpath(m, "/g/text"))
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new)


def test_cp_a_of_a_typed_dataset_over_another_takes_its_layout(container, mounter, tmp_path):
    """cp -a over an existing dataset opens it with O_TRUNC, writes the
    bytes in place and sets the source's user.slab.* fields after: the
    fields give it the source's layout where the bytes fit, as on a file
    created at that name. Before, they were refused and cp -a (which
    ignores a failed xattr) exited 0 leaving the copied bytes read as the
    old dtype: u2 text shown as i4 rows. Plain cp (no fields) still writes
    in place, keeping the layout (test_cp_over_a_dataset_writes_in_place)."""
    c = container
    want_layout, want_attrs = typed_text_dataset(c)
    slab("mkdset", c, "/g/rows", "--dtype", "i4", "--shape", "3,8", "--maxshape", "unlimited,8", "--chunks", "2,8")
    slab("mkdset", c, "/g/fixed", "--dtype", "f4", "--shape", "64,8", "--chunks", "16,8")
    typed_text_dataset(c, "/g/text2")
    slab("mkdset", c, "/g/short", "--dtype", "u2", "--shape", "3,16", "--maxshape", "unlimited,16", "--chunks", "1,16")
    slab("mkdset", c, "/g/odd", "--dtype", "i2", "--shape", "4,6", "--fill", "-3")
    slab("mkdset", c, "/g/rows2", "--dtype", "i4", "--shape", "3,8", "--maxshape", "unlimited,8", "--chunks", "2,8")
    with tempfile.TemporaryDirectory() as d:
        npy = os.path.join(d, "r.npy")
        np.save(npy, np.arange(24, dtype="<i4").reshape(3, 8))
        slab("import", c, "/g/rows", npy)
        np.save(npy, np.frombuffer(SHORT, "<u2").reshape(3, 16))
        slab("import", c, "/g/short", npy)
        np.save(npy, ODD)
        slab("import", c, "/g/odd", npy)
        np.save(npy, np.arange(24, dtype="<i4").reshape(3, 8))
        slab("import", c, "/g/rows2", npy)
    m = mounter(c)
    for name in ("rows", "fixed"):
        run("cp", "-a", mpath(m, "/g/text"), mpath(m, f"/g/{name}"))
        assert open(mpath(m, f"/g/{name}"), "rb").read() == TEXT
        assert run("getfattr", "--only-values", "-n", "user.slab.dtype", mpath(m, f"/g/{name}")).stdout == "u2"
    # Through a copy outside the mount and back.
    run("cp", "-a", mpath(m, "/g/text"), tmp_path / "t")
    run("cp", "-a", tmp_path / "t", mpath(m, "/g/rows"))
    # Only a layout that holds exactly the bytes written is taken: a fixed
    # dataset keeps its size through O_TRUNC, so a growable source of 3
    # rows would "fit" 64 rows, the old fill values among them (an
    # exploratory tester's find); it keeps its own layout, and says so.
    run("cp", "-a", mpath(m, "/g/short"), mpath(m, "/g/text2"))
    # 48 bytes into a growable dataset of 32-byte rows: padded to two rows
    # by the write, and still given the source's layout, 48 bytes.
    run("cp", "-a", mpath(m, "/g/odd"), mpath(m, "/g/rows2"))
    assert os.path.getsize(mpath(m, "/g/rows2")) == 48
    assert m.unmount() == 0, m.log()
    assert layout(c, "/g/rows2") == layout(c, "/g/odd")
    assert export(c, "/g/rows2") == ODD.tobytes()
    for name in ("rows", "fixed"):
        got = layout(c, f"/g/{name}")
        assert got == want_layout, name
        assert attrs(c, f"/g/{name}") == want_attrs, name
        assert export(c, f"/g/{name}") == TEXT
    assert layout(c, "/g/text2") == want_layout
    assert export(c, "/g/text2") == SHORT + np.full((61, 16), 7, "<u2").tobytes()
    assert "do not describe its 2048 bytes" in m.log()


def test_sed_i_keeps_the_layout(container, mounter):
    want_layout, want_attrs = typed_text_dataset(container)
    m = mounter(container)
    run("sed", "-i", "s/beta/BETA/", mpath(m, "/g/text"))
    new = TEXT.replace(b"beta", b"BETA")
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert os.getxattr(mpath(m, "/g/text"), "user.slab.dtype") == b"u2"
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new)


def test_sed_i_grows_a_growable_dataset_by_whole_rows(container, mounter):
    want_layout, want_attrs = typed_text_dataset(container, growable=True)
    m = mounter(container)
    extra = b"zeta eta theta iota kappa lamb!\n"  # one 32-byte row
    assert len(extra) == 32
    run("sed", "-i", "$a zeta eta theta iota kappa lamb!", mpath(m, "/g/text"))
    assert open(mpath(m, "/g/text"), "rb").read() == TEXT + extra
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, TEXT + extra, shape=(65, 16))


def test_bytes_that_do_not_fit_replace_the_dataset_and_say_so(container, mounter):
    typed_text_dataset(container)
    m = mounter(container)
    run("sed", "-i", "s/alpha/a/", mpath(m, "/g/text"))  # 4 bytes shorter per line
    new = TEXT.replace(b"alpha", b"a")
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert "u2 64,16" in m.log() and "replace" in m.log()
    assert m.unmount() == 0
    j = info(container, "/g/text")
    assert (j["dtype"], j["shape"]) == ("u1", [len(new)])
    assert export(container, "/g/text") == new


def test_python_tempfile_and_os_replace(container, mounter):
    a = np.linspace(-1, 1, 600, dtype="<f8").reshape(20, 30)
    want = make_dataset(container, "/f", a, (5, 30), fill=-9)
    slab("attr", container, "/f", "long_name", "field")
    want_layout, want_attrs = layout(container, "/f"), attrs(container, "/f")
    m = mounter(container)
    new = (a * 2).astype("<f8").tobytes()
    fd, tmp = tempfile.mkstemp(dir=m.path, prefix=".f.", suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(new)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, mpath(m, "/f"))
    assert open(mpath(m, "/f"), "rb").read() == new
    assert np.fromfile(mpath(m, "/f"), "<f8").reshape(20, 30).tolist() == (a * 2).tolist()
    assert os.listdir(m.path) == ["f"]
    assert m.unmount() == 0
    check_kept(container, "/f", want_layout, want_attrs, new)
    assert want != new


def test_vim_save_keeps_the_layout(container, mounter):
    want_layout, want_attrs = typed_text_dataset(container)
    m = mounter(container)
    env = dict(os.environ, HOME=str(m.path.parent))
    cp = subprocess.run(["vim", "-es", "-N", "-u", "NONE", "-c", "%s/delta/DELTA/", "-c", "wq",
                         mpath(m, "/g/text")], capture_output=True, text=True, env=env,
                        stdin=subprocess.DEVNULL, timeout=60)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    new = TEXT.replace(b"delta", b"DELTA")
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert sorted(os.listdir(mpath(m, "/g"))) == ["text"]  # no swap or backup left
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new)


def test_vim_with_backupcopy_no_renames_and_keeps_the_layout(container, mounter):
    """backupcopy=no: vim renames the file away, writes a new one, removes
    the backup."""
    want_layout, want_attrs = typed_text_dataset(container)
    m = mounter(container)
    cp = subprocess.run(["vim", "-es", "-N", "-u", "NONE", "-c", "set backupcopy=no writebackup",
                         "-c", "%s/epsilon/EPSILON/", "-c", "wq", mpath(m, "/g/text")],
                        capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    new = TEXT.replace(b"epsilon", b"EPSILON")
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert sorted(os.listdir(mpath(m, "/g"))) == ["text"]
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new)


@pytest.mark.parametrize("overwrite", [False, True])
def test_tar_x_over_datasets(container, mounter, tmp_path, overwrite):
    want_layout, want_attrs = typed_text_dataset(container)
    a = np.arange(120, dtype="<i4").reshape(10, 12)
    make_dataset(container, "/g/ints", a, (5, 6))
    ints_layout = layout(container, "/g/ints")
    src = tmp_path / "src"
    (src / "g").mkdir(parents=True)
    new_text = TEXT.upper()
    new_ints = (a * -3).astype("<i4").tobytes()
    (src / "g" / "text").write_bytes(new_text)
    (src / "g" / "ints").write_bytes(new_ints)
    (src / "g" / "fresh").write_bytes(b"a brand new file\n")
    run("tar", "-cf", tmp_path / "a.tar", "-C", src, "g")
    m = mounter(container)
    args = ["tar", "-xf", tmp_path / "a.tar", "-C", m.path, "--no-same-owner"]
    if overwrite:
        args.append("--overwrite")
    run(*args)
    assert open(mpath(m, "/g/text"), "rb").read() == new_text
    assert open(mpath(m, "/g/ints"), "rb").read() == new_ints
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new_text)
    assert layout(container, "/g/ints") == ints_layout
    assert export(container, "/g/ints") == new_ints
    assert export(container, "/g/fresh") == b"a brand new file\n"
    assert info(container, "/g/fresh")["dtype"] == "u1"


def test_mv_from_another_filesystem(container, mounter, tmp_path):
    want_layout, want_attrs = typed_text_dataset(container)
    new = TEXT.replace(b"alpha", b"ALPHA")
    src = tmp_path / "text"
    src.write_bytes(new)
    m = mounter(container)
    run("mv", src, mpath(m, "/g/text"))
    assert not src.exists()
    assert open(mpath(m, "/g/text"), "rb").read() == new
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, new)


def test_rsync_both_ways_restores_bytes_and_types(container, mounter, tmp_path):
    """Export a tree with rsync -aX, edit it, delete the datasets on the
    mount, rsync -aX it back: every dataset comes back with its bytes, its
    layout (from the user.slab.* attributes rsync carries) and its
    attributes. Plain rsync -a over existing datasets keeps them too."""
    want_layout, want_attrs = typed_text_dataset(container)
    b = np.arange(48, dtype="<f4").reshape(4, 12) / 3
    make_dataset(container, "/g/sub/f4", b, (2, 12), fill=1.5)
    f4_layout = layout(container, "/g/sub/f4")
    tree = tmp_path / "tree"
    m = mounter(container)
    run("rsync", "-aX", mpath(m, "/"), str(tree) + "/")
    assert (tree / "g" / "text").read_bytes() == TEXT
    assert os.getxattr(tree / "g" / "text", "user.slab.dtype") == b"u2"
    assert os.getxattr(tree / "g" / "text", "user.units") == b"counts"
    # Plain rsync -a of an edited file over the dataset: kept by rename.
    edited = TEXT.replace(b"gamma", b"gamma".upper())
    (tree / "g" / "text").write_bytes(edited)
    st = os.stat(tree / "g" / "text")
    os.utime(tree / "g" / "text", (st.st_atime + 10, st.st_mtime + 10))  # rsync's quick check
    run("rsync", "-a", str(tree) + "/", mpath(m, "/"))
    assert open(mpath(m, "/g/text"), "rb").read() == edited
    # Delete everything on the mount and bring it back with -X.
    run("rm", "-rf", mpath(m, "/g"))
    assert os.listdir(m.path) == []
    run("rsync", "-aX", str(tree) + "/", mpath(m, "/"))
    assert open(mpath(m, "/g/sub/f4"), "rb").read() == b.astype("<f4").tobytes()
    assert m.unmount() == 0
    check_kept(container, "/g/text", want_layout, want_attrs, edited)
    assert layout(container, "/g/sub/f4") == f4_layout
    assert export(container, "/g/sub/f4") == b.astype("<f4").tobytes()


def test_git_init_and_commit(container, mounter):
    m = mounter(container)
    repo = mpath(m, "/repo")
    os.mkdir(repo)
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@x", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@x", HOME=repo)
    for argv in (["git", "init", "-q", repo],
                 ["git", "-C", repo, "config", "user.name", "t"]):
        subprocess.run(argv, check=True, env=env, capture_output=True, timeout=60)
    with open(os.path.join(repo, "README"), "w") as f:
        f.write("data lives here\n")
    for argv in (["git", "-C", repo, "add", "README"],
                 ["git", "-C", repo, "commit", "-q", "-m", "first"]):
        cp = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert cp.returncode == 0, (argv, cp.stderr)
    cp = subprocess.run(["git", "-C", repo, "log", "--oneline"], env=env, capture_output=True,
                        text=True, check=True, timeout=60)
    assert "first" in cp.stdout
    cp = subprocess.run(["git", "-C", repo, "fsck"], env=env, capture_output=True, text=True,
                        timeout=60)
    assert cp.returncode == 0, cp.stderr
    assert m.unmount() == 0
    assert export(container, "/repo/README") == b"data lives here\n"


# ------------------------------------------------- user.slab.* on new files

def test_fields_set_one_by_one_on_an_empty_file_keep_the_fill_and_sparseness(container, mounter):
    """tar --xattrs sets dtype, shape, fill and sparse one by one on an
    empty new file: the fill applies to elements never written (they read
    NaN, nothing is stored), so sparse=1 is still accepted (an exploratory
    tester found the fill stored 300 zeros and sparse refused)."""
    m = mounter(container)
    r = mpath(m, "/r")
    run("touch", r)
    for field, value in (("dtype", "f8"), ("shape", "300"), ("fill", "nan"), ("sparse", "1")):
        run("setfattr", "-n", f"user.slab.{field}", "-v", value, r)
    assert os.getxattr(r, "user.slab.stored") == b"0"
    assert os.getxattr(r, "user.slab.sparse") == b"1"
    got = np.fromfile(r, dtype="<f8")
    assert got.shape == (300,) and np.isnan(got).all()
    assert m.unmount() == 0, m.log()
    assert layout(container, "/r")["sparse"] is True
    assert np.isnan(np.frombuffer(export(container, "/r"), "<f8")).all()


def test_setfattr_types_an_empty_new_file(container, mounter):
    m = mounter(container)
    p = mpath(m, "/typed")
    run("touch", p)
    run("setfattr", "-n", "user.slab.dtype", "-v", "f4", p)
    run("setfattr", "-n", "user.slab.shape", "-v", "0,3", p)
    run("setfattr", "-n", "user.slab.maxshape", "-v", "unlimited,3", p)
    run("setfattr", "-n", "user.slab.chunks", "-v", "16,3", p)
    run("setfattr", "-n", "user.slab.filters", "-v", "shuffle,deflate=1", p)
    run("setfattr", "-n", "user.slab.fill", "-v", "-1.5", p)
    rows = np.arange(30, dtype="<f4").reshape(10, 3)
    with open(p, "ab") as f:
        f.write(rows.tobytes())
    assert os.getxattr(p, "user.slab.shape") == b"10,3"
    q = mpath(m, "/sparse")
    run("touch", q)
    run("setfattr", "-n", "user.slab.layout", "-v",
        "dtype=u2; shape=100,100; chunks=10,10; sparse=1; fill=9", q)
    assert os.path.getsize(q) == 20000
    # It stores nothing yet: fields can still change, one call each. A bad
    # value is EINVAL and changes nothing.
    run("setfattr", "-n", "user.slab.chunks", "-v", "20,25", q)
    cp = run("setfattr", "-n", "user.slab.dtype", "-v", "f3", q, check=False)
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr
    cp = run("setfattr", "-n", "user.slab.shape", "-v", "-1,2", q, check=False)
    assert cp.returncode != 0 and "Invalid argument" in cp.stderr
    assert os.getxattr(q, "user.slab.chunks") == b"20,25"
    # Once it holds data, its layout is fixed.
    with open(q, "r+b") as f:
        f.seek(202)
        f.write(b"\x01\x00")
    cp = run("setfattr", "-n", "user.slab.chunks", "-v", "10,10", q, check=False)
    assert cp.returncode != 0 and "Operation not permitted" in cp.stderr
    make_dataset_through_cli = mpath(m, "/echo")
    with open(make_dataset_through_cli, "w") as f:
        f.write("abc")
    assert m.unmount() == 0
    j = info(container, "/typed")
    assert (j["dtype"], j["shape"], j["max_shape"], j["chunks"], j["filters"], j["fill"]) == (
        "f4", [10, 3], [None, 3], [16, 3], "shuffle,deflate=1", -1.5)
    assert export(container, "/typed") == rows.tobytes()
    j = info(container, "/sparse")
    assert (j["dtype"], j["shape"], j["chunks"], j["sparse"], j["fill"], j["defined_elements"]) == (
        "u2", [100, 100], [20, 25], True, 9, 1)
    want = np.full((100, 100), 9, "<u2")
    want[1, 1] = 1
    assert export(container, "/sparse") == want.tobytes()
    m = mounter(container)
    cp = run("setfattr", "-n", "user.slab.dtype", "-v", "u4", mpath(m, "/echo"), check=False)
    assert cp.returncode != 0 and "Operation not permitted" in cp.stderr
    assert m.unmount() == 0
    assert info(container, "/echo")["dtype"] == "u1"


def test_a_dataset_typed_by_cp_a_keeps_its_layout_when_removed_and_made_again(container, mounter, tmp_path):
    """A dataset copied in with cp -a takes its layout from the user.slab.*
    fields, and stays a new file for a while (more fields may come). Removed
    and made again at once (tar x without --overwrite, rm then >), it keeps
    that layout, as a dataset made by slab does (an exploratory tester found
    it fell back to a u1 byte stream)."""
    c = container
    want_layout, want_attrs = typed_text_dataset(c)
    m = mounter(c)
    src = mpath(m, "/g/text")
    copy = tmp_path / "text.bak"
    run("cp", "-a", src, copy)
    z = mpath(m, "/g/z")
    run("cp", "-a", copy, z)
    assert run("getfattr", "--only-values", "-n", "user.slab.dtype", z).stdout == "u2"
    os.remove(z)
    new = TEXT[::-1]
    run("sh", "-c", 'cat "$1" > "$2"', "sh", str(copy), z)  # the same size, other bytes below
    with open(z, "r+b") as f:
        f.write(new)
    assert run("getfattr", "--only-values", "-n", "user.slab.dtype", z).stdout == "u2"
    assert m.unmount() == 0, m.log()
    check_kept(c, "/g/z", want_layout, want_attrs, new)


def test_rm_then_a_shell_redirect_keeps_the_layout(container, mounter, tmp_path):
    """`rm x; cmd > x`: the shell opens x, moves the descriptor to cmd's
    output and closes the first one before cmd writes, so the new file's
    first close finds it empty; the layout of the dataset removed waits for
    the close that brings the bytes."""
    c = container
    want_layout, want_attrs = typed_text_dataset(c)
    (tmp_path / "t.txt").write_bytes(TEXT)
    m = mounter(c)
    t = mpath(m, "/g/text")
    os.remove(t)
    run("sh", "-c", 'cat "$1" > "$2"', "sh", str(tmp_path / "t.txt"), t)
    assert m.unmount() == 0, m.log()
    check_kept(c, "/g/text", want_layout, want_attrs, TEXT)
