import numpy as np
import pytest

from pdenets.data.graphs import DatasetError, load_graph


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
