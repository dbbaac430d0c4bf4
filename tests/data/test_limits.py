"""The memory budget: sizes a file declares are refused before anything is allocated, the budget's exact
boundary, and what loaded data expands to once every shared reference counts as a copy."""

import io
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from pdenets.data import DatasetError, load_graph, load_npz
from pdenets.data.graphs import load_edge_list, read_npz_arrays
from pdenets.data.limits import check_allocation, check_expanded, expanded_bytes, memory_budget


def _graph_arrays(n=6, features=3, labels=None):
    adjacency = sp.csr_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    attributes = sp.csr_matrix(np.eye(n, features, dtype=np.float32) + 0.5)
    return {
        "adj_data": adjacency.data,
        "adj_indices": adjacency.indices,
        "adj_indptr": adjacency.indptr,
        "adj_shape": np.array([n, n]),
        "attr_data": attributes.data,
        "attr_indices": attributes.indices,
        "attr_indptr": attributes.indptr,
        "attr_shape": np.array([n, features]),
        "labels": np.array([0, 1, 0, 1, 0, 1][:n]) if labels is None else labels,
    }


def _write(path, **changes):
    arrays = _graph_arrays()
    for key, value in changes.items():
        if value is None:
            arrays.pop(key)
        else:
            arrays[key] = value
    np.savez(path, **arrays)
    return path


def test_a_member_declaring_more_than_it_holds_is_refused_before_allocation(tmp_path):
    """A 17 KB archive whose array header claims 180 x 150 million float64 (216 GB)."""
    path = tmp_path / "huge.npz"
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "<f8", "fortran_order": False, "shape": (180, 150_000_000)}
    )
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("attr_matrix.npy", header.getvalue() + bytes(16_000))
    assert path.stat().st_size < 20_000
    with pytest.raises(DatasetError, match="declares shape \\(180, 150000000\\) of float64 .* but holds 16"):
        read_npz_arrays(path)


def test_total_declared_size_is_checked_against_the_budget(tmp_path, monkeypatch):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1K")
    path = _write(tmp_path / "g.npz", attr_data=np.ones(12, dtype=np.float32), labels=np.arange(6) % 2)
    np.savez(path, big=np.zeros(1000), **_graph_arrays())
    with pytest.raises(DatasetError, match="its arrays would need .* more than the memory budget 1.0 KiB"):
        load_npz(path)


# ----------------------------------------------------------------------------------------
# edge-list folders


def _folder(tmp_path, **files):
    folder = tmp_path / "graph"
    folder.mkdir()
    defaults = {"edges.csv": "source,target\n0,1\n1,2\n2,3\n", "labels.csv": "0\n1\n0\n1\n"}
    for name, text in {**defaults, **files}.items():
        if text is not None:
            (folder / name).write_text(text) if isinstance(text, str) else np.save(folder / name, text)
    return folder


def test_a_text_edge_list_above_the_memory_budget_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    (tmp_path / "g.txt").write_text("0 1\n" * 20_000)
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1M")
    with pytest.raises(DatasetError, match="the parsed lines"):
        load_graph(str(tmp_path / "g.txt"))


def _npy_header_only(shape):
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<i8", "fortran_order": False, "shape": shape})
    return header.getvalue() + bytes(16)


def test_declared_shapes_whose_product_overflows_int64_are_refused_by_the_budget(tmp_path):
    folder = _folder(tmp_path, **{"edges.csv": None})
    (folder / "edges.npy").write_bytes(_npy_header_only((2**40, 2**40)))  # 2^80 elements: np.prod wraps to 0
    with pytest.raises(DatasetError) as caught:
        load_edge_list(folder, missing_features="degree")
    assert str(caught.value).startswith(
        f"{folder / 'edges.npy'}: an array of shape (1099511627776, 1099511627776) "
        "would need 8.796e+12 TiB, more than the memory budget"
    )
    path = tmp_path / "huge.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("labels.npy", _npy_header_only((10**29,)))
    with pytest.raises(DatasetError) as caught:
        read_npz_arrays(path)
    assert str(caught.value) == (
        f"{path}: member labels declares shape (100000000000000000000000000000,) of int64 "
        "(800000000000000000000000000000 bytes) but holds 144 bytes: the file is damaged"
    )


def test_a_malformed_memory_budget_is_named_by_every_archive_reader(tmp_path, monkeypatch):
    from pdenets.data.limits import MemoryBudgetError

    npz = _write(tmp_path / "g.npz")
    folder = _folder(
        tmp_path,
        **{
            "edges.csv": None,
            "edges.npy": np.array([[0, 1], [1, 2]]),
            "labels.csv": None,
            "labels.npy": np.array([0, 1, 0]),
        },
    )
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "abc")
    for read in (lambda: load_npz(npz), lambda: load_edge_list(folder, missing_features="degree")):
        with pytest.raises(MemoryBudgetError) as caught:
            read()
        assert (
            str(caught.value) == "$PDENETS_MEMORY_BUDGET='abc' is not a size such as 4000000000, 512M or 16G"
        )


# ----------------------------------------------------------------------------------------
# the budget itself, and what loaded data expands to


def test_an_allocation_of_exactly_the_budget_passes_and_one_item_more_is_refused(monkeypatch):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1.5K")
    assert memory_budget() == 1536
    check_allocation(192, 8, "the rows", "t.csv")  # 1536 bytes
    with pytest.raises(DatasetError) as caught:
        check_allocation(193, 8, "the rows", "t.csv", reason="the header lies")
    assert str(caught.value) == (
        "t.csv: the rows would need 1.5 KiB, more than the memory budget 1.5 KiB; the header lies. "
        "If the file is genuine, raise $PDENETS_MEMORY_BUDGET (e.g. 32G)"
    )
    for count in (float("inf"), float("nan")):  # a count that is no finite number is never allocated
        with pytest.raises(DatasetError, match="would need infinitely many bytes"):
            check_allocation(count, 1, "the rows", "t.csv")


def test_expanded_bytes_counts_each_kind_of_value_by_hand():
    assert [expanded_bytes(v) for v in (None, True, 3, 2.5, 1j, "héllo", b"abc")] == [8, 8, 8, 8, 16, 20, 3]
    assert expanded_bytes(np.float32(1)) == 4 and expanded_bytes(torch.zeros(3, dtype=torch.float16)) == 6
    block = np.zeros(10)  # 80 bytes
    pair = [block, block]
    assert expanded_bytes(pair) == 2 * 8 + 2 * 80
    assert expanded_bytes((pair, pair)) == 2 * 8 + 2 * 176  # sharing at every level doubles
    assert expanded_bytes({"k": block, 1: "ab"}) == 2 * 16 + (4 + 80) + (8 + 8)
    objects = np.empty(2, dtype=object)
    objects[0], objects[1] = block, None
    assert expanded_bytes(objects) == objects.nbytes + 80 + 8
    assert expanded_bytes(frozenset({1, 2})) == 2 * 8 + 2 * 8


def test_check_expanded_refuses_cycles_and_sizes_above_the_budget_but_not_shared_branches(monkeypatch):
    block = np.zeros(10)
    shared = [block]
    diamond = [shared, [shared], {"again": shared}]  # one object reached three ways is no cycle
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1K")
    check_expanded(diamond, "its data", "d.pkl")
    outer = []
    outer.append({"inner": [outer]})
    with pytest.raises(DatasetError, match=r"^c.pkl: its data refers to itself \(a cycle of references\)"):
        check_expanded(outer, "its data", "c.pkl")
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "175")
    check_expanded(block, "its data", "p.pkl")
    with pytest.raises(DatasetError) as caught:
        check_expanded([block, block], "its data", "p.pkl")  # 176 bytes
    assert str(caught.value).startswith(
        "p.pkl: its data, with every shared reference counted as a copy, would need 176 B, more than the "
        "memory budget 175 B; a small file can refer to one array many times"
    )
