"""numpy indexing of datasets against a numpy model: 300 random selections
read and written on dense, filtered and sparse datasets (reads compared with
what numpy gives for the same key, writes applied to both), then the whole
dataset compared after a commit and a reopen. Keys mix integers (negative
too), slices with any step (negative too) and bounds past either end,
Ellipsis, np.newaxis and one index array."""
import numpy as np
import pytest

import slabfs

SHAPE = (23, 17, 9)
CHUNKS = (5, 4, 3)

KINDS = {
    "dense": dict(),
    "filtered": dict(compression="gzip", compression_opts=3, shuffle=True, fletcher32=True),
    "sparse": dict(sparse=True, fillvalue=-7),
}


def random_slice(rng, n):
    step = int(rng.choice([1, 1, 2, 3, 5, -1, -2, -4]))
    def bound():
        r = rng.random()
        if r < 0.25:
            return None
        if r < 0.35:
            return int(rng.integers(-3 * n, 3 * n))  # past either end: clamped
        return int(rng.integers(-n, n + 1))
    return slice(bound(), bound(), step)


def random_key(rng, shape, allow_fancy=True):
    items = []
    fancy_used = False
    for n in shape:
        r = rng.random()
        if r < 0.25:
            items.append(int(rng.integers(-n, n)))
        elif r < 0.33 and allow_fancy and not fancy_used:
            fancy_used = True
            if rng.random() < 0.5:
                items.append(rng.integers(-n, n, size=int(rng.integers(0, 6))))
            else:
                items.append(rng.random(n) < 0.4)
        else:
            items.append(random_slice(rng, n))
    # Drop trailing items, or replace a run by Ellipsis, or add newaxis.
    r = rng.random()
    if r < 0.15:
        items = items[:int(rng.integers(0, len(items) + 1))]
    elif r < 0.3:
        a = int(rng.integers(0, len(items) + 1))
        b = int(rng.integers(a, len(items) + 1))
        items = items[:a] + [Ellipsis] + items[b:]
    if rng.random() < 0.15:
        items.insert(int(rng.integers(0, len(items) + 1)), np.newaxis)
    if len(items) == 1 and rng.random() < 0.5:
        return items[0]
    return tuple(items)


def check_read(ds, model, key):
    want = model[key]
    got = ds[key]
    if np.isscalar(want) or np.ndim(want) == 0:
        assert np.ndim(got) == 0 and isinstance(got, np.generic), (key, got)
    else:
        assert isinstance(got, np.ndarray)
        assert got.shape == want.shape, (key, got.shape, want.shape)
    assert np.asarray(got).dtype == model.dtype
    np.testing.assert_array_equal(got, want, err_msg=repr(key))


@pytest.mark.parametrize("kind", list(KINDS))
def test_300_random_writes_and_reads_match_numpy(path, kind):
    rng = np.random.default_rng(list(KINDS).index(kind))
    fill = KINDS[kind].get("fillvalue", 0)
    model = np.full(SHAPE, fill, dtype="<i4")
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", shape=SHAPE, dtype="i4", chunks=CHUNKS, **KINDS[kind])
        assert ds.sparse == (kind == "sparse")
        for i in range(300):
            # A write of a random selection, checked by reading it back,
            # then a read of another random selection.
            key = random_key(rng, SHAPE)
            target = model[key]
            r = rng.random()
            if r < 0.2:
                value = int(rng.integers(-1000, 1000))  # scalar broadcast
            elif r < 0.3 and np.ndim(target) >= 1:
                value = rng.integers(-1000, 1000, size=np.shape(target)[-1:]).astype("f8")  # row broadcast, cast
            else:
                value = rng.integers(-1000, 1000, size=np.shape(target)).astype("<i4")
            model[key] = value
            ds[key] = value
            check_read(ds, model, key)
            check_read(ds, model, random_key(rng, SHAPE))
            if i % 50 == 0:
                f.flush()
        np.testing.assert_array_equal(ds[...], model)
    with slabfs.File(path, "r") as f:
        np.testing.assert_array_equal(f["a"][...], model)
        np.testing.assert_array_equal(np.asarray(f["a"]), model)


def test_sparse_erase_and_defined_match_a_model(path):
    rng = np.random.default_rng(7)
    shape = (40, 30)
    model = np.full(shape, 5, dtype="<u2")
    defined = np.zeros(shape, dtype=bool)
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("s", shape=shape, dtype="u2", chunks=(8, 8), sparse=True, fillvalue=5)
        for _ in range(150):
            a0, a1 = sorted(rng.integers(0, shape[0] + 1, size=2))
            b0, b1 = sorted(rng.integers(0, shape[1] + 1, size=2))
            box = np.s_[a0:a1, b0:b1]
            if rng.random() < 0.6:
                v = rng.integers(0, 60000, size=(a1 - a0, b1 - b0)).astype("<u2")
                ds[box] = v
                model[box] = v
                defined[box] = True
            else:
                ds.erase(box)
                model[box] = 5
                defined[box] = False
            key = random_key(rng, shape, allow_fancy=False)
            np.testing.assert_array_equal(ds.defined_mask(key), defined[key], err_msg=repr(key))
        np.testing.assert_array_equal(ds[...], model)
        assert ds.count_defined() == defined.sum()
        painted = np.zeros(shape, dtype=bool)
        boxes = ds.defined()
        for box in boxes:
            assert not painted[box].any(), "boxes overlap"
            painted[box] = True
        np.testing.assert_array_equal(painted, defined)
        # Strided erase: every other row of a band.
        ds.erase(np.s_[10:30:2, 5:25])
        model[10:30:2, 5:25] = 5
        defined[10:30:2, 5:25] = False
        np.testing.assert_array_equal(ds[...], model)
        np.testing.assert_array_equal(ds.defined_mask(), defined)
    with slabfs.File(path) as f:
        np.testing.assert_array_equal(f["s"][...], model)
        assert f["s"].count_defined() == defined.sum()


def test_one_engine_call_per_strided_read(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", data=np.arange(10000, dtype="f4").reshape(100, 100), chunks=(10, 10))
        calls = []
        real = ds._h

        class Counting:
            def __getattr__(self, name):
                return getattr(real, name)

            def read(self, *args):
                calls.append(args[:3])
                return real.read(*args)

        ds._h = Counting()
        np.testing.assert_array_equal(ds[3:97:7, ::-3], np.arange(10000, dtype="f4").reshape(100, 100)[3:97:7, ::-3])
        assert calls == [([3, 0], [7, 3], [14, 34])]
        calls.clear()
        ds[[1, 3, 5, 7], 0]  # evenly spaced: one strided hyperslab
        assert calls == [([1, 0], [2, 1], [4, 1])]


@pytest.mark.parametrize("key, exc", [
    ((0, 0, 0), IndexError),               # too many indices
    ((5,), IndexError),                    # out of range
    ((-6,), IndexError),
    ((Ellipsis, Ellipsis), IndexError),
    ((slice(0, 3, 0),), ValueError),       # step 0, as Python's slice
    ((1.5,), TypeError),
    (("a",), TypeError),
    (([0, 1], [0, 1]), TypeError),         # two index arrays
    (([0, 9],), IndexError),
    ((np.array([[0, 1]]),), TypeError),    # a 2-D index array
    ((np.ones(3, dtype=bool),), IndexError),  # wrong boolean length
    ((True,), TypeError),
])
def test_bad_keys_raise_what_numpy_raises(path, key, exc):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", shape=(5, 4), dtype="i2")
        with pytest.raises(exc):
            ds[key]
        with pytest.raises(exc):
            ds[key] = 1
        np.testing.assert_array_equal(ds[...], 0)


def test_bad_values_change_nothing(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", data=np.arange(20, dtype="i4").reshape(4, 5))
        with pytest.raises(ValueError):
            ds[0:2] = np.ones((3, 5))         # does not broadcast
        with pytest.raises(ValueError):
            ds[0] = "text"
        np.testing.assert_array_equal(ds[...], np.arange(20).reshape(4, 5))


def test_broadcast_write_in_blocks(path, monkeypatch):
    import slabfs.dataset as dsmod
    monkeypatch.setattr(dsmod, "_WRITE_BLOCK_BYTES", 1000)
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", shape=(50, 60), dtype="f8", chunks=(7, 11))
        ds[3:47:2, ::-1] = np.arange(60.0)    # a broadcast, flipped source, written 2 rows at a time
        want = np.zeros((50, 60))
        want[3:47:2, ::-1] = np.arange(60.0)
        np.testing.assert_array_equal(ds[...], want)


def test_numpy_integer_keys(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", data=np.arange(30).reshape(5, 6))
        model = np.arange(30).reshape(5, 6)
        for key in [np.int8(2), np.array(3), np.array(-1), (np.uint64(4), slice(np.int64(1), None, np.int16(2))),
                    (slice(None), np.array([5, 0]))]:
            check_read(ds, model, key)
        with pytest.raises(IndexError):
            ds[np.array(5)]


def test_empty_selections(path):
    with slabfs.File(path, "w") as f:
        ds = f.create_dataset("a", shape=(0, 4), maxshape=(None, 4), dtype="u1")
        assert ds[...].shape == (0, 4)
        assert ds[:, 1:1].shape == (0, 0)
        ds[...] = 7   # nothing to write
        ds.resize((3, 4))
        assert ds[5:2].shape == (0, 4)
        assert ds[[], 0].shape == (0,)
        np.testing.assert_array_equal(ds[...], 0)
