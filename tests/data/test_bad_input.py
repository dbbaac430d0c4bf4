"""Loaders and splits given broken, hostile or inconsistent input: a DatasetError naming the file, never a
traceback from deep inside numpy/scipy, never an allocation the file cannot justify, nothing executed."""

import io
import os
import pickle
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from pdenets.data import DatasetError, DatasetNotFoundError, UnsafePickleError, load_graph, load_npz
from pdenets.data.graphs import load_edge_list, load_planetoid
from pdenets.data.safe_pickle import load_array_pickle
from pdenets.data.splits import per_class_split

from ..graph_fixtures import write_sbm_npz


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


def _npz_bytes(**arrays):
    stream = io.BytesIO()
    np.savez(stream, **arrays)
    return stream.getvalue()


# ----------------------------------------------------------------------------------------
# .npz graph files


NPZ_CASES = [
    (
        "nan features",
        dict(attr_data=np.array([np.nan] + [0.5] * 17, dtype=np.float32)),
        "the node features hold 1 NaN/inf value(s)",
    ),
    ("inf adjacency", dict(adj_data=np.array([np.inf] + [1.0] * 5)), "adjacency matrix holds NaN/inf"),
    ("labels of the wrong length", dict(labels=np.array([0, 1, 0])), "3 labels for 6 nodes"),
    ("fractional labels", dict(labels=np.array([0, 1.5, 0, 1, 0, 1])), "labels must be integer class ids"),
    ("negative labels", dict(labels=np.array([0, -5, 0, 1, 0, 1])), "labels holds -5"),
    ("labels with a gap", dict(labels=np.array([0, 2, 0, 2, 0, 2])), "found classes [0, 2]"),
    (
        "index out of range",
        dict(adj_indices=np.array([1, 2, 3, 4, 5, 9], dtype=np.int32)),
        "the adjacency matrix is not a valid CSR matrix",
    ),
    ("float indices", dict(adj_indices=np.array([1.0, 2, 3, 4, 5, 0])), "indices must be integers"),
    (
        "short indptr",
        dict(adj_indptr=np.array([0, 1, 2], dtype=np.int32)),
        "the adjacency matrix is not a valid CSR matrix",
    ),
    ("bad shape", dict(adj_shape=np.array([6, 6, 6])), "shape (6, 6, 6) is not (rows, columns)"),
    ("non-square adjacency", dict(adj_shape=np.array([6, 7])), "is 6 x 7, not square"),
    (
        "features for other nodes",
        dict(attr_shape=np.array([7, 3]), attr_indptr=np.array([0, 2, 4, 6, 8, 10, 12, 12], dtype=np.int32)),
        "7 feature rows for 6 nodes",
    ),
    ("no adjacency", dict(adj_data=None), "expected the gnn-benchmark layout"),
    ("no labels", dict(labels=None), "expected the gnn-benchmark layout"),
    (
        "attributes declared 180 x 150 million",
        dict(attr_shape=np.array([6, 150_000_000])),
        "node features would need 3.4 GiB",
    ),
]


@pytest.mark.parametrize("what, changes, message", NPZ_CASES, ids=[c[0] for c in NPZ_CASES])
def test_bad_npz_graphs_name_the_file_and_the_problem(tmp_path, monkeypatch, what, changes, message):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1G")
    path = _write(tmp_path / "graph.npz", **changes)
    with pytest.raises(DatasetError) as caught:
        load_graph(str(path))
    assert str(path) in str(caught.value) and message in str(caught.value), str(caught.value)


BROKEN_FILES = [
    ("zero bytes", b"", "the file is empty (0 bytes)"),
    (
        "random bytes",
        bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8)),
        "not a readable .npz archive",
    ),
    ("a text file", b"source,target\n0,1\n", "not a readable .npz archive"),
    ("truncated", _npz_bytes(**_graph_arrays())[:300], "not a readable .npz archive"),
    ("a zip without arrays", None, "holds no .npy arrays"),
]


@pytest.mark.parametrize("what, content, message", BROKEN_FILES, ids=[c[0] for c in BROKEN_FILES])
def test_broken_npz_files(tmp_path, what, content, message):
    path = tmp_path / "graph.npz"
    if content is None:
        with zipfile.ZipFile(path, "w") as archive:
            archive.writestr("readme.txt", "hello")
    else:
        path.write_bytes(content)
    with pytest.raises(DatasetError) as caught:
        load_npz(path)
    assert str(path) in str(caught.value) and message in str(caught.value)


def test_object_arrays_are_never_unpickled(tmp_path):
    marker = tmp_path / "executed"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    path = tmp_path / "g.npz"
    np.savez(path, node_names=np.array([Payload()], dtype=object), **_graph_arrays())
    data = load_npz(path)
    assert data.num_nodes == 6 and not marker.exists()


def test_missing_files_and_folders():
    with pytest.raises(DatasetNotFoundError, match="missing dataset file /nowhere/g.npz"):
        load_npz("/nowhere/g.npz")
    with pytest.raises(DatasetNotFoundError, match="missing graph folder"):
        load_edge_list("/nowhere")
    with pytest.raises(ValueError, match="unknown graph 'imagenet'"):
        load_graph("imagenet")


# ----------------------------------------------------------------------------------------
# Planetoid pickles


def _planetoid(tmp_path, **overrides):
    folder = tmp_path / "planetoid" / "Cora" / "raw"
    folder.mkdir(parents=True)
    n_train, n_test, features, classes = 4, 2, 3, 2
    parts = {
        "x": sp.csr_matrix(np.eye(n_train, features, dtype=np.float32)),
        "allx": sp.csr_matrix(np.eye(n_train, features, dtype=np.float32)),
        "tx": sp.csr_matrix(np.ones((n_test, features), dtype=np.float32)),
        "y": np.eye(classes)[[0, 1, 0, 1]],
        "ally": np.eye(classes)[[0, 1, 0, 1]],
        "ty": np.eye(classes)[[0, 1]],
        "graph": {0: [1], 1: [0, 2], 2: [1, 3], 3: [2, 4], 4: [3, 5], 5: [4]},
    }
    index = "4\n5\n"
    for part, value in overrides.items():
        if part == "test.index":
            index = value
        else:
            parts[part] = value
    for part, value in parts.items():
        target = folder / f"ind.cora.{part}"
        target.write_bytes(value if isinstance(value, bytes) else pickle.dumps(value, protocol=2))
    (folder / "ind.cora.test.index").write_text(index)
    return tmp_path


HOSTILE_CSR = b"\x80\x02cscipy.sparse.csr\ncsr_matrix\nJ\x80\x84\x1e\x00M\x99\x05\x86\x85R."  # 43 bytes

PLANETOID_CASES = [
    ("test.index holding -5", {"test.index": "4\n-5\n"}, "holds the negative node id -5"),
    ("test.index with text", {"test.index": "4\nfive\n"}, "'five' is not a node id"),
    ("empty test.index", {"test.index": ""}, "the file is empty"),
    ("duplicate test ids", {"test.index": "4\n4\n"}, "lists 1 node id(s) twice"),
    ("test ids far beyond the graph", {"test.index": "4\n2000000000\n"}, "more than the memory budget"),
    ("a 43-byte pickle declaring 2,000,000 x 1433", {"allx": HOSTILE_CSR}, "more than the memory budget"),
    (
        "truncated pickle",
        {"ally": pickle.dumps(np.eye(2)[[0, 1, 0, 1]], protocol=2)[:40]},
        "not a complete pickle",
    ),
    ("zero-byte pickle", {"tx": b""}, "the file is empty (0 bytes)"),
    ("random bytes", {"ty": bytes(range(256))}, "ind.cora.ty"),
    (
        "rows that disagree",
        {"ally": np.eye(2)[[0, 1, 0]]},
        "ind.cora.allx has 4 rows but ind.cora.ally has 3",
    ),
    ("a graph that is not a dict", {"graph": [[1], [0]]}, "expected a dict node -> neighbours"),
    ("neighbours outside the graph", {"graph": {0: [1], 1: [99]}}, "refers to node ids outside [0, 6)"),
    ("a list instead of a matrix", {"tx": [1, 2, 3]}, "expected a 2-D numeric matrix"),
]


@pytest.mark.parametrize("what, overrides, message", PLANETOID_CASES, ids=[c[0] for c in PLANETOID_CASES])
def test_bad_planetoid_files(tmp_path, monkeypatch, what, overrides, message):
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "1G")
    root = _planetoid(tmp_path, **overrides)
    with pytest.raises(DatasetError) as caught:
        load_planetoid("cora", root)
    assert message in str(caught.value) and "ind.cora" in str(caught.value), str(caught.value)


def test_a_small_valid_planetoid_set_loads(tmp_path):
    data = load_planetoid("cora", _planetoid(tmp_path))
    assert data.num_nodes == 6 and data.y.tolist() == [0, 1, 0, 1, 0, 1] and data.edge_index.shape == (2, 10)


# ----------------------------------------------------------------------------------------
# the restricted unpickler: globals inside numpy/scipy that read files or evaluate strings


DANGEROUS = [
    ("numpy", "load"),
    ("numpy", "loadtxt"),
    ("numpy", "fromfile"),
    ("numpy", "genfromtxt"),
    ("numpy.testing._private.utils", "runstring"),
    ("scipy.io", "loadmat"),
    ("numpy.lib.npyio", "load"),
    ("numpy", "frompyfunc"),
    ("builtins", "eval"),
    ("os", "system"),
    ("numpy.ctypeslib", "load_library"),
]


@pytest.mark.parametrize("module, name", DANGEROUS, ids=[f"{m}.{n}" for m, n in DANGEROUS])
def test_restricted_unpickler_refuses_helpers_inside_numpy_and_scipy(tmp_path, module, name):
    marker = tmp_path / "executed"
    argument = f"open({str(marker)!r}, 'w').close()"
    # GLOBAL module name, argument tuple, REDUCE: calling it would read a file or run the string
    payload = (
        b"\x80\x02c"
        + module.encode()
        + b"\n"
        + name.encode()
        + b"\n"
        + pickle.dumps(argument, 2)[2:-1]
        + b"\x85R."
    )
    with pytest.raises(UnsafePickleError, match=f"refusing to load {module}.{name}"):
        load_array_pickle(payload)
    assert not marker.exists()
    with pytest.raises(pickle.UnpicklingError):  # also an UnpicklingError, for code that catches that
        load_array_pickle(payload)


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


FOLDER_CASES = [
    ("node id beyond the labels", {"edges.csv": "0,1\n1,7\n"}, "node ids must lie in [0, 4)"),
    ("fractional node id", {"edges.csv": "0,1\n1,2.5\n"}, "line 2, column 2: '2.5' is not a whole number"),
    ("three columns", {"edges.csv": "0,1,2\n1,2,3\n"}, "expected two columns (source, target), got 3"),
    ("ragged rows", {"edges.csv": "0,1\n1\n"}, "rows have different numbers of columns"),
    ("no labels", {"labels.csv": None}, "missing labels.csv or labels.npy"),
    ("both csv and npy", {"labels.npy": np.array([0, 1, 0, 1])}, "both labels.npy and labels.csv exist"),
    ("features with NaN", {"features.csv": "1,2\nnan,3\n4,5\n6,7\n"}, "hold 1 NaN/inf"),
    ("features for too few nodes", {"features.csv": "1,2\n3,4\n"}, "expected 4 rows (one per node)"),
    ("words in a table", {"edges.csv": "0,1\na,b\n"}, "line 2, column 1: 'a' is not a number"),
]


@pytest.mark.parametrize("what, files, message", FOLDER_CASES, ids=[c[0] for c in FOLDER_CASES])
def test_bad_edge_list_folders(tmp_path, what, files, message):
    with pytest.raises(DatasetError) as caught:
        load_graph(str(_folder(tmp_path, **files)))
    assert message in str(caught.value), str(caught.value)


TEXT_EDGE_LIST_CASES = [
    ("a third column", {"g.txt": "0 1 0.5\n"}, "g.txt, line 1: expected 'source target', got a third column"),
    (
        "one node on a line",
        {"g.txt": "0 1\n2\n"},
        "g.txt, line 2: expected 'source target', got one node only",
    ),
    (
        "nothing but comments",
        {"g.txt": "# nodes 0\n", "g-labels.txt": None},
        "no edges (and no labelled nodes)",
    ),
    (
        "a node labelled twice",
        {"g-labels.txt": "0 1\n0 0\n"},
        "line 2: node '0' is given again (first on line 1)",
    ),
    ("a label line of three", {"g-labels.txt": "0 1 2\n1 0\n"}, "line 1: expected 'node label', got 3 cells"),
    (
        "a label too large",
        {"g-labels.txt": "0 99999999999999999999\n"},
        "line 1: '99999999999999999999' is too",
    ),
    ("ragged features", {"g-features.txt": "0 1 2\n1 3\n2 4 5\n"}, "different numbers of features [1, 2]"),
    ("a node without features", {"g-features.txt": "0 1\n1 2\n"}, "no features for 1 node(s), e.g. '2'"),
    (
        "a word among features",
        {"g-features.txt": "0 1\n1 x\n2 3\n"},
        "g-features.txt, line 2: 'x' is not a number",
    ),
    ("NaN features", {"g-features.txt": "0 1\n1 nan\n2 3\n"}, "hold 1 NaN/inf value(s)"),
    ("a name of 300 characters", {"g.txt": "0 " + "n" * 300 + "\n"}, "line 1: a cell of 300 characters"),
    ("not UTF-8", {"g.txt": b"0 \xff\n"}, "not UTF-8 text"),
]


@pytest.mark.parametrize(
    "what, files, message", TEXT_EDGE_LIST_CASES, ids=[c[0] for c in TEXT_EDGE_LIST_CASES]
)
def test_bad_text_edge_lists_name_the_file_and_the_line(tmp_path, what, files, message):
    contents = {"g.txt": "0 1\n1 2\n", "g-labels.txt": "0 0\n1 1\n", **files}
    for name, content in contents.items():
        if content is not None:
            (tmp_path / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DatasetError) as caught:
        load_graph(str(tmp_path / "g.txt"))
    assert message in str(caught.value) and str(tmp_path) in str(caught.value), str(caught.value)
    assert "\n" not in str(caught.value)


# ----------------------------------------------------------------------------------------
# splits


SPLIT_CASES = [
    (dict(train_per_class=0), "train_per_class must be an integer >= 1, got 0"),
    (dict(val_per_class=0), "val_per_class must be an integer >= 1, got 0"),
    (dict(train_per_class=2.5), "train_per_class must be an integer, got float"),
    (dict(train_per_class=30), "class 0 has only 20 available labelled nodes; the split needs 30"),
    (dict(train_per_class=10, val_per_class=10), "no labelled node is left for testing"),
    (dict(labels=np.array([0, 2] * 10)), "found classes [0, 2]"),
    (dict(labels=np.array([0, -3] * 10)), "labels holds -3"),
    (dict(labels=np.array([0.0, 1.0] * 10)), "labels must hold integers"),
    (dict(labels=-np.ones(20, dtype=np.int64)), "labels has no labelled sample"),
]


@pytest.mark.parametrize("changes, message", SPLIT_CASES, ids=[m for _, m in SPLIT_CASES])
def test_bad_splits(changes, message):
    arguments = {"labels": np.array([0, 1] * 20), "train_per_class": 5, "val_per_class": 5, **changes}
    with pytest.raises((ValueError, TypeError)) as caught:
        per_class_split(arguments.pop("labels"), **arguments)
    assert message in str(caught.value)


def test_regression_examples_from_real_use(tmp_path):
    # NaN in a graph file's features used to be binarized to 1 and the run reported an accuracy
    path = write_sbm_npz(tmp_path / "g.npz")
    arrays = dict(np.load(path))
    arrays["attr_data"] = arrays["attr_data"].copy()
    arrays["attr_data"][[0, 5, 9]] = np.nan
    np.savez(path, **arrays)
    with pytest.raises(DatasetError, match="hold 3 NaN/inf value"):
        load_graph(str(path))
    # a float edge_index was silently truncated to integers
    from pdenets.operators import as_weight_matrix

    with pytest.raises(TypeError, match="edge_index must hold integers \\(int64\\), got torch.float32"):
        as_weight_matrix((torch.tensor([[0.0, 1.9], [1.0, 0.0]]), None))
    assert os.environ.get("PDENETS_MEMORY_BUDGET") is None


# ----------------------------------------------------------------------------------------
# shared references, huge ids, byte-order marks, strict numbers, files that are not files


def test_a_neighbour_list_shared_by_every_node_is_counted_before_edges_are_built(tmp_path, monkeypatch):
    """Six nodes share one list of 20,000 neighbours: 120,000 edges from one list in the pickle."""
    shared = [node % 6 for node in range(20_000)]
    root = _planetoid(tmp_path, graph={node: shared for node in range(6)})
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "3M")
    with pytest.raises(DatasetError) as caught:
        load_planetoid("cora", root)
    graph = root / "planetoid" / "Cora" / "raw" / "ind.cora.graph"
    assert str(caught.value) == (
        f"{graph}: the 120000 edges of the graph (source and target ids, int64) would need 3.7 MiB, more "
        "than the "
        "memory budget 3.0 MiB; a damaged or hostile file declares sizes it does not hold. If the file is "
        "genuine, "
        "raise $PDENETS_MEMORY_BUDGET (e.g. 32G)"
    )
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "8M")
    data = load_planetoid("cora", root)
    assert data.edge_index.shape == (2, 120_000) and data.edge_index[:, 20_001].tolist() == [1, 1]


@pytest.mark.parametrize(
    "index, message",
    [
        (
            "4\n100000000000000000000000000000\n",
            "'100000000000000000000000000000' is too large for a node id (at most 2^63 - 1)",
        ),
        ("4\n1_0\n", "'1_0' is not a node id (whole numbers >= 0, one per line)"),
        ("\ufeff4\n5\n", None),
    ],
    ids=["10^29", "underscore", "byte-order mark"],
)
def test_planetoid_test_index_is_read_strictly(tmp_path, index, message):
    root = _planetoid(tmp_path, **{"test.index": index})
    if message is None:
        assert load_planetoid("cora", root).num_nodes == 6
        return
    with pytest.raises(DatasetError) as caught:
        load_planetoid("cora", root)
    assert str(caught.value) == f"{root / 'planetoid' / 'Cora' / 'raw' / 'ind.cora.test.index'}: {message}"


STRICT_FOLDER_CASES = [
    (
        "a weight column",
        {"edges.csv": "source,target,weight\n0,1,0.5\n1,2,2\n"},
        "edges.csv: expected two columns (source, target), got 3 ('source', 'target', 'weight'); edge "
        "weights are not "
        "read",
    ),
    (
        "an underscore in an id",
        {"edges.csv": "0,1\n1_0,2\n"},
        "edges.csv: line 2, column 1: '1_0' is not a number",
    ),
    (
        "an id of 10^29",
        {"edges.csv": "source,target\n0,100000000000000000000000000000\n"},
        "edges.csv: line 2, column 'target': '100000000000000000000000000000' is too large for an id (at "
        "most 2^63 - 1)",
    ),
    (
        "two label columns",
        {"labels.csv": "node,label\n0,0\n1,1\n2,0\n3,1\n"},
        "labels.csv: expected one column (label), got 2 ('node', 'label')",
    ),
    (
        "a first row that is no header",
        {"labels.csv": "1_0\n1\n0\n1\n"},
        "labels.csv: line 1, column 1: '1_0' is not a number",
    ),
]


@pytest.mark.parametrize("what, files, message", STRICT_FOLDER_CASES, ids=[c[0] for c in STRICT_FOLDER_CASES])
def test_edge_list_tables_are_read_strictly(tmp_path, what, files, message):
    folder = _folder(tmp_path, **files)
    with pytest.raises(DatasetError) as caught:
        load_edge_list(folder, missing_features="degree")
    assert str(caught.value) == f"{folder}/{message}"


def test_a_byte_order_mark_never_costs_the_first_row(tmp_path):
    folder = _folder(tmp_path, **{"edges.csv": "\ufeff0,1\n1,2\n2,3\n", "labels.csv": "\ufeff0\n1\n0\n1\n"})
    graph = load_edge_list(folder, missing_features="degree")
    assert graph.edge_index.tolist() == [[0, 1, 2], [1, 2, 3]] and graph.y.tolist() == [0, 1, 0, 1]


def test_a_graph_without_nodes_and_object_labels_are_named(tmp_path):
    empty = tmp_path / "empty.npz"
    np.savez(
        empty,
        adj_data=np.ones(0),
        adj_indices=np.zeros(0, int),
        adj_indptr=np.array([0]),
        adj_shape=np.array([0, 0]),
        labels=np.zeros(0, int),
    )
    with pytest.raises(DatasetError) as caught:
        load_npz(empty)
    assert str(caught.value) == f"{empty}: the adjacency matrix is 0 x 0: a graph without nodes"
    objects = _write(tmp_path / "objects.npz", labels=np.array(["a", 1, 0, 1, 0, 1], dtype=object))
    with pytest.raises(DatasetError) as caught:
        load_npz(objects)
    assert str(caught.value) == (
        f"{objects}: labels is an object array (pickled Python objects) which is never "
        "unpickled; save class ids as integers"
    )


def _links_to_dev_zero(tmp_path):
    """Every loader given a symbolic link to /dev/zero under a data file's name."""
    from pdenets.data.fewshot import load_features
    from pdenets.data.tabular import load_tabular
    from pdenets.data.temporal import load_temporal

    def link(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink("/dev/zero", path)
        return path

    graph = _folder(tmp_path, **{"edges.csv": None})
    series = tmp_path / "series"
    series.mkdir()
    (series / "edges.csv").write_text("source,target\n")
    root = _planetoid(tmp_path)
    (root / "planetoid" / "Cora" / "raw" / "ind.cora.allx").unlink()
    return [
        (link(tmp_path / "g.npz"), lambda path: load_npz(path)),
        (link(tmp_path / "f.npz"), load_features),
        (link(tmp_path / "f.pkl"), load_features),
        (link(tmp_path / "p.pkl"), load_array_pickle),
        (link(tmp_path / "t.csv"), load_tabular),
        (link(tmp_path / "s.json"), load_temporal),
        (link(series / "series.csv"), lambda path: load_temporal(path.parent)),
        (link(graph / "edges.csv"), lambda path: load_edge_list(path.parent, missing_features="degree")),
        (
            link(root / "planetoid" / "Cora" / "raw" / "ind.cora.allx"),
            lambda path: load_planetoid("cora", root),
        ),
    ]


def test_a_device_under_a_data_file_name_is_refused_without_reading_it(tmp_path):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    for path, read in _links_to_dev_zero(tmp_path):
        with pytest.raises(DatasetError) as caught:
            read(path)
        assert not isinstance(caught.value, DatasetNotFoundError), path
        assert str(caught.value) == (
            f"{path}: not a regular file (a character device, reached through a symbolic "
            "link to /dev/zero); give the path of a data file"
        )
    dangling = tmp_path / "gone.npz"
    os.symlink(tmp_path / "nowhere.npz", dangling)
    with pytest.raises(DatasetNotFoundError) as caught:
        load_npz(dangling)
    assert (
        str(caught.value)
        == f"{dangling}: a symbolic link to {tmp_path / 'nowhere.npz'}, which does not exist"
    )
    (tmp_path / "folder.npz").mkdir()
    with pytest.raises(
        DatasetError, match="folder.npz: not a regular file \\(a folder\\); give the path of a data"
    ):
        load_npz(tmp_path / "folder.npz")
