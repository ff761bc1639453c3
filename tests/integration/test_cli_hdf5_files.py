"""`slab`'s reading commands on HDF5 and netCDF-4 files, read in place
through the HDF5 store (no import): ls, ls -l, info, attr, chunks, defined,
export of one dataset and fsck, against what h5py reads; every write
command refused by name with the file left as it was; bad input (not HDF5,
truncated, a directory, damaged chunks).

The files are made in the test by h5py and netCDF4 with the HDF5 store's
own fixture maker (tests/stores/hdf5/make_fixtures.py), whose manifest says
what each dataset holds, what the store skips and what is not data."""
import hashlib
import json
import pathlib

import numpy as np
import pytest
from store_fixtures import make_store_fixtures

from conftest import fails, slab



@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    """(directory, manifest lines split into fields)."""
    d = tmp_path_factory.mktemp("hdf5_files")
    return d, make_store_fixtures("hdf5", d)


def reads(fx):
    d, lines = fx
    return [(d / ln[1], ln[2], ln[3], tuple(int(n) for n in ln[4].split(",")), d / ln[5], int(ln[6]))
            for ln in lines if ln[0] == "read"]


def digest(p):
    return hashlib.sha256(pathlib.Path(p).read_bytes()).hexdigest()


def test_export_of_every_dataset_matches_h5py(fx, tmp_path):
    for f, path, dtype, shape, expect, _ in reads(fx):
        out = tmp_path / "out.bin"
        slab("export", f, path, out, "--format", "raw")
        assert out.read_bytes() == expect.read_bytes(), (f.name, path)
        npy = tmp_path / "out.npy"
        slab("export", f, path, npy)
        arr = np.load(npy)
        assert arr.dtype == np.dtype("<" + dtype) and arr.shape == shape, (f.name, path)
        assert arr.tobytes() == expect.read_bytes(), (f.name, path)


def test_ls_recursive_lists_the_readable_tree_and_the_skipped_objects(fx):
    d, lines = fx
    out = slab("ls", "-r", d / "basic.h5").stdout.splitlines()
    listed = {"/" + ln.rstrip("/") for ln in out if not ln.startswith("skipped: ")}
    for f, path, *_ in reads(fx):
        if f.name == "basic.h5":
            assert path in listed, path
    assert {"/g", "/g/sub"} <= listed
    skipped = [ln for ln in out if ln.startswith("skipped: ")]
    for ln in lines:
        if ln[0] == "skip" and ln[1] == "basic.h5":
            assert ln[3] not in listed
            assert any(s.startswith(f"skipped: {ln[3]}: ") and len(s) > len(f"skipped: {ln[3]}: ")
                       for s in skipped), (ln[3], skipped)
    # Listing a group shows only its own skipped children.
    assert not any(s.startswith("skipped: ") for s in slab("ls", d / "basic.h5", "/g").stdout.splitlines())


def test_ls_long_has_the_container_columns(fx):
    d, _ = fx
    out = slab("ls", "-l", d / "basic.h5").stdout.splitlines()
    assert out[0].split() == ["KIND", "DTYPE", "SHAPE", "CHUNKS", "SIZE", "STORED", "RATIO", "NAME"]
    rows = {ln.split()[-1]: ln.split() for ln in out[1:] if not ln.startswith("skipped: ")}
    assert rows["deflate_shuffle"][:4] == ["dataset", "f4", "100,70", "32,16"]
    assert rows["deflate_shuffle"][4] == str(100 * 70 * 4)
    assert rows["g/"][0] == "group"
    assert rows["contiguous"][3] == "20,30"  # one chunk: the shape
    assert rows["big_endian"][1] == "f8"  # converted to little-endian


def test_info_and_attr_show_attributes_and_skipped_ones(fx):
    d, _ = fx
    f = d / "basic.h5"
    root = json.loads(slab("info", "--json", f, "/").stdout)
    assert root["kind"] == "group"
    assert root["attributes"]["title"] == "store fixtures"
    assert root["attributes"]["numbers"] == [1, 2, 3]
    assert {s["path"] for s in root["skipped"]} >= {"/strings", "/lzf", "/compound", "/soft"}
    ds = json.loads(slab("info", "--json", f, "/deflate_shuffle").stdout)
    assert ds["dtype"] == "f4" and ds["shape"] == [100, 70] and ds["chunks"] == [32, 16]
    assert ds["attributes"] == {"units": "K"}
    assert ds["skipped"] == []
    text = slab("info", f, "/").stdout
    assert "skipped: /strings: " in text
    assert slab("attr", f, "/deflate_shuffle").stdout == "units = K\n"
    assert slab("attr", f, "/deflate_shuffle", "units").stdout == "K\n"
    fails("attr", f, "/deflate_shuffle", "nope")
    sparse = json.loads(slab("info", "--json", f, "/sparse").stdout)
    assert sparse["fill"] == -3
    assert sparse["defined_elements"] == 2 * 10 * 10  # two stored chunks of 10x10


def test_chunks_and_defined_follow_the_stored_chunks(fx):
    for f, path, _, shape, _, stored in reads(fx):
        chunks = json.loads(slab("chunks", "--json", f, path).stdout)
        assert len(chunks) == stored, (f.name, path)
        assert chunks == sorted(chunks, key=lambda c: c["coords"])
    d, _ = fx
    out = slab("defined", d / "basic.h5", "/sparse").stdout.splitlines()
    assert out == ["[0:10, 0:10]", "[20:30, 30:40]", "200 elements defined in 2 boxes"]


def test_netcdf_shows_variables_not_bare_dimensions(fx):
    d, _ = fx
    f = d / "netcdf.nc"
    names = slab("ls", f).stdout.split()
    assert {"lat", "temp", "bounds", "x"} <= set(names)
    assert "nv" not in names and "_nc4_non_coord_x" not in names
    temp = json.loads(slab("info", "--json", f, "/temp").stdout)
    assert json.loads(temp["attributes"]["_ARRAY_DIMENSIONS"]) == ["time", "lat", "lon"]
    assert temp["attributes"]["units"] == "K"
    assert temp["fill"] == -999.0


WRITES = [
    ["mkgroup", "{f}", "/newgroup"],
    ["mkdset", "{f}", "/newds", "--dtype", "f4", "--shape", "4"],
    ["rm", "{f}", "/contiguous"],
    ["mv", "{f}", "/contiguous", "/moved"],
    ["resize", "{f}", "/resizable", "20,8"],
    ["attr", "{f}", "/", "title", "changed"],
    ["attr", "{f}", "/", "title", "--delete"],
    ["erase", "{f}", "/sparse", "0:5,0:5"],
    ["import", "{f}", "/contiguous", "{npy}"],
    ["repack", "{f}", "{out}"],
    ["fsck", "--repair", "{f}"],
]


@pytest.mark.parametrize("args", WRITES, ids=lambda a: "_".join(a[:1] + [x for x in a[3:4] if x[0] != "{"]))
def test_write_commands_refuse_an_hdf5_file_by_name(fx, tmp_path, args):
    d, _ = fx
    f = d / "basic.h5"
    npy = tmp_path / "in.npy"
    np.save(npy, np.zeros((20, 30)))
    before = digest(f)
    argv = [a.format(f=f, npy=npy, out=tmp_path / "out.slab") for a in args]
    cp = fails(*argv)
    assert f"{f} is an HDF5 file: slab changes only slab containers; use `slab import`" in cp.stderr, cp.stderr
    assert digest(f) == before
    assert not (tmp_path / "out.slab").exists()


def test_fsck_reads_every_chunk_and_names_a_damaged_one(fx):
    d, _ = fx
    cp = slab("fsck", d / "basic.h5")
    assert cp.stdout.rstrip().endswith("clean"), cp.stdout
    assert "skipped: /strings: " in cp.stdout
    j = json.loads(slab("fsck", "--json", d / "basic.h5").stdout)
    assert j["status"] == "clean" and j["format"] == "hdf5"
    assert j["chunks"] == j["chunks_verified"] > 0
    assert j["datasets"] == sum(1 for r in reads(fx) if r[0].name == "basic.h5")
    for name in ("bad_inflate.h5", "bad_fletcher.h5"):
        cp = slab("fsck", d / name, check=False)
        assert cp.returncode == 4, (name, cp.stdout, cp.stderr)
        assert "DAMAGED" in cp.stdout
        assert "damage: /d: " in cp.stdout and " chunk [" in cp.stdout, cp.stdout
        j = json.loads(slab("fsck", "--json", d / name, check=False).stdout)
        assert j["status"] == "damaged" and len(j["findings"]) == 1
        assert j["chunks_verified"] == j["chunks"] - 1
    # The structures only: nothing read, so nothing found.
    assert slab("fsck", "--no-data", d / "bad_inflate.h5").returncode == 0


def test_reading_a_damaged_chunk_fails_naming_it(fx, tmp_path):
    d, _ = fx
    cp = fails("export", d / "bad_fletcher.h5", "/d", tmp_path / "o.npy")
    assert "chunk" in cp.stderr and "/d" in cp.stderr
    assert not (tmp_path / "o.npy").exists()


def test_bad_input(fx, tmp_path):
    d, _ = fx
    fails("ls", d / "not_hdf5.h5")  # neither HDF5 nor a container
    cp = fails("ls", d / "truncated.h5")
    assert "truncated.h5" in cp.stderr
    fails("info", d / "truncated.h5", "/")
    assert slab("fsck", d / "truncated.h5", check=False).returncode == 1
    fails("ls", tmp_path)  # a directory
    fails("ls", tmp_path / "missing.h5")
    fails("info", d / "basic.h5", "/nope")
    fails("export", d / "basic.h5", "/g", tmp_path / "g.npy")  # a group
    fails("export", d / "basic.h5", "/strings", tmp_path / "s.npy")  # skipped: not there
    zarr = tmp_path / "s.zarr"
    zarr.mkdir()
    (zarr / ".zgroup").write_text('{"zarr_format": 2}')
    assert slab("ls", zarr).returncode == 0  # a Zarr store reads in place too (stores/zarr)
    assert "is a Zarr store: slab changes only slab containers" in fails("mkgroup", zarr, "/g").stderr
    nc3 = tmp_path / "classic.nc"
    nc3.write_bytes(b"CDF\x01" + bytes(60))
    assert "netCDF" in fails("info", nc3, "/").stderr
    # A tree export reads any store: the HDF5 file becomes a Zarr store,
    # what the store skips named on stdout.
    cp = slab("export", "-q", d / "basic.h5", tmp_path / "tree.zarr")
    assert "skipped /strings: " in cp.stdout, cp.stdout
    assert (tmp_path / "tree.zarr" / ".zmetadata").exists()
    nc3_out = fails("export", nc3, tmp_path / "tree2.zarr")
    assert "netCDF" in nc3_out.stderr and not (tmp_path / "tree2.zarr").exists()


def test_a_container_reads_the_same_after_import(fx, tmp_path):
    """The one code path: an imported copy lists and describes as the file does."""
    d, _ = fx
    f = d / "userblock.h5"
    c = tmp_path / "copy.slab"
    slab("import", "-q", c, f)
    assert slab("ls", "-r", c).stdout == slab("ls", "-r", f).stdout
    for path in ("/chunked", "/contiguous"):
        a = json.loads(slab("info", "--json", c, path).stdout)
        b = json.loads(slab("info", "--json", f, path).stdout)
        assert a["attributes"] == b["attributes"] and a["shape"] == b["shape"] and a["dtype"] == b["dtype"]
        assert "skipped" not in a and b["skipped"] == []
