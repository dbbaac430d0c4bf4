import os
import pickle

import numpy as np
import pytest
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
