"""Graphs from local files: Planetoid pickles, gnn-benchmark ``.npz`` files, plain edge lists.

Every loader returns a PyTorch Geometric :class:`~torch_geometric.data.Data` with

* ``x`` — ``(N, F)`` float32 node features (dense),
* ``edge_index`` — ``(2, E)`` int64 directed edges as stored in the file,
* ``y`` — ``(N,)`` int64 labels, ``-1`` for nodes without a label,
* ``name`` — a short name, ``source`` — the file(s) read.

Dataset specifications accepted by :func:`load_graph`:

``cora``, ``citeseer``, ``pubmed``
    ``<data dir>/npz/<name>.npz`` — the gnn-benchmark files the Diff-ResNet code reads.
``planetoid/cora``, ``planetoid/citeseer``, ``planetoid/pubmed``
    ``<data dir>/planetoid/<Name>/raw/ind.<name>.*`` — the Planetoid pickles, read with a
    restricted unpickler (:mod:`pdenets.data.safe_pickle`).
a path to a ``.npz`` file
    a gnn-benchmark graph in either key layout that circulates: ``adj_data``,
    ``adj_indices``, ``adj_indptr``, ``adj_shape`` (+ ``attr_*`` or a dense ``attr_matrix``)
    or the dotted ``adj_matrix.data``, ``adj_matrix.indices``, ... (+ ``attr_matrix.*`` or a
    dense ``attr_matrix``); ``labels`` as ids or one-hot rows. Object arrays (node and
    class names) are never unpickled; they are ignored. :func:`save_graph_npz` writes this
    layout from a PyG ``Data``.
a folder
    a plain edge list: ``edges.csv`` or ``edges.npy`` (one ``source,target`` pair of node
    ids per row; a header line is allowed), ``labels.csv``/``labels.npy`` (one class id per
    node, ``-1`` for unlabelled; defines the number of nodes) and optionally
    ``features.csv``/``features.npy`` (one row per node).

Without node features (an ``.npz`` without attributes, a folder without ``features.*``)
the ``missing_features`` rule gives each node either its one-hot id (``"identity"``, an
``N × N`` matrix; the usual choice for transductive learning) or its degree
(``"degree"``, one column).

Nothing is downloaded, nothing in a file is executed, and every problem — a missing,
empty, truncated or corrupt file, shapes that disagree, NaN/inf values, ids out of range,
or declared sizes above the memory budget (:mod:`pdenets.data.limits`) — raises a
:class:`~pdenets.data.errors.DatasetError` that names the file.
"""

from __future__ import annotations

import math
import os
import re
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, Literal, Optional, Tuple, Union, overload

import numpy as np
import torch

from .._checks import check_labels
from .._lazy import LazyModule
from .csvfile import (
    MAX_ID,
    is_number,
    parse_integer,
    parse_number,
    read_csv_table,
    read_text_file,
    shown_value,
)
from .errors import DatasetError, DatasetNotFoundError
from .limits import MemoryBudgetError, check_allocation
from .paths import DATA_ENV_VAR, regular_file, resolve_data_dir

#: scipy.sparse, imported when a graph is read (not when pdenets starts)
sp = LazyModule("scipy.sparse")

if TYPE_CHECKING:  # torch_geometric is imported where a graph is built, not when pdenets starts
    import scipy.sparse
    from torch_geometric.data import Data


def _pyg_data(**values) -> "Data":
    from torch_geometric.data import Data

    return Data(**values)


__all__ = [
    "DatasetError",
    "DatasetNotFoundError",
    "load_graph",
    "load_planetoid",
    "load_npz",
    "load_edge_list",
    "save_graph_npz",
    "read_npz_arrays",
    "GRAPH_SOURCES",
    "MISSING_FEATURES",
]

PLANETOID_NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
MISSING_FEATURES = ("identity", "degree")

GRAPH_SOURCES: Dict[str, str] = {
    "planetoid": "https://github.com/kimiyoung/planetoid (raw files also in github.com/tkipf/gcn, gcn/data/)",
    "npz": "https://github.com/shchur/gnn-benchmark (data/npz/); "
    "also github.com/shwangtangjun/Diff-ResNet, graph/data/",
}


def _missing(path: Path, data_dir: Path, source: str, detail: str = "") -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"missing dataset file {path}{detail}. Searched data directory {data_dir} (set it with --data-dir or "
        f"${DATA_ENV_VAR}). Get the file from {GRAPH_SOURCES[source]} and place it at that path; pdenets "
        "never "
        "downloads data."
    )


# ----------------------------------------------------------------------------------------
# .npz archives: headers first, allocation after


def _npy_header(stream) -> Tuple[Tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(stream)
    reader = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(
        version
    )
    if reader is None:
        raise ValueError(f"unsupported .npy version {version}")
    shape, _, dtype = reader(stream)
    return tuple(int(s) for s in shape), np.dtype(dtype)


class NpzArrays(Dict[str, np.ndarray]):
    """The numeric arrays of an ``.npz`` file by name; ``skipped_objects`` names the object arrays left
    unread."""

    skipped_objects: Tuple[str, ...] = ()


def object_array_error(path: Path, name: str, advice: str) -> DatasetError:
    """The error for a needed array that the file stores as an object array (never unpickled)."""
    return DatasetError(
        f"{path}: {name} is an object array (pickled Python objects) which is never unpickled; {advice}"
    )


def read_npz_arrays(path: Union[str, Path], *, skip_objects: bool = True) -> NpzArrays:
    """Every numeric array of an ``.npz`` file, sizes checked against the file before anything is allocated.

    Object arrays (pickled Python objects) are skipped without being unpickled; their names are
    recorded in the result's ``skipped_objects``, so that a loader missing one can say why.
    Raises :class:`DatasetError` (naming the file) for a missing, empty, truncated or corrupt
    archive, a path that is not a regular file, a member whose header declares more bytes than
    it holds, or more than the memory budget.
    """
    path = regular_file(path)
    if path.stat().st_size == 0:
        raise DatasetError(f"{path}: the file is empty (0 bytes); expected a NumPy .npz archive")
    arrays = NpzArrays()
    skipped = []
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if info.filename.endswith(".npy")]
            if not members:
                raise DatasetError(f"{path}: the archive holds no .npy arrays; expected a NumPy .npz file")
            declared = 0
            plan = []
            for info in members:
                with archive.open(info) as stream:
                    shape, dtype = _npy_header(stream)
                if dtype.hasobject:
                    if skip_objects:
                        skipped.append(info.filename[:-4])
                        continue
                    raise DatasetError(
                        f"{path}: {info.filename[:-4]} is an object array (pickled Python objects); "
                        "it is never unpickled"
                    )
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > info.file_size:
                    raise DatasetError(
                        f"{path}: member {info.filename[:-4]} declares shape {shape} of {dtype} "
                        f"({nbytes} bytes) but holds {info.file_size} bytes: the file is damaged"
                    )
                declared += nbytes
                plan.append(info)
            check_allocation(declared, 1, "its arrays", path)
            for info in plan:
                with archive.open(info) as stream:
                    arrays[info.filename[:-4]] = np.lib.format.read_array(stream, allow_pickle=False)
    except (DatasetError, MemoryBudgetError):  # ours, already naming the file or the setting
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError) as error:
        raise DatasetError(
            f"{path}: not a readable .npz archive (truncated or corrupt: {type(error).__name__}: {error})"
        ) from None
    arrays.skipped_objects = tuple(skipped)
    return arrays


def _csr(
    arrays: Dict[str, np.ndarray], parts: Tuple[str, str, str, str], what: str, path: Path
) -> scipy.sparse.csr_matrix:
    data, indices, indptr, shape_array = (arrays[p] for p in parts)
    shape = tuple(int(s) for s in np.asarray(shape_array).reshape(-1))
    if len(shape) != 2 or min(shape) < 0:
        raise DatasetError(f"{path}: {what} shape {shape} is not (rows, columns)")
    if not (np.issubdtype(indices.dtype, np.integer) and np.issubdtype(indptr.dtype, np.integer)):
        raise DatasetError(f"{path}: {what} indices must be integers, got {indices.dtype} / {indptr.dtype}")
    try:
        matrix = sp.csr_matrix((data, indices, indptr), shape=shape)
        matrix.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as error:
        raise DatasetError(f"{path}: {what} is not a valid CSR matrix ({error})") from None
    return matrix


def _first_layout(keys: Iterable[str], name: str) -> Optional[Tuple[str, str, str, str]]:
    keys = set(keys)
    for parts in (
        (f"{name}_data", f"{name}_indices", f"{name}_indptr", f"{name}_shape"),
        (f"{name}_matrix.data", f"{name}_matrix.indices", f"{name}_matrix.indptr", f"{name}_matrix.shape"),
        (f"{name}.data", f"{name}.indices", f"{name}.indptr", f"{name}.shape"),
    ):
        if set(parts) <= keys:
            return parts
    return None


def _dense_features(matrix, path: Path) -> torch.Tensor:
    rows, cols = matrix.shape
    check_allocation(rows * cols, 4, f"the {rows} x {cols} node features", path)
    dense = matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)
    if not np.issubdtype(dense.dtype, np.number) or np.issubdtype(dense.dtype, np.complexfloating):
        raise DatasetError(f"{path}: node features must be real numbers, got dtype {dense.dtype}")
    features = dense.astype(np.float32, copy=False)
    bad = int((~np.isfinite(features)).sum())
    if bad:
        raise DatasetError(
            f"{path}: the node features hold {bad} NaN/inf value(s); clean or impute them first"
        )
    return torch.from_numpy(np.ascontiguousarray(features))


def _labels(raw: np.ndarray, num_nodes: int, path: Path) -> torch.Tensor:
    raw = np.asarray(raw)
    if raw.ndim == 2:  # one-hot rows; all-zero rows are unlabelled
        if not np.isfinite(raw).all():
            raise DatasetError(f"{path}: the one-hot labels hold NaN/inf values")
        raw = np.where(raw.sum(1) > 0, raw.argmax(1), -1)
    if raw.ndim != 1:
        raise DatasetError(
            f"{path}: labels must be a vector of class ids or one-hot rows, got shape {raw.shape}"
        )
    if raw.shape[0] != num_nodes:
        raise DatasetError(f"{path}: {raw.shape[0]} labels for {num_nodes} nodes")
    if not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.bool_)):
        if (
            not np.issubdtype(raw.dtype, np.floating)
            or not np.isfinite(raw).all()
            or (raw != np.round(raw)).any()
        ):
            raise DatasetError(
                f"{path}: labels must be integer class ids, got {raw.dtype} values such as {raw[:3].tolist()}"
            )
    try:
        return check_labels(torch.from_numpy(raw.astype(np.int64)), "labels", allow_unlabelled=True)
    except ValueError as error:
        raise DatasetError(f"{path}: {error}") from None


def _edge_index(adjacency: scipy.sparse.spmatrix, path: Path) -> torch.Tensor:
    if adjacency.shape[0] != adjacency.shape[1]:
        raise DatasetError(
            f"{path}: the adjacency matrix is {adjacency.shape[0]} x {adjacency.shape[1]}, not square"
        )
    coo = adjacency.tocoo()
    if coo.data.size and not np.isfinite(coo.data).all():
        raise DatasetError(f"{path}: the adjacency matrix holds NaN/inf entries")
    return torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))


def _missing_features(edge_index: torch.Tensor, num_nodes: int, rule: str, path: Path) -> torch.Tensor:
    if rule not in MISSING_FEATURES:
        raise ValueError(f"missing_features must be one of {MISSING_FEATURES}, got {rule!r}")
    if rule == "identity":
        check_allocation(
            num_nodes * num_nodes,
            4,
            f"identity features for {num_nodes} nodes (use missing_features='degree')",
            path,
        )
        return torch.eye(num_nodes, dtype=torch.float32)
    degree = torch.zeros(num_nodes, dtype=torch.float32)
    degree.index_add_(0, edge_index[0], torch.ones(edge_index.shape[1]))
    return degree[:, None]


def load_npz(
    path: Union[str, Path],
    *,
    name: Optional[str] = None,
    data_dir: Optional[Path] = None,
    missing_features: str = "identity",
) -> Data:
    """Read a gnn-benchmark ``.npz`` graph in either key layout (see the module docstring).

    The format of Shchur et al., *Pitfalls of Graph Neural Network Evaluation* (the
    gnn-benchmark files the Diff-ResNet code reads). The archive's array headers are checked
    against the bytes it holds and against the memory budget before anything is allocated;
    object arrays are skipped, never unpickled. The adjacency must be a square CSR matrix;
    its stored entries become ``edge_index`` (directed, as stored). Features come from
    ``attr_*`` / ``attr_matrix.*`` (CSR) or a dense ``attr_matrix``, else from the
    ``missing_features`` rule; labels from ``labels`` (ids, or one-hot rows where all-zero
    rows mean unlabelled, ``-1``).

    Args:
        path: the ``.npz`` file.
        name: the graph's ``name`` (default: ``None``, the file's stem).
        data_dir: the data directory named in the message when the file is missing
            (default: ``None``, the file's folder).
        missing_features: node features when the file holds none: ``"identity"`` (one-hot node
            ids, an ``N × N`` matrix) or ``"degree"`` (one column, each node's out-degree)
            (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y``, ``num_nodes``, ``name``
        and ``source`` (the file).

    Raises:
        DatasetNotFoundError: ``path`` does not exist (the message says where to get it).
        DatasetError: an empty, truncated or corrupt archive, missing arrays, shapes that
            disagree, NaN/inf values, non-integer labels, or sizes above the memory budget.
        ValueError: the file holds no features and ``missing_features`` is not one of
            ``"identity"``, ``"degree"``.

    Examples:
        >>> import tempfile, os, torch
        >>> from torch_geometric.data import Data
        >>> path = os.path.join(tempfile.mkdtemp(), "g.npz")
        >>> graph = Data(x=torch.eye(3), edge_index=torch.tensor([[0, 1], [1, 2]]), y=torch.tensor([0, 1, 1]))
        >>> _ = save_graph_npz(graph, path)
        >>> load_npz(path).edge_index.tolist()
        [[0, 1], [1, 2]]
    """
    path = Path(path)
    regular_file(path, _missing(path, resolve_data_dir(data_dir) if data_dir else path.parent, "npz"))
    arrays = read_npz_arrays(path)
    adjacency_parts = _first_layout(arrays, "adj")
    if "labels" in arrays.skipped_objects and _first_layout(arrays, "labels") is None:
        raise object_array_error(path, "labels", "save class ids as integers")
    if adjacency_parts is None or "labels" not in arrays and _first_layout(arrays, "labels") is None:
        raise DatasetError(
            f"{path}: found arrays {sorted(arrays)}; expected the gnn-benchmark layout: adj_data/"
            "adj_indices/adj_indptr/adj_shape or adj_matrix.data/.indices/.indptr/.shape, optional "
            "attr_* / attr_matrix.* / attr_matrix, and labels"
        )
    adjacency = _csr(arrays, adjacency_parts, "the adjacency matrix", path)
    edge_index = _edge_index(adjacency, path)
    num_nodes = adjacency.shape[0]
    if num_nodes == 0:
        raise DatasetError(f"{path}: the adjacency matrix is 0 x 0: a graph without nodes")
    attribute_parts = _first_layout(arrays, "attr")
    if attribute_parts is not None:
        features = _dense_features(_csr(arrays, attribute_parts, "the attribute matrix", path), path)
    elif "attr_matrix" in arrays:
        raw = arrays["attr_matrix"]
        if raw.ndim != 2:
            raise DatasetError(f"{path}: attr_matrix must be 2-D (nodes x features), got shape {raw.shape}")
        features = _dense_features(raw, path)
    else:
        features = _missing_features(edge_index, num_nodes, missing_features, path)
    label_parts = _first_layout(arrays, "labels")
    if "labels" in arrays:
        raw_labels = arrays["labels"]
    else:
        assert label_parts is not None  # checked above: without a labels array the labels layout is there
        raw_labels = _csr(arrays, label_parts, "the labels", path).toarray()
    labels = _labels(raw_labels, num_nodes, path)
    if features.shape[0] != num_nodes:
        raise DatasetError(f"{path}: {features.shape[0]} feature rows for {num_nodes} nodes (adjacency)")
    return _pyg_data(
        x=features,
        edge_index=edge_index,
        y=labels,
        num_nodes=num_nodes,
        name=name or path.stem,
        source=str(path),
    )


# ----------------------------------------------------------------------------------------
# Planetoid pickles


def _planetoid_matrix(value, part: str, path: Path):
    if sp.issparse(value):
        return sp.csr_matrix(value)
    array = np.asarray(value)
    if array.ndim != 2 or not np.issubdtype(array.dtype, np.number):
        raise DatasetError(
            f"{path}: expected a 2-D numeric matrix for ind.*.{part}, got {type(value).__name__} "
            f"of shape {getattr(array, 'shape', '?')}"
        )
    return array


def _test_index(path: Path) -> np.ndarray:
    tokens = read_text_file(path, "one test node id per line").split()
    if not tokens:
        raise DatasetError(f"{path}: the file is empty; expected one test node id per line")
    ids = []
    for token in tokens:
        if not re.fullmatch(r"-?[0-9]+", token):
            raise DatasetError(
                f"{path}: {shown_value(token)} is not a node id (whole numbers >= 0, one per line)"
            )
        try:
            ids.append(parse_integer(token, "node id"))
        except ValueError as error:
            raise DatasetError(f"{path}: {error}") from None
    index = np.array(ids, dtype=np.int64)
    if index.min() < 0:
        raise DatasetError(f"{path}: holds the negative node id {int(index.min())}")
    if np.unique(index).size != index.size:
        raise DatasetError(f"{path}: lists {index.size - np.unique(index).size} node id(s) twice")
    return index


def _planetoid_edges(graph: dict, path: Path) -> torch.Tensor:
    """``(2, E)`` edges of a ``node -> neighbours`` dict, their number checked against the budget first.

    A neighbour list shared by many nodes (one object in the pickle) is converted once.
    """
    problem = f"{path}: expected integer node ids and lists of integer neighbours"
    nodes, lengths, converted = [], [], {}
    for node, neighbours in graph.items():
        if (
            isinstance(node, bool)
            or not isinstance(node, (int, np.integer))
            or not isinstance(neighbours, (list, tuple, np.ndarray))
        ):
            raise DatasetError(problem)
        nodes.append(int(node) if -(2**63) <= int(node) < 2**63 else -1)
        lengths.append(len(neighbours))
    count = sum(lengths)
    check_allocation(count, 4 * 8, f"the {count} edges of the graph (source and target ids, int64)", path)
    targets = []
    for neighbours in graph.values():
        if id(neighbours) not in converted:
            try:
                array = np.asarray(neighbours) if len(neighbours) else np.zeros(0, dtype=np.int64)
            except (ValueError, TypeError, OverflowError):  # ragged or mixed lists
                raise DatasetError(problem) from None
            if array.ndim != 1 or array.dtype.kind not in "iu":
                raise DatasetError(problem)
            converted[id(neighbours)] = array.astype(np.int64)
        targets.append(converted[id(neighbours)])
    sources = np.repeat(np.asarray(nodes, dtype=np.int64), lengths)
    ends = np.concatenate(targets) if targets else np.zeros(0, dtype=np.int64)
    return torch.from_numpy(np.stack([sources, ends]))


def load_planetoid(name: str, data_dir: Optional[Union[str, Path]] = None) -> Data:
    """Read ``planetoid/<Name>/raw/ind.<name>.*`` (Kipf & Welling's node ordering).

    The citation graphs of Yang, Cohen, Salakhutdinov, *Revisiting Semi-Supervised Learning
    with Graph Embeddings* (Planetoid), in the node order of Kipf & Welling,
    *Semi-Supervised Classification with Graph Convolutional Networks*. Reads the eight files
    ``ind.<name>.{x, y, tx, ty, allx, ally, graph, test.index}`` from
    ``<data dir>/planetoid/<Name>/raw/``; the pickles go through the restricted unpickler
    :func:`~pdenets.data.safe_pickle.load_array_pickle`, so nothing in them is executed.
    Checks that features and labels have matching rows and widths, that ``test.index`` lists
    one distinct non-negative id per test row, that the graph is a dict of integer neighbour
    lists within range, and that the node count fits the memory budget.

    Test nodes are placed at the ids listed in ``test.index``; ids inside the test range
    that the file does not list (CiteSeer has 15) get zero features and label ``-1``.

    Args:
        name: ``"cora"``, ``"citeseer"`` or ``"pubmed"`` (case-insensitive).
        data_dir: the data directory (default: ``None``, see
            :func:`~pdenets.data.paths.resolve_data_dir`).

    Returns:
        The graph as a PyG ``Data`` with ``x`` (dense float32), ``edge_index``, ``y``,
        ``num_nodes``, ``name`` (``"planetoid/<name>"``) and ``source`` (the folder).

    Raises:
        ValueError: ``name`` is not a Planetoid dataset.
        DatasetNotFoundError: one of the eight files is missing (the message says where to
            get it).
        UnsafePickleError: a pickle asks for a global outside the allow-list.
        DatasetError: a truncated, corrupt or inconsistent file, or sizes above the memory
            budget.

    Examples:
        >>> graph = load_planetoid("cora")  # doctest: +SKIP
        >>> graph.num_nodes, graph.x.shape[1]  # doctest: +SKIP
        (2708, 1433)
    """
    key = name.lower()
    if key not in PLANETOID_NAMES:
        raise ValueError(f"unknown Planetoid dataset {name!r}; choose from {sorted(PLANETOID_NAMES)}")
    root = resolve_data_dir(data_dir)
    folder = root / "planetoid" / PLANETOID_NAMES[key] / "raw"
    paths = {part: folder / f"ind.{key}.{part}" for part in PLANETOID_PARTS}
    for part, path in paths.items():
        detail = (
            " (the features of 18,657 PubMed nodes live only in this file)"
            if (key, part) == ("pubmed", "allx")
            else ""
        )
        regular_file(path, _missing(path, root, "planetoid", detail))
    from .safe_pickle import load_array_pickle  # scipy's sparse classes, imported with it

    parts = {part: load_array_pickle(path) for part, path in paths.items() if part != "test.index"}
    test_index = _test_index(paths["test.index"])
    allx, tx = (_planetoid_matrix(parts[p], p, paths[p]) for p in ("allx", "tx"))
    ally, ty = (_planetoid_matrix(parts[p], p, paths[p]) for p in ("ally", "ty"))
    for features, labels, a, b in ((allx, ally, "allx", "ally"), (tx, ty, "tx", "ty")):
        if features.shape[0] != labels.shape[0]:
            raise DatasetError(
                f"{folder}: ind.{key}.{a} has {features.shape[0]} rows but ind.{key}.{b} has "
                f"{labels.shape[0]}"
            )
    if allx.shape[1] != tx.shape[1] or ally.shape[1] != ty.shape[1]:
        raise DatasetError(
            f"{folder}: allx/tx ({allx.shape[1]}/{tx.shape[1]} features) or ally/ty "
            f"({ally.shape[1]}/{ty.shape[1]} classes) disagree"
        )
    if test_index.size != tx.shape[0]:
        raise DatasetError(
            f"{paths['test.index']}: lists {test_index.size} test nodes but ind.{key}.tx has "
            f"{tx.shape[0]} rows"
        )
    graph = parts["graph"]
    if not isinstance(graph, dict):
        raise DatasetError(
            f"{paths['graph']}: expected a dict node -> neighbours, got {type(graph).__name__}"
        )
    num_nodes = max(len(graph), int(test_index.max()) + 1, allx.shape[0] + tx.shape[0])
    blamed = paths["test.index"] if num_nodes == int(test_index.max()) + 1 else folder
    check_allocation(
        num_nodes * (allx.shape[1] + ally.shape[1]),
        4,
        f"{num_nodes} nodes x {allx.shape[1]} features (the largest id in test.index is "
        f"{int(test_index.max())})",
        blamed,
    )
    features = sp.lil_matrix((num_nodes, allx.shape[1]), dtype=np.float32)
    features[: allx.shape[0]] = allx
    features[test_index] = tx
    onehot = np.zeros((num_nodes, ally.shape[1]), dtype=np.float32)
    onehot[: ally.shape[0]] = ally
    onehot[test_index] = ty
    labels = _labels(onehot, num_nodes, paths["ally"])
    edge_index = _planetoid_edges(graph, paths["graph"])
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= num_nodes):
        raise DatasetError(f"{paths['graph']}: refers to node ids outside [0, {num_nodes})")
    return _pyg_data(
        x=_dense_features(features, folder),
        edge_index=edge_index,
        y=labels,
        num_nodes=num_nodes,
        name=f"planetoid/{key}",
        source=str(folder),
    )


# ----------------------------------------------------------------------------------------
# plain edge lists


_COUNT_WORDS = {1: "one column", 2: "two columns"}


def _table_columns(path: Path, width: int, columns: Optional[Tuple[str, ...]], header) -> None:
    """Refuse a table whose number of columns is not that of ``columns`` (naming a header's columns)."""
    if columns is None or width in (0, len(columns)):  # 0: an empty file
        return
    named = f" ({', '.join(repr(name) for name in header)})" if header else ""
    extra = "; edge weights are not read" if columns == ("source", "target") and width > 2 else ""
    raise DatasetError(
        f"{path}: expected {_COUNT_WORDS[len(columns)]} ({', '.join(columns)}), got {width}{named}{extra}"
    )


def _number_like(cell: str) -> bool:
    """Whether a cell is a number, strictly or for Python's lenient ``float`` (``1_0``): never a header's."""
    try:
        float(cell)
    except ValueError:
        return is_number(cell)
    return True


def _csv_table(path: Path, integer: bool, columns: Optional[Tuple[str, ...]]) -> np.ndarray:
    """A CSV table of numbers, an optional header line (a first row without anything like a number)
    skipped."""
    rows = read_csv_table(path)
    header = None
    if rows and not any(_number_like(cell) for cell in rows[0][1]):
        header = [cell.strip() for cell in rows[0][1]]
        rows = rows[1:]
    width = len(header) if header is not None else len(rows[0][1]) if rows else 0
    _table_columns(path, width, columns, header)
    values = []
    for line, cells in rows:
        if len(cells) != width:
            raise DatasetError(
                f"{path}: rows have different numbers of columns (line {line} has {len(cells)}, "
                f"{'the header' if header is not None else 'the first line'} {width})"
            )
        row = []
        for column, cell in enumerate(cells):
            try:
                row.append(parse_integer(cell) if integer else parse_number(cell, finite=False))
            except ValueError as error:
                name = repr(header[column]) if header is not None else str(column + 1)
                raise DatasetError(f"{path}: line {line}, column {name}: {error}") from None
        values.append(row)
    return np.array(values, dtype=np.int64 if integer else np.float64).reshape(len(values), width)


def _npy_table(path: Path) -> np.ndarray:
    """A ``.npy`` array read without pickles, its declared size checked against the budget first."""
    try:
        with regular_file(path).open("rb") as stream:
            shape, dtype = _npy_header(stream)
        check_allocation(math.prod(shape), dtype.itemsize, f"an array of shape {shape}", path)
        return np.load(path, allow_pickle=False)
    except (DatasetError, MemoryBudgetError):  # ours, already naming the file or the setting
        raise
    except (ValueError, OSError, EOFError) as error:
        raise DatasetError(f"{path}: not a readable .npy array ({error})") from None


def _read_table(path: Path, *, integer: bool, columns: Optional[Tuple[str, ...]] = None) -> np.ndarray:
    """A table of an edge-list folder: ids (``integer``, whole numbers within int64) or finite-or-not floats.

    ``columns`` names the columns the table must have (``None``: any number); a CSV file may
    start with a header line, refused when it names a different number of columns.
    """
    if path.suffix != ".npy":
        return _csv_table(path, integer, columns)
    array = _npy_table(path)
    if array.size and not np.issubdtype(array.dtype, np.number):
        raise DatasetError(f"{path}: expected numbers, got dtype {array.dtype}")
    if columns is not None and array.ndim == 2:
        _table_columns(path, array.shape[1], columns, None)
    if integer and array.size:
        if not np.isfinite(array).all() or (array != np.round(array)).any():
            raise DatasetError(
                f"{path}: expected whole numbers (node or class ids), found values such as "
                f"{array[np.isfinite(array) & (array != np.round(array))][:3].tolist()}"
            )
        if (
            array.dtype.kind != "i"
            and (array > MAX_ID).any()
            or array.dtype.kind == "f"
            and (array < -MAX_ID).any()
        ):
            bad = array[(array > MAX_ID) | (array < -MAX_ID)][0]
            raise DatasetError(f"{path}: holds the id {bad:.6g}, too large for an id (at most 2^63 - 1)")
        array = array.astype(np.int64)
    return array


@overload
def _one_of(folder: Path, stem: str, required: Literal[True]) -> Path: ...
@overload
def _one_of(folder: Path, stem: str, required: bool) -> Optional[Path]: ...


def _one_of(folder: Path, stem: str, required: bool) -> Optional[Path]:
    found = [
        folder / f"{stem}{suffix}"
        for suffix in (".npy", ".csv")
        if (folder / f"{stem}{suffix}").exists() or (folder / f"{stem}{suffix}").is_symlink()
    ]
    if len(found) > 1:
        raise DatasetError(f"{folder}: both {found[0].name} and {found[1].name} exist; keep one")
    if not found and required:
        raise DatasetNotFoundError(
            f"{folder}: missing {stem}.csv or {stem}.npy (an edge-list graph folder holds "
            "edges.*, labels.* and optionally features.*)"
        )
    return regular_file(found[0]) if found else None


def load_edge_list(folder: Union[str, Path], *, missing_features: str = "identity") -> Data:
    """Read a folder with ``edges.csv|npy``, ``labels.csv|npy`` and optional ``features.csv|npy``.

    ``labels.*`` holds one class id per node (``-1`` for unlabelled) and defines the number
    of nodes ``N``; ``edges.*`` holds one ``source,target`` pair of node ids per row (kept
    directed, as written); ``features.*`` holds one row of numbers per node. CSV files may
    start with a header line (a first row without any number), which must name as many
    columns as the rows hold: two in ``edges.*`` (weights are not read: a third column is
    refused), one in ``labels.*``. Numbers are read strictly
    (:func:`~pdenets.data.csvfile.parse_number`: ``1_000`` is refused, not read as 1000);
    ``.npy`` files are read without pickles, their headers checked against the memory budget
    first. Keeping both a ``.csv`` and a ``.npy`` of the same stem is refused. Ids must be
    whole numbers within int64, edges must lie in ``[0, N)``, features must be finite.

    Args:
        folder: the graph's folder.
        missing_features: node features when the file holds none: ``"identity"`` (one-hot node
            ids, an ``N × N`` matrix) or ``"degree"`` (one column, each node's out-degree)
            (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y``, ``num_nodes``, ``name``
        (the folder's name) and ``source`` (the folder).

    Raises:
        DatasetNotFoundError: the folder, ``edges.*`` or ``labels.*`` is missing.
        DatasetError: an unreadable or inconsistent table (wrong number of columns or rows,
            a cell that is not a number, non-integer ids, ids out of range, NaN/inf features),
            both ``.csv`` and ``.npy`` of one stem, a table that is not a regular file, or sizes
            above the memory budget.
        ValueError: the folder holds no features and ``missing_features`` is not one of
            ``"identity"``, ``"degree"``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "edges.csv").write_text("source,target\\n0,1\\n1,2\\n")
        >>> _ = (folder / "labels.csv").write_text("0\\n1\\n-1\\n")
        >>> graph = load_edge_list(folder, missing_features="degree")
        >>> graph.x.tolist(), graph.y.tolist(), graph.edge_index.tolist()
        ([[1.0], [1.0], [0.0]], [0, 1, -1], [[0, 1], [1, 2]])
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetNotFoundError(f"missing graph folder {folder}")
    edges_path, labels_path = _one_of(folder, "edges", True), _one_of(folder, "labels", True)
    labels_table = _read_table(labels_path, integer=True, columns=("label",)).reshape(-1)
    num_nodes = labels_table.shape[0]
    if num_nodes == 0:
        raise DatasetError(f"{labels_path}: no labels (the file defines the nodes: one class id per node)")
    edges = _read_table(edges_path, integer=True, columns=("source", "target"))
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise DatasetError(f"{edges_path}: expected two columns (source, target), got shape {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
        raise DatasetError(
            f"{edges_path}: node ids must lie in [0, {num_nodes}) ({num_nodes} labels), found "
            f"{int(edges.min())}..{int(edges.max())}"
        )
    edge_index = torch.from_numpy(np.ascontiguousarray(edges.T))
    features_path = _one_of(folder, "features", False)
    if features_path is not None:
        table = _read_table(features_path, integer=False)
        if table.ndim != 2 or table.shape[0] != num_nodes:
            raise DatasetError(
                f"{features_path}: expected {num_nodes} rows (one per node), got shape {table.shape}"
            )
        features = _dense_features(table, features_path)
    else:
        features = _missing_features(edge_index, num_nodes, missing_features, folder)
    return _pyg_data(
        x=features,
        edge_index=edge_index,
        y=_labels(labels_table, num_nodes, labels_path),
        num_nodes=num_nodes,
        name=folder.name,
        source=str(folder),
    )


# ----------------------------------------------------------------------------------------
# writing, and the one entry point


def save_graph_npz(data: Data, path: Union[str, Path], *, overwrite: bool = False) -> Path:
    """Write a PyG ``Data`` (``x`` dense or sparse, ``edge_index``, ``y``) in the layout ``load_graph`` reads.

    The file is written atomically; an existing file is refused unless ``overwrite=True``.
    The adjacency (``adj_data``, ``adj_indices``, ``adj_indptr``, ``adj_shape``; weight 1 per
    edge) and the features (``attr_*``) are stored as CSR float32 matrices, the labels as
    int64 ids in ``labels`` (all ``-1`` when ``data`` has no ``y``); :func:`load_npz` reads
    the file back.

    Args:
        data: the graph; it needs ``x``, ``edge_index`` and ``num_nodes``, ``y`` is optional.
        path: the file to write; its name must end in ``.npz``.
        overwrite: replace an existing file (default: ``False``).

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: the file name does not end in ``.npz``.
        FileExistsError: ``path`` exists and ``overwrite`` is ``False``.

    Examples:
        >>> import tempfile, os, torch
        >>> from torch_geometric.data import Data
        >>> path = os.path.join(tempfile.mkdtemp(), "g.npz")
        >>> graph = Data(x=torch.eye(2), edge_index=torch.tensor([[0], [1]]), y=torch.tensor([0, 1]))
        >>> save_graph_npz(graph, path).name
        'g.npz'
        >>> save_graph_npz(graph, path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        FileExistsError: ... exists; pass overwrite=True to replace it
    """
    from .._io import atomic_write

    path = Path(path)
    if path.suffix != ".npz":
        raise ValueError(f"{path}: the file name must end in .npz")
    if path.exists() and not overwrite:
        raise FileExistsError(f"{path} exists; pass overwrite=True to replace it")
    num_nodes = int(data.num_nodes)
    edge_index = data.edge_index.cpu().numpy()
    adjacency = sp.csr_matrix(
        (np.ones(edge_index.shape[1], dtype=np.float32), (edge_index[0], edge_index[1])),
        shape=(num_nodes, num_nodes),
    )
    x = data.x
    attributes = sp.csr_matrix(
        x.to_dense().cpu().numpy() if x.layout != torch.strided else x.cpu().numpy(), dtype=np.float32
    )
    labels = (
        data.y.cpu().numpy().astype(np.int64)
        if getattr(data, "y", None) is not None
        else -np.ones(num_nodes, np.int64)
    )
    arrays = {
        "adj_data": adjacency.data,
        "adj_indices": adjacency.indices,
        "adj_indptr": adjacency.indptr,
        "adj_shape": np.array(adjacency.shape),
        "attr_data": attributes.data,
        "attr_indices": attributes.indices,
        "attr_indptr": attributes.indptr,
        "attr_shape": np.array(attributes.shape),
        "labels": labels,
    }
    with atomic_write(path, "wb") as stream:
        np.savez(stream, **arrays)
    return path


def load_graph(
    spec: str, data_dir: Optional[Union[str, Path]] = None, *, missing_features: str = "identity"
) -> Data:
    """Load a graph by specification (see the module docstring).

    Dispatches on ``spec``: a path ending in ``.npz`` → :func:`load_npz`;
    ``planetoid/<name>`` → :func:`load_planetoid`; ``cora``, ``citeseer`` or ``pubmed`` →
    ``<data dir>/npz/<name>.npz`` with :func:`load_npz`; an existing folder →
    :func:`load_edge_list`. Nothing is downloaded.

    Args:
        spec: a dataset name, ``planetoid/<name>``, a path to a ``.npz`` file or a folder.
        data_dir: the data directory for named datasets (default: ``None``, see
            :func:`~pdenets.data.paths.resolve_data_dir`).
        missing_features: node features for a ``.npz`` path or a folder without any:
            ``"identity"`` (one-hot node ids) or ``"degree"`` (each node's out-degree)
            (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y`` (``-1``: unlabelled),
        ``num_nodes``, ``name`` and ``source``.

    Raises:
        ValueError: ``spec`` matches none of the forms above.
        DatasetNotFoundError: a file the specification names is missing.
        DatasetError: the file cannot be used (see the loaders).

    Examples:
        >>> load_graph("no-such-graph")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown graph 'no-such-graph': use cora, citeseer, pubmed, planetoid/<name>, a path ...
    """
    text = str(spec)
    lowered = text.lower()
    if lowered.endswith(".npz") and (os.sep in text or "/" in text or Path(text).exists()):
        return load_npz(text, missing_features=missing_features)
    if lowered.startswith("planetoid/"):
        return load_planetoid(lowered.split("/", 1)[1], data_dir)
    if lowered in PLANETOID_NAMES:
        root = resolve_data_dir(data_dir)
        return load_npz(root / "npz" / f"{lowered}.npz", name=lowered, data_dir=root)
    if Path(text).is_dir():
        return load_edge_list(text, missing_features=missing_features)
    raise ValueError(
        f"unknown graph {spec!r}: use cora, citeseer, pubmed, planetoid/<name>, a path to a .npz file "
        "or a folder with edges.csv and labels.csv"
    )
