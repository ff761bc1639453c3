"""Datasets pickled by path and read by Dask: threads, the multiprocessing
scheduler and a dask.distributed LocalCluster of two worker processes, with
a writer committing between computations."""
import logging
import multiprocessing
import os
import pickle
import warnings

import dask
import dask.array as da
import numpy as np
import pytest

import slabfs
import slabfs.reopen


def fill(path, rows=64):
    data = np.arange(rows * 48, dtype="<f4").reshape(rows, 48) / 7
    with slabfs.File(path, "w") as f:
        f.create_dataset("g/x", data=data, chunks=(16, 16), maxshape=(None, 48), compression="gzip",
                         compression_opts=1)
    return data


def test_pickle_in_process_reuses_the_writer(path):
    data = fill(path)
    with slabfs.File(path, "r+") as f:
        ds = f["g/x"]
        ds[0, 0] = -1.0
        with pytest.warns(RuntimeWarning, match="uncommitted"):
            blob = pickle.dumps(ds)
        back = pickle.loads(blob)
        assert back.file is f and back[0, 0] == -1.0     # this process's writable File
        f.flush()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pickle.dumps(ds)                              # committed: no warning
    back = pickle.loads(blob)                             # the writer is gone: read-only reopen
    assert back.file.mode == "r" and back[0, 0] == -1.0 and back[1, 1] == data[1, 1]
    assert pickle.loads(blob).file is back.file           # one File per process and path
    with pytest.raises(TypeError, match="pickle a Dataset"):
        pickle.dumps(back.file)


def _sum_rows(ds):
    return float(np.asarray(ds[...], dtype="f8").sum()), os.getpid(), ds.file.mode


def test_pickled_dataset_in_spawned_processes(path):
    data = fill(path)
    with slabfs.File(path) as f:
        ds = f["g/x"]
        with multiprocessing.get_context("spawn").Pool(2) as pool:
            results = pool.map(_sum_rows, [ds, ds, ds])
    for total, pid, mode in results:
        assert total == pytest.approx(data.astype("f8").sum()) and pid != os.getpid() and mode == "r"


def test_dask_tokens_are_stable_only_for_read_only_files(path):
    fill(path)
    with slabfs.File(path) as f:
        a, b = da.from_array(f["g/x"], chunks=(16, 16)), da.from_array(f["g/x"], chunks=(16, 16))
        assert a.name == b.name and a.chunks == ((16,) * 4, (16,) * 3)
    with slabfs.File(path, "r+") as f:
        assert da.from_array(f["g/x"]).name != da.from_array(f["g/x"]).name


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_dask_schedulers(path, scheduler):
    data = fill(path)
    with slabfs.File(path) as f:
        ds = f["g/x"]
        arr = da.from_array(ds, chunks=ds.chunks)
        with dask.config.set(scheduler=scheduler, num_workers=2):
            mean = arr.mean().compute()
            cols = arr[5:60:3, ::-2].sum(axis=0).compute()
        assert mean == pytest.approx(data.mean(dtype="f8"), rel=1e-6)
        np.testing.assert_allclose(cols, data[5:60:3, ::-2].sum(axis=0, dtype="f8"), rtol=1e-5)


def _cached_files():
    return sorted(slabfs.reopen._readers)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # tornado's, inside distributed
def test_local_cluster_follows_a_writer(path):
    distributed = pytest.importorskip("distributed")
    data = fill(path)
    logging.getLogger("distributed").setLevel(logging.ERROR)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  silence_logs=logging.ERROR) as cluster, distributed.Client(cluster) as client:
        with slabfs.File(path, "r+") as writer:
            ds = writer["g/x"]
            arr = da.from_array(ds, chunks=ds.chunks)
            assert client.compute(arr.sum()).result() == pytest.approx(data.sum(dtype="f8"), rel=1e-6)
            # The workers opened the container themselves, read-only.
            cached = client.run(_cached_files)
            assert len(cached) == 2 and all(v in ([], [os.path.realpath(path)]) for v in cached.values())
            assert any(cached.values())
            # The writer appends rows and commits; a new computation sees them.
            more = np.full((32, 48), 2.0, dtype="f4")
            ds.resize(96, axis=0)
            ds[64:] = more
            writer.flush()
            arr = da.from_array(ds, chunks=ds.chunks)
            total = client.compute(arr.sum()).result()
            assert total == pytest.approx(data.sum(dtype="f8") + more.sum(dtype="f8"), rel=1e-6)
            row_means = client.compute(arr.mean(axis=1)).result()
            np.testing.assert_allclose(row_means[64:], 2.0)
