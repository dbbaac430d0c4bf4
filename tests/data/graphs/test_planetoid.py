"""The Planetoid pickles: test rows placed at the ids test.index lists, ids in no file left empty and
unlabelled, the neighbour dict read as edges, parts that disagree, and the real citation graphs."""

import pickle
import re

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from datafiles import requires_data

from pdenets.data.graphs import (
    PLANETOID_NAMES,
    DatasetError,
    DatasetNotFoundError,
    load_graph,
    load_planetoid,
)
from pdenets.data.paths import resolve_data_dir

DATA = resolve_data_dir()
PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")


def planetoid(folder, parts=PARTS):
    """The Planetoid pickles ``planetoid/<folder>/raw/ind.<name>.<part>``."""
    return tuple(f"planetoid/{folder}/raw/ind.{folder.lower()}.{part}" for part in parts)


@requires_data(*planetoid("Cora"))
def test_planetoid_cora_statistics():
    data = load_planetoid("cora")
    assert data.num_nodes == 2708 and data.x.shape == (2708, 1433)
    pairs = {tuple(e) for e in data.edge_index.T.tolist() if e[0] != e[1]}
    undirected = {tuple(sorted(p)) for p in pairs}
    assert len(undirected) == 5278
    assert torch.bincount(data.y).tolist() == [351, 217, 418, 818, 426, 298, 180]
    assert torch.all(data.x.sum(1) > 0)


@requires_data(*planetoid("CiteSeer"))
def test_planetoid_citeseer_gap_is_filled_and_unlabelled():
    data = load_planetoid("citeseer")
    assert data.num_nodes == 3327
    missing = data.y == -1
    assert int(missing.sum()) == 15
    assert torch.all(data.x[missing].sum(1) == 0)


@requires_data(*planetoid("PubMed", [part for part in PARTS if part != "allx"]))  # the data has no allx
def test_pubmed_without_allx_names_the_file_and_the_source():
    with pytest.raises(DatasetNotFoundError) as info:
        load_planetoid("pubmed")
    message = str(info.value)
    assert "ind.pubmed.allx" in message and str(DATA) in message and "github.com" in message
    assert "never downloads" in message


def _write_planetoid(root, name="cora", **parts):
    """``ind.<name>.*`` of a small graph: 4 training rows, 2 test rows placed by test.index."""
    folder = root / "planetoid" / PLANETOID_NAMES[name] / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    defaults = {
        "x": sp.csr_matrix(np.eye(4, 3, dtype=np.float32)),
        "allx": sp.csr_matrix(np.arange(12, dtype=np.float32).reshape(4, 3)),
        "tx": sp.csr_matrix(np.array([[9, 0, 1], [0, 8, 2]], dtype=np.float32)),
        "y": np.eye(2)[[0, 1, 0, 1]],
        "ally": np.eye(2)[[0, 1, 1, 0]],
        "ty": np.eye(2)[[1, 0]],
        "graph": {0: [1], 1: [0, 7], 2: [], 3: [5], 4: [], 5: [3], 6: [], 7: [1]},
        "test.index": "7\n5\n",
    }
    for part, value in {**defaults, **parts}.items():
        path = folder / f"ind.{name}.{part}"
        if value is None:
            continue
        if isinstance(value, str):
            path.write_text(value)
        else:
            path.write_bytes(pickle.dumps(value, protocol=2))
    return root


def test_test_rows_go_to_the_listed_ids_and_unlisted_ids_are_empty_and_unlabelled(tmp_path):
    data = load_planetoid("cora", _write_planetoid(tmp_path))
    expected = np.zeros((8, 3), dtype=np.float32)
    expected[:4] = np.arange(12).reshape(4, 3)
    expected[7], expected[5] = [9, 0, 1], [0, 8, 2]  # test.index lists 7 first: tx's first row is node 7
    assert data.num_nodes == 8 and torch.equal(data.x, torch.from_numpy(expected))
    assert data.y.tolist() == [0, 1, 1, 0, -1, 0, -1, 1]  # nodes 4 and 6 are in no file: unlabelled
    assert data.edge_index.tolist() == [[0, 1, 1, 3, 5, 7], [1, 0, 7, 5, 3, 1]]
    assert data.name == "planetoid/cora" and data.source == str(tmp_path / "planetoid" / "Cora" / "raw")
    assert torch.equal(load_graph("Planetoid/CORA", tmp_path).x, data.x)


def test_neighbour_lists_may_be_tuples_or_arrays_but_not_floats_or_boolean_nodes(tmp_path):
    graph = {0: (1, 2), 1: np.array([0], dtype=np.int32), 2: [], 5: [0]}
    data = load_planetoid("cora", _write_planetoid(tmp_path, graph=graph))
    assert data.num_nodes == 8 and data.edge_index.tolist() == [[0, 0, 1, 5], [1, 2, 0, 0]]
    for bad in ({0: [1.5]}, {True: [1]}, {0: [[1, 2], [3]]}):
        _write_planetoid(tmp_path, graph=bad)
        with pytest.raises(DatasetError, match="expected integer node ids and lists of integer neighbours"):
            load_planetoid("cora", tmp_path)


@pytest.mark.parametrize(
    "parts, message",
    [
        ({"ty": np.eye(3)[[1, 0]]}, "allx/tx (3/3 features) or ally/ty (2/3 classes) disagree"),
        ({"tx": sp.csr_matrix(np.ones((2, 4), dtype=np.float32))}, "allx/tx (3/4 features)"),
        ({"test.index": "7\n"}, "ind.cora.test.index: lists 1 test nodes but ind.cora.tx has 2 rows"),
    ],
    ids=["classes", "features", "test count"],
)
def test_parts_whose_widths_or_counts_disagree_are_named(tmp_path, parts, message):
    with pytest.raises(DatasetError, match=re.escape(message)):
        load_planetoid("cora", _write_planetoid(tmp_path, **parts))


def test_unknown_names_and_the_pubmed_file_that_holds_most_features(tmp_path):
    with pytest.raises(
        ValueError, match=r"unknown Planetoid dataset 'reddit'; choose from \['citeseer', 'cora'"
    ):
        load_graph("planetoid/reddit", tmp_path)
    _write_planetoid(tmp_path, "pubmed", allx=None)
    with pytest.raises(DatasetNotFoundError) as caught:
        load_planetoid("PubMed", tmp_path)
    assert "ind.pubmed.allx (the features of 18,657 PubMed nodes live only in this file)" in str(caught.value)
