"""Text edge lists: node naming and ordering, separators and comments, companion label and feature files,
degree and identity features, and the lines that are refused."""

import numpy as np
import pytest
import torch

from pdenets.data.graphs import DatasetError, load_graph


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


def test_separators_comments_and_suffixes_as_snap_and_networkx_write_them(tmp_path):
    path = tmp_path / "SNAP.EDGELIST"
    path.write_text("  # FromNodeId\tToNodeId\n0\t1\n1,2\n2   0\n  % trailing comment\n\n0 1\n")
    (tmp_path / "SNAP-labels.EDGELIST").write_text("0 0\n1 1\n2 0\n")
    data = load_graph(str(path), missing_features="identity")
    assert data.edge_index.tolist() == [[0, 1, 2, 0], [1, 2, 0, 1]]  # a repeated edge is kept, as written
    assert torch.equal(data.x, torch.eye(3)) and data.name == "SNAP" and data.source == str(path)


def test_degree_features_are_out_degrees_and_label_only_nodes_are_isolated(tmp_path):
    path = tmp_path / "g.txt"
    edges = [(5, 5), (5, 9), (5, 9), (9, 2), (2, 5)]  # a self-loop and a repeated edge
    path.write_text("".join(f"{a} {b}\n" for a, b in edges))
    (tmp_path / "g-labels.txt").write_text("2 1\n5 -1\n11 0\n")  # node 11 has no edge; -1: unlabelled
    data = load_graph(str(path), missing_features="degree")
    assert data.node_names == ["2", "5", "9", "11"] and data.num_nodes == 4
    position = {int(name): index for index, name in enumerate(data.node_names)}
    sources = np.array([position[a] for a, _ in edges])
    assert data.x[:, 0].tolist() == np.bincount(sources, minlength=4).astype(float).tolist() == [1, 3, 1, 0]
    assert data.y.tolist() == [1, -1, -1, 0]
    with pytest.raises(ValueError, match="missing_features must be one of"):
        load_graph(str(path), missing_features="zeros")


def test_word_nodes_sort_by_text_and_a_node_may_appear_only_in_the_features(tmp_path):
    path = tmp_path / "w.tsv"
    path.write_text("alice\tBob\n")
    (tmp_path / "w-labels.tsv").write_text("alice x\n")
    (tmp_path / "w-features.tsv").write_text("alice 1 2\nBob 3 4\ncarol 5 nan\n")
    with pytest.raises(DatasetError, match="w-features.tsv: the node features hold 1 NaN/inf value"):
        load_graph(str(path))
    (tmp_path / "w-features.tsv").write_text("alice 1 2\nBob 3 4\ncarol -5e-1 6\n")
    data = load_graph(str(path))
    assert data.node_names == ["Bob", "alice", "carol"]  # upper case sorts first, as text does
    assert data.edge_index.tolist() == [[1], [0]] and data.y.tolist() == [-1, 0, -1]
    assert data.x.tolist() == [[3, 4], [1, 2], [-0.5, 6]] and data.class_names == ["x"]


def test_numbered_classes_must_run_from_zero_without_gaps(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("0 1\n1 2\n")
    (tmp_path / "c-labels.txt").write_text("0 0\n1 2\n")
    with pytest.raises(DatasetError, match=r"c-labels.txt: .*found classes \[0, 2\]"):
        load_graph(str(path))
    (tmp_path / "c-labels.txt").write_text("0 -2\n1 0\n")
    with pytest.raises(DatasetError, match=r"c-labels.txt: labels holds -2"):
        load_graph(str(path))
