import numpy as np
import pytest
import torch
from datafiles import CORA_NPZ, requires_data

from pdenets.data.graphs import DatasetError, DatasetNotFoundError, load_graph, load_npz, load_planetoid
from pdenets.data.paths import resolve_data_dir

from ..graph_fixtures import write_sbm_npz

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


def test_missing_data_dir_error(tmp_path):
    with pytest.raises(DatasetNotFoundError, match=str(tmp_path)):
        load_graph("cora", tmp_path)
    with pytest.raises(DatasetNotFoundError, match="ind.citeseer"):
        load_graph("planetoid/citeseer", tmp_path)


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


def test_unknown_spec():
    with pytest.raises(ValueError, match="unknown graph"):
        load_graph("imagenet")


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


def test_edge_list_folder(tmp_path):
    folder = tmp_path / "mygraph"
    folder.mkdir()
    (folder / "edges.csv").write_text("source,target\n0,1\n1,2\n2,3\n3,0\n")
    np.save(folder / "labels.npy", np.array([0, 1, 0, -1]))
    (folder / "features.csv").write_text("1,0\n0,1\n1,1\n0,0\n")
    data = load_graph(str(folder))
    assert data.num_nodes == 4 and data.name == "mygraph" and data.y.tolist() == [0, 1, 0, -1]
    assert data.edge_index.tolist() == [[0, 1, 2, 3], [1, 2, 3, 0]] and data.x[2].tolist() == [1.0, 1.0]


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


def test_text_edge_list_with_labels_and_features(tmp_path):
    """Nodes named by numbers are ordered by value (not as text), class names by name; unlabelled is -1."""
    path = tmp_path / "net.tsv"
    path.write_text("% KONECT-style header\n10\t9\n9\t100\n\n# a comment\n100\t10\n")
    (tmp_path / "net-labels.tsv").write_text("9 b\n100 a\n7 b\n")  # node 7 has no edge
    (tmp_path / "net-features.tsv").write_text("7 0 1\n9 1 0\n10 0.5 0.5\n100 2 -1\n")
    data = load_graph(str(path))
    assert data.node_names == ["7", "9", "10", "100"] and data.class_names == ["a", "b"]
    assert data.edge_index.tolist() == [[2, 1, 3], [1, 3, 2]] and data.y.tolist() == [1, 1, -1, 0]
    assert data.x.tolist() == [[0, 1], [1, 0], [0.5, 0.5], [2, -1]] and data.name == "net"


def test_text_edge_list_of_words_with_numbered_classes_and_degree_features(tmp_path):
    path = tmp_path / "people.edges"
    path.write_text("bob alice\ncarol,bob\n")
    (tmp_path / "people-labels.edges").write_text("alice 1\ncarol 0\n")
    data = load_graph(str(path), missing_features="degree")
    assert data.node_names == ["alice", "bob", "carol"] and getattr(data, "class_names", None) is None
    assert data.y.tolist() == [1, -1, 0] and data.x.squeeze(1).tolist() == [0.0, 1.0, 1.0]


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


def test_integer_node_ids_are_one_node_per_value_however_written(tmp_path):
    """``7``, ``07`` and ``+7`` are the same node (named ``7``), in the edges, labels and features alike; a
    spelling given twice in the labels is a node given twice; labels ``1`` and ``1.0`` are one class."""
    path = tmp_path / "ids.txt"
    path.write_text("7 1\n07 +1\n0003 +7\n")
    (tmp_path / "ids-labels.txt").write_text("+7 1.0\n1 0\n3 1\n")
    (tmp_path / "ids-features.txt").write_text("007 1 0\n01 0 1\n3 1 1\n")
    data = load_graph(str(path))
    assert data.node_names == ["1", "3", "7"] and data.y.tolist() == [0, 1, 1]
    assert data.edge_index.tolist() == [[2, 2, 1], [0, 0, 2]] and data.x.tolist() == [[0, 1], [1, 1], [1, 0]]
    assert getattr(data, "class_names", None) is None
    (tmp_path / "ids-labels.txt").write_text("7 1\n07 0\n")
    given_again = r"ids-labels.txt, line 2: node '7' is given again \(first on line 1\)"
    with pytest.raises(DatasetError, match=given_again):
        load_graph(str(path))
    (tmp_path / "ids-labels.txt").write_text("7 1\n1 0\n")
    # longest ids: 2^63 - 1 however padded or signed; one more is refused naming the file and line
    (tmp_path / "ids-features.txt").unlink()
    path.write_text("+0009223372036854775807 -9223372036854775807\n1 7\n")
    assert load_graph(str(path)).node_names[-1] == "9223372036854775807"
    path.write_text("1 7\n9223372036854775808 1\n")
    too_large = r"ids.txt, line 2: '9223372036854775808' is too large for a node id"
    with pytest.raises(DatasetError, match=too_large):
        load_graph(str(path))


def test_among_word_names_two_spellings_of_one_number_are_refused_naming_both(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_text("alice 7\nbob 07\n")
    with pytest.raises(DatasetError) as caught:
        load_graph(str(path))
    assert str(caught.value) == (
        f"{path}, line 2: node '07' and node '7' ({path}, line 1) spell the same number; name each node one "
        "way"
    )
    path.write_text("alice bob\n")
    (tmp_path / "mixed-labels.txt").write_text("alice 1\nbob 1.0\ncarol cat\n")
    one_number = r"mixed-labels.txt, line 2: label '1.0' and label '1' \(line 1\) are one"
    with pytest.raises(DatasetError, match=one_number):
        load_graph(str(path))
    (tmp_path / "mixed-labels.txt").write_text("alice 1.5\nbob cat\n")  # a name that is not whole is a name
    assert load_graph(str(path)).class_names == ["1.5", "cat"]


@pytest.mark.parametrize("case", ["missing", "dangling link", "device"])
def test_an_edge_list_path_that_is_no_file_says_what_it_is(tmp_path, case):
    path = tmp_path / "graph.txt"
    if case == "dangling link":
        path.symlink_to(tmp_path / "gone.txt")
    elif case == "device":
        path.symlink_to("/dev/zero")
    with pytest.raises(DatasetError) as caught:
        load_graph(str(path))
    message = str(caught.value)
    assert "unknown graph" not in message
    expected = {
        "missing": "missing edge-list file",
        "dangling link": "a symbolic link to",
        "device": "not a regular file (a character device",
    }[case]
    assert expected in message and str(path) in message


def test_an_edge_list_without_any_label_names_the_labels_file_to_write(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text("1 2\n2 3\n")
    with pytest.raises(DatasetError) as caught:
        load_graph(str(path))
    assert str(caught.value) == (
        f"{path}: no node is labelled: write one 'node label' pair per line in "
        f"{tmp_path / 'plain-labels.txt'} "
        "beside it"
    )
    (tmp_path / "plain-labels.txt").write_text("1 -1\n")
    with pytest.raises(DatasetError, match=r"plain-labels.txt: no node is labelled \(every label is -1\)"):
        load_graph(str(path))
