"""Edge-list folders: CSV and .npy tables read as ids or features, out-degree and identity features, graphs
without edges, and tables that hold no ids."""

import numpy as np
import pytest
import torch

from pdenets.data.graphs import DatasetError, DatasetNotFoundError, load_edge_list, load_graph


def test_edge_list_folder(tmp_path):
    folder = tmp_path / "mygraph"
    folder.mkdir()
    (folder / "edges.csv").write_text("source,target\n0,1\n1,2\n2,3\n3,0\n")
    np.save(folder / "labels.npy", np.array([0, 1, 0, -1]))
    (folder / "features.csv").write_text("1,0\n0,1\n1,1\n0,0\n")
    data = load_graph(str(folder))
    assert data.num_nodes == 4 and data.name == "mygraph" and data.y.tolist() == [0, 1, 0, -1]
    assert data.edge_index.tolist() == [[0, 1, 2, 3], [1, 2, 3, 0]] and data.x[2].tolist() == [1.0, 1.0]


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


def _graph_folder(tmp_path, **files):
    folder = tmp_path / "g"
    folder.mkdir(exist_ok=True)
    for name, content in files.items():
        if isinstance(content, str):
            (folder / name).write_text(content)
        else:
            np.save(folder / name, content, allow_pickle=True)
    return folder


def test_npy_tables_read_whole_floats_as_ids_and_keep_float_features(tmp_path):
    features = np.array([[0.25, -1.0], [2.0, 3.5], [1e-3, 0.0]], dtype=np.float32)
    folder = _graph_folder(
        tmp_path,
        **{
            "edges.npy": np.array([[2, 0], [2, 1], [0, 2]], dtype=np.int32),
            "labels.npy": np.array([1.0, -1.0, 0.0]),
            "features.npy": features,
        },
    )
    data = load_edge_list(folder)
    assert data.edge_index.dtype == torch.int64 and data.edge_index.tolist() == [[2, 2, 0], [0, 1, 2]]
    assert data.y.tolist() == [1, -1, 0] and torch.equal(data.x, torch.from_numpy(features))
    assert data.name == "g" and data.source == str(folder)


@pytest.mark.parametrize(
    "name, table, message",
    [
        (
            "labels.npy",
            np.array([1.5, 0.0, 1.0]),
            "expected whole numbers (node or class ids), found values such as [1.5]",
        ),
        ("labels.npy", np.array(["a", "b"]), "expected numbers, got dtype <U1"),
        ("edges.npy", np.array([[0, 1, 1]]), "expected two columns (source, target), got 3"),
        ("edges.npy", np.array([[0.0, 1e19]]), "holds the id 1e+19, too large for an id"),
        ("edges.npy", np.array([[0, 1]], dtype=object), "not a readable .npy array"),
    ],
    ids=["fractional label", "text labels", "a weight column", "an id beyond int64", "an object array"],
)
def test_npy_tables_that_are_no_ids_are_named(tmp_path, name, table, message):
    files = {"edges.csv": "0,1\n", "labels.csv": "0\n1\n0\n", name: table}
    if name.startswith("edges"):
        files.pop("edges.csv")
    else:
        files.pop("labels.csv")
    folder = _graph_folder(tmp_path, **files)
    with pytest.raises(DatasetError) as caught:
        load_edge_list(folder, missing_features="degree")
    assert str(caught.value).startswith(f"{folder / name}: ") and message in str(caught.value)


def test_a_graph_without_edges_gets_zero_degrees_or_the_identity(tmp_path):
    folder = _graph_folder(tmp_path, **{"edges.csv": "source,target\n", "labels.csv": "label\n0\n1\n-1\n"})
    bare = load_edge_list(folder, missing_features="degree")
    assert (
        bare.edge_index.shape == (2, 0) and bare.x.tolist() == [[0.0]] * 3 and bare.y.tolist() == [0, 1, -1]
    )
    assert torch.equal(load_edge_list(folder).x, torch.eye(3))
    (folder / "edges.csv").write_text("0,1\n0,2\n2,0\n0,0\n")  # out-degrees 3, 0, 1
    assert load_edge_list(folder, missing_features="degree").x[:, 0].tolist() == [3.0, 0.0, 1.0]
    (folder / "labels.csv").write_text("label\n")
    with pytest.raises(DatasetError, match="labels.csv: no labels \\(the file defines the nodes"):
        load_edge_list(folder)
    (folder / "labels.csv").unlink()
    with pytest.raises(DatasetNotFoundError, match="missing labels.csv or labels.npy"):
        load_edge_list(folder)
