import os
import pickle

import numpy as np
import pytest
from pickle_payloads import Reduced, multiarray
import scipy.sparse as sp

from pdenets.data.safe_pickle import UnsafePickleError, load_array_pickle


class _Hostile:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_hostile_pickle_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Hostile(marker), protocol=2)
    with pytest.raises(UnsafePickleError, match="refusing to load .*system"):
        load_array_pickle(payload)
    assert not marker.exists()


@pytest.mark.parametrize("obj", [
    np.arange(6, dtype=np.float32).reshape(2, 3),
    sp.csr_matrix(np.eye(3, dtype=np.float32)),
    np.eye(2, dtype=np.int32),
])
def test_arrays_and_sparse_matrices_round_trip(obj, tmp_path):
    path = tmp_path / "x.pkl"
    path.write_bytes(pickle.dumps(obj, protocol=2))
    loaded = load_array_pickle(path)
    assert type(loaded) is type(obj)
    if sp.issparse(obj):
        assert (loaded != obj).nnz == 0
    else:
        assert np.array_equal(loaded, obj)


def test_defaultdict_of_lists_graph():
    import collections

    graph = collections.defaultdict(list, {0: [1, 2], 1: [0]})
    assert load_array_pickle(pickle.dumps(graph, protocol=2)) == graph


def test_other_builtins_are_refused():
    with pytest.raises(UnsafePickleError):
        load_array_pickle(pickle.dumps({1, 2}, protocol=2) if False else pickle.dumps(eval, protocol=2))


def test_truncated_pickle_raises():
    data = pickle.dumps(np.arange(100), protocol=2)
    with pytest.raises((pickle.UnpicklingError, EOFError, ValueError)):
        load_array_pickle(data[: len(data) // 2])


def test_nothing_on_the_allow_list_computes_more_than_it_is_given():
    import codecs

    # nested hex encoding doubles the bytes per level: a tiny file asking for gigabytes
    expanding = Reduced(codecs.encode, (Reduced(codecs.encode, (b"ab" * 8, "hex")), "hex"))
    with pytest.raises(UnsafePickleError, match="only latin1"):
        load_array_pickle(pickle.dumps(expanding, protocol=2))
    # latin1 is one byte per character: what numpy's own pickles use, still read
    assert load_array_pickle(pickle.dumps(np.arange(4, dtype=np.int16), protocol=2)).tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("shape, data, message", [
    ((10**11,), b"\x00" * 8, "more than the memory budget"),  # 800 GB declared by 8 bytes
    ((3,), b"\x00" * 8, "needs 24 bytes of data, the file holds 8"),
    ((-1,), b"\x00", "negative shape"),
])
def test_array_sizes_are_checked_before_numpy_allocates(shape, data, message):
    from pdenets.data import DatasetError

    hostile = Reduced(multiarray("_reconstruct"), (np.ndarray, (0,), b"b"), (1, shape, np.dtype("f8"), False, data))
    with pytest.raises(DatasetError, match=message):
        load_array_pickle(pickle.dumps(hostile, protocol=2))


def test_a_scalar_of_a_huge_dtype_is_refused_by_the_budget(monkeypatch):
    from pdenets.data import DatasetError

    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1M")
    huge_scalar = Reduced(multiarray("scalar"), (np.dtype(("V", 2**24)), b"\x00"))
    with pytest.raises(DatasetError, match="more than the memory budget"):
        load_array_pickle(pickle.dumps(huge_scalar, protocol=2))
    assert load_array_pickle(pickle.dumps(np.float32(1.5), protocol=2)) == np.float32(1.5)


def test_loaded_arrays_are_plain_numpy_arrays_everywhere():
    rows = sp.lil_matrix(np.eye(3))
    loaded = load_array_pickle(pickle.dumps({"a": np.ones(2), "b": [np.zeros(1)], "m": sp.csr_matrix(np.eye(2)),
                                             "l": rows, "o": np.array([[1, 2], [3]], dtype=object)}, protocol=2))
    assert type(loaded["a"]) is np.ndarray and type(loaded["b"][0]) is np.ndarray
    assert type(loaded["m"].data) is np.ndarray and type(loaded["m"].indices) is np.ndarray
    assert type(loaded["l"].rows) is np.ndarray and (loaded["l"].toarray() == np.eye(3)).all()
    assert type(loaded["o"]) is np.ndarray and loaded["o"][1] == [3]
