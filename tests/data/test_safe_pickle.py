import os
import pickle
import time

import numpy as np
import pytest
import scipy.sparse as sp
from pickle_payloads import Reduced, multiarray

from pdenets.data import DatasetError
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


@pytest.mark.parametrize(
    "obj",
    [
        np.arange(6, dtype=np.float32).reshape(2, 3),
        sp.csr_matrix(np.eye(3, dtype=np.float32)),
        np.eye(2, dtype=np.int32),
    ],
)
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


@pytest.mark.parametrize(
    "shape, data, message",
    [
        ((10**11,), b"\x00" * 8, "more than the memory budget"),  # 800 GB declared by 8 bytes
        ((3,), b"\x00" * 8, "needs 24 bytes of data, the file holds 8"),
        ((-1,), b"\x00", "negative shape"),
    ],
)
def test_array_sizes_are_checked_before_numpy_allocates(shape, data, message):
    from pdenets.data import DatasetError

    hostile = Reduced(
        multiarray("_reconstruct"), (np.ndarray, (0,), b"b"), (1, shape, np.dtype("f8"), False, data)
    )
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
    loaded = load_array_pickle(
        pickle.dumps(
            {
                "a": np.ones(2),
                "b": [np.zeros(1)],
                "m": sp.csr_matrix(np.eye(2)),
                "l": rows,
                "o": np.array([[1, 2], [3]], dtype=object),
            },
            protocol=2,
        )
    )
    assert type(loaded["a"]) is np.ndarray and type(loaded["b"][0]) is np.ndarray
    assert type(loaded["m"].data) is np.ndarray and type(loaded["m"].indices) is np.ndarray
    assert type(loaded["l"].rows) is np.ndarray and (loaded["l"].toarray() == np.eye(3)).all()
    assert type(loaded["o"]) is np.ndarray and loaded["o"][1] == [3]


# ----------------------------------------------------------------------------------------
# shared references: a pickle names an object once and refers to it many times


def _nested_pairs(depth, leaf):
    """``x = [x, x]`` ``depth`` times: ``depth + 1`` distinct lists, ``2**depth`` paths to the leaf."""
    value = leaf
    for _ in range(depth):
        value = [value, value]
    return value


def test_one_array_under_many_keys_is_counted_once_per_key(monkeypatch):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1M")
    block = np.zeros(8192, dtype=np.float64)  # 64 KiB, pickled once
    payload = pickle.dumps({key: block for key in range(200)}, protocol=2)
    assert len(payload) < 70_000
    with pytest.raises(DatasetError) as caught:
        load_array_pickle(payload)
    assert str(caught.value) == (
        "<bytes>: its data, with every shared reference counted as a copy, would need 12.5 MiB, more than "
        "the memory "
        "budget 1.0 MiB; a small file can refer to one array many times, and stacking or converting the data "
        "copies "
        "it once per reference. If the file is genuine, raise $PDENETS_MEMORY_BUDGET (e.g. 32G)"
    )
    loaded = load_array_pickle(pickle.dumps({key: block for key in range(10)}, protocol=2))
    assert loaded[0] is loaded[9] and type(loaded[0]) is np.ndarray  # one plain array, still shared


def test_sixty_nested_pairs_of_one_list_are_refused_at_once():
    """429 bytes, 2^60 paths: the walk visits 61 lists, the expanded size is about 2^64 bytes."""
    payload = pickle.dumps(_nested_pairs(60, []), protocol=2)
    assert len(payload) < 500
    started = time.perf_counter()
    with pytest.raises(DatasetError) as caught:
        load_array_pickle(payload)
    assert time.perf_counter() - started < 5
    assert str(caught.value).startswith(
        "<bytes>: its data, with every shared reference counted as a copy, would "
        "need 1.678e+7 TiB, more than the memory budget"
    )


def test_shared_objects_are_converted_once_and_stay_shared(monkeypatch):
    """2^22 paths through 23 lists: the old walk took seconds (one visit per path), this one visits each list
    once."""
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1G")
    nested = _nested_pairs(22, np.arange(3))
    started = time.perf_counter()
    loaded = load_array_pickle(pickle.dumps(nested, protocol=2))
    assert time.perf_counter() - started < 1.0
    assert loaded[0] is loaded[1] and loaded[0][0] is loaded[1][1]
    leaf = loaded
    for _ in range(22):
        leaf = leaf[1]
    assert type(leaf) is np.ndarray and leaf.tolist() == [0, 1, 2]
    pair = load_array_pickle(pickle.dumps((np.ones(2), [np.ones(2)]), protocol=2))
    assert type(pair[0]) is np.ndarray and type(pair[1][0]) is np.ndarray


def test_a_pickle_that_refers_to_itself_is_refused():
    loop = [np.zeros(2)]
    loop.append(loop)
    with pytest.raises(DatasetError) as caught:
        load_array_pickle(pickle.dumps(loop, protocol=2))
    assert str(caught.value) == (
        "<bytes>: its data refers to itself (a cycle of references); a file of arrays, lists "
        "and dicts never needs one"
    )


def test_a_malformed_memory_budget_is_named_not_reported_as_a_corrupt_file(monkeypatch):
    from pdenets.data.limits import MemoryBudgetError

    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "abc")
    with pytest.raises(MemoryBudgetError) as caught:
        load_array_pickle(pickle.dumps(np.arange(3), protocol=2))
    assert str(caught.value) == "$PDENETS_MEMORY_BUDGET='abc' is not a size such as 4000000000, 512M or 16G"


def test_sizes_of_any_magnitude_are_reported_in_one_line(monkeypatch):
    from pdenets.data.limits import check_allocation, expanded_bytes, format_bytes

    assert format_bytes(10**400) == "9.095e+387 TiB" and format_bytes(3 * 2**29) == "1.5 GiB"
    assert format_bytes(float("inf")) == "infinitely many bytes"
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1K")
    with pytest.raises(
        DatasetError,
        match=r"^f.json: the snapshots would need 5.821e\+389 TiB, more than the memory "
        r"budget 1.0 KiB",
    ):
        check_allocation(10**400, 64, "the snapshots", "f.json")
    assert expanded_bytes([np.zeros(4), np.zeros(4)]) == 16 + 2 * 32


def test_empty_arrays_load_and_bytes_takes_no_size():
    """Protocol 2 writes an empty array's data as ``bytes()``; ``bytes(n)`` would allocate n bytes and is
    refused."""
    assert load_array_pickle(pickle.dumps({"a": np.zeros(0, np.float32)}, protocol=2))["a"].shape == (0,)
    with pytest.raises(UnsafePickleError, match="refusing bytes\\(...\\) with arguments"):
        load_array_pickle(pickle.dumps(Reduced(bytes, (10**12,)), protocol=2))


def test_a_memo_index_far_beyond_the_pickle_is_refused_at_once(tmp_path):
    """26 random bytes whose LONG_BINPUT names memo entry 1,330,228,426 (found by the fuzz test): Python's
    unpickler grows its memo to that size (tens of seconds, gigabytes) before failing; refused first."""
    import time

    path = tmp_path / "memo.pkl"
    path.write_bytes(b"M~mr\xca\xacIO\x91\xcd\xb4\x0e\xb1qN\x82\x0e S\xb7\x90\xfa\x18\xaa\xa1?")
    start = time.perf_counter()
    with pytest.raises(DatasetError, match=r"memo\.pkl: memo index 1,330,228,426 after 1 opcodes"):
        load_array_pickle(path)
    assert time.perf_counter() - start < 5
    # real pickles number their memo entries from 0 (protocols 0-4, the ones the allow-list reads)
    shared = [np.arange(3)]
    for protocol in range(5):
        loaded = load_array_pickle(pickle.dumps({"a": shared, "b": shared, "c": [shared, shared]}, protocol))
        assert np.array_equal(loaded["c"][1][0], np.arange(3))
