"""gnn-benchmark .npz graphs: both key layouts, labels as ids or one-hot rows, stored entries as edges, named
graphs of the data folder, and save_graph_npz's round trip."""

import numpy as np
import pytest
import torch
from datafiles import CORA_NPZ, requires_data

from pdenets.data.graphs import DatasetNotFoundError, load_graph, load_npz

from ...graph_fixtures import write_sbm_npz


@requires_data(CORA_NPZ)
def test_npz_cora_matches_documented_statistics():
    data = load_graph("cora")
    assert data.num_nodes == 2708 and data.edge_index.shape[1] == 5429
    assert torch.bincount(data.y).tolist() == [298, 418, 818, 426, 217, 180, 351]


def test_user_npz_graph(tmp_path):
    path = write_sbm_npz(tmp_path / "mine.npz")
    data = load_graph(str(path))
    assert data.num_nodes == 180 and data.x.shape == (180, 24) and data.name == "mine"


def test_malformed_npz(tmp_path):
    path = tmp_path / "bad.npz"
    np.savez(path, labels=np.zeros(3))
    with pytest.raises(ValueError, match="expected the gnn-benchmark layout"):
        load_npz(path)


def _ring(n=8):
    import scipy.sparse as sp

    adjacency = sp.csr_matrix((np.ones(n), (np.arange(n), (np.arange(n) + 1) % n)), shape=(n, n))
    features = np.arange(n * 3, dtype=np.float32).reshape(n, 3) % 5
    return adjacency, features, np.arange(n) % 2


def test_dotted_layout_with_sparse_attributes_and_object_arrays(tmp_path):
    import scipy.sparse as sp

    adjacency, features, labels = _ring()
    attributes = sp.csr_matrix(features)
    np.savez(
        tmp_path / "dotted.npz",
        **{
            "adj_matrix.data": adjacency.data,
            "adj_matrix.indices": adjacency.indices,
            "adj_matrix.indptr": adjacency.indptr,
            "adj_matrix.shape": adjacency.shape,
            "attr_matrix.data": attributes.data,
            "attr_matrix.indices": attributes.indices,
            "attr_matrix.indptr": attributes.indptr,
            "attr_matrix.shape": attributes.shape,
            "labels": labels,
            "idx_to_node": np.array([{"name": i} for i in range(8)], dtype=object),
            "idx_to_class": np.array(["a", "b"], dtype=object),
        },
    )
    data = load_graph(str(tmp_path / "dotted.npz"))
    assert torch.equal(data.x, torch.from_numpy(features)) and data.y.tolist() == labels.tolist()
    assert data.edge_index.tolist() == [list(range(8)), [1, 2, 3, 4, 5, 6, 7, 0]]


def test_dotted_layout_with_dense_attributes_and_underscore_layout_agree(tmp_path):
    adjacency, features, labels = _ring()
    np.savez(
        tmp_path / "dense.npz",
        **{
            "adj_matrix.data": adjacency.data,
            "adj_matrix.indices": adjacency.indices,
            "adj_matrix.indptr": adjacency.indptr,
            "adj_matrix.shape": adjacency.shape,
            "attr_matrix": features,
            "labels": np.eye(2)[labels],
        },
    )  # one-hot labels
    np.savez(
        tmp_path / "plain.npz",
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=adjacency.shape,
        attr_matrix=features,
        labels=labels,
    )
    first, second = load_graph(str(tmp_path / "dense.npz")), load_graph(str(tmp_path / "plain.npz"))
    for key in ("x", "edge_index", "y"):
        assert torch.equal(first[key], second[key]), key


@pytest.mark.parametrize("rule, width", [("identity", 8), ("degree", 1)])
def test_graphs_without_features(tmp_path, rule, width):
    adjacency, _, labels = _ring()
    np.savez(
        tmp_path / "bare.npz",
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=adjacency.shape,
        labels=labels,
    )
    data = load_graph(str(tmp_path / "bare.npz"), missing_features=rule)
    assert data.x.shape == (8, width)
    if rule == "identity":
        assert torch.equal(data.x, torch.eye(8))
    else:
        assert data.x[:, 0].tolist() == [1.0] * 8  # every node of the directed ring has one out-edge


def test_save_graph_npz_round_trip_and_never_overwrites(tmp_path):
    from torch_geometric.data import Data

    from pdenets.data import save_graph_npz

    graph = Data(
        x=torch.rand(5, 4),
        edge_index=torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]]),
        y=torch.tensor([0, 1, 1, 0, -1]),
        num_nodes=5,
    )
    path = save_graph_npz(graph, tmp_path / "mine.npz")
    loaded = load_graph(str(path))
    assert torch.equal(loaded.x, graph.x) and torch.equal(loaded.edge_index, graph.edge_index)
    assert torch.equal(loaded.y, graph.y)
    with pytest.raises(FileExistsError, match="exists; pass overwrite=True"):
        save_graph_npz(graph, path)
    sparse = Data(x=graph.x.to_sparse(), edge_index=graph.edge_index, y=graph.y, num_nodes=5)
    assert torch.equal(load_graph(str(save_graph_npz(sparse, path, overwrite=True))).x, graph.x)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.npz"]  # no temporary file left behind


def test_save_graph_npz_then_the_cli_trains_on_it(tmp_path):
    import json

    from pdenets.cli import main
    from pdenets.data import save_graph_npz

    raw = load_graph(str(write_sbm_npz(tmp_path / "sbm.npz")))
    path = save_graph_npz(raw, tmp_path / "exported.npz")
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "node-classification",
                "--dataset",
                str(path),
                "--model",
                "diff-resnet",
                "--splits",
                "1",
                "--inits",
                "1",
                "--workers",
                "1",
                "--max-epochs",
                "10",
                "--train-per-class",
                "10",
                "--val-per-class",
                "10",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    assert results["table"]["exported"]["diff-resnet"]["runs"] == 1
    from pdenets.data.transforms import prepared_graph

    original = prepared_graph(str(tmp_path / "sbm.npz"), None)
    assert (results["graphs"]["exported"]["nodes"], results["graphs"]["exported"]["edges"]) == (
        original.num_nodes,
        original.num_edges,
    )


def test_the_same_graph_as_an_edge_list_and_as_an_npz_trains_to_the_same_numbers(tmp_path):
    """A graph written as a text edge list (ids 0..N-1, labels and features beside it) is the graph of the
    .npz file: node-classification gives the same accuracies."""
    import json

    from pdenets.cli import main

    raw = load_graph(str(write_sbm_npz(tmp_path / "sbm.npz")))
    path = tmp_path / "sbm.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in raw.edge_index.T.tolist()))
    (tmp_path / "sbm-labels.txt").write_text("".join(f"{n} {c}\n" for n, c in enumerate(raw.y.tolist())))
    (tmp_path / "sbm-features.txt").write_text(
        "".join(f"{n} " + " ".join(repr(v) for v in row) + "\n" for n, row in enumerate(raw.x.tolist()))
    )
    text = load_graph(str(path))
    assert torch.equal(text.edge_index, raw.edge_index) and torch.equal(text.x, raw.x)
    assert torch.equal(text.y, raw.y)
    accuracies = []
    for spec, out in ((tmp_path / "sbm.npz", "a"), (path, "b")):
        options = ["--splits", "1", "--inits", "1", "--workers", "1", "--max-epochs", "10"]
        options += ["--train-per-class", "10", "--val-per-class", "10", "--no-progress"]
        command = ["run", "node-classification", "--dataset", str(spec), "--model", "diff-resnet"]
        assert main([*command, *options, "--out", str(tmp_path / out)]) == 0
        results = json.loads((tmp_path / out / "results.json").read_text())
        cell = results["table"]["sbm"]["diff-resnet"]
        accuracies.append({key: value for key, value in cell.items() if key != "seconds_per_run"})
    assert accuracies[0] == accuracies[1] and accuracies[0]["runs"] == 1


def _arrays(adjacency, **extra):
    return dict(
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=np.array(adjacency.shape),
        **extra,
    )


def test_one_hot_labels_with_empty_rows_are_unlabelled_in_either_layout(tmp_path):
    import scipy.sparse as sp

    adjacency, features, _ = _ring(4)
    onehot = np.array([[0, 1, 0], [0, 0, 0], [1, 0, 0], [0, 0, 1]], dtype=np.float32)
    np.savez(tmp_path / "dense.npz", **_arrays(adjacency, attr_matrix=features, labels=onehot))
    sparse = sp.csr_matrix(onehot)
    layout = {f"labels_{part}": getattr(sparse, part) for part in ("data", "indices", "indptr")}
    np.savez(
        tmp_path / "sparse.npz",
        **_arrays(adjacency, attr_matrix=features, labels_shape=np.array([4, 3]), **layout),
    )
    for name in ("dense.npz", "sparse.npz"):
        assert load_npz(tmp_path / name).y.tolist() == [1, -1, 0, 2], name


def test_stored_entries_become_directed_edges_whatever_their_weight(tmp_path):
    import scipy.sparse as sp

    adjacency = sp.csr_matrix(np.array([[0, 2.5, 0], [0, 0, 0], [0.1, 7, 0]]))
    np.savez(tmp_path / "w.npz", **_arrays(adjacency, labels=np.array([0, 1, 0])))
    data = load_npz(tmp_path / "w.npz", missing_features="degree", name="weighted")
    assert data.edge_index.tolist() == [[0, 2, 2], [1, 0, 1]] and data.name == "weighted"
    assert data.x[:, 0].tolist() == [1.0, 0.0, 2.0]  # out-degrees: weights are not read


def test_named_graphs_come_from_the_data_folder_and_bare_names_need_a_path(tmp_path, monkeypatch):
    adjacency, features, labels = _ring(5)
    (tmp_path / "npz").mkdir()
    np.savez(tmp_path / "npz" / "citeseer.npz", **_arrays(adjacency, attr_matrix=features, labels=labels))
    data = load_graph("CiteSeer", tmp_path)
    assert data.name == "citeseer" and data.source == str(tmp_path / "npz" / "citeseer.npz")
    with pytest.raises(DatasetNotFoundError) as caught:
        load_graph("pubmed", tmp_path)
    message = str(caught.value)
    assert (
        f"missing dataset file {tmp_path / 'npz' / 'pubmed.npz'}. Searched data directory {tmp_path}"
        in message
    )
    assert "github.com/shchur/gnn-benchmark" in message and "never downloads" in message
    monkeypatch.chdir(tmp_path / "npz")
    assert load_graph("citeseer.npz").name == "citeseer"  # a file of the working directory
    with pytest.raises(ValueError, match="unknown graph 'other.npz'"):
        load_graph("other.npz")  # neither a file here nor a path
    with pytest.raises(DatasetNotFoundError, match="missing dataset file sub/other.npz"):
        load_graph("sub/other.npz")


def test_save_graph_npz_writes_edges_row_by_row_and_refuses_other_suffixes(tmp_path):
    from torch_geometric.data import Data

    from pdenets.data import save_graph_npz

    graph = Data(x=torch.eye(3), edge_index=torch.tensor([[2, 0, 1], [0, 2, 0]]), y=torch.tensor([0, 1, 0]))
    loaded = load_npz(save_graph_npz(graph, tmp_path / "g.npz"))
    assert loaded.edge_index.tolist() == [[0, 1, 2], [2, 0, 0]]  # the same edges, in row-major order
    stored = np.load(tmp_path / "g.npz")
    assert stored["adj_data"].dtype == np.float32 and stored["adj_data"].tolist() == [1.0, 1.0, 1.0]
    assert stored["labels"].dtype == np.int64 and stored["attr_shape"].tolist() == [3, 3]
    with pytest.raises(ValueError, match="g.zip: the file name must end in .npz"):
        save_graph_npz(graph, tmp_path / "g.zip")


@pytest.mark.parametrize("rule, width", [("identity", 8), ("degree", 1)])
def test_a_graph_named_from_the_data_folder_takes_the_missing_features_rule_too(tmp_path, rule, width):
    """``cora`` read by name, as its path: the same ``missing_features`` rule where the file has no
    attributes (the name once always gave the identity)."""
    adjacency, _, labels = _ring()
    (tmp_path / "npz").mkdir()
    np.savez(tmp_path / "npz" / "cora.npz", **_arrays(adjacency, labels=labels))
    by_name = load_graph("cora", tmp_path, missing_features=rule)
    by_path = load_graph(str(tmp_path / "npz" / "cora.npz"), missing_features=rule)
    assert by_name.x.shape == (8, width)
    assert torch.equal(by_name.x, by_path.x)
