"""The Planetoid pickles ``planetoid/<Name>/raw/ind.<name>.*`` (Yang et al.; Kipf & Welling's node order),
read with a restricted unpickler that admits nothing but arrays."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import numpy as np
import torch

from ..csvfile import (
    parse_integer,
    read_text_file,
    shown_value,
)
from ..errors import DatasetError
from ..limits import check_allocation
from ..paths import regular_file, resolve_data_dir
from ._common import (
    PLANETOID_NAMES,
    PLANETOID_PARTS,
    GraphFormat,
    _dense_features,
    _labels,
    _missing,
    _pyg_data,
    register_graph_format,
    sp,
)

if TYPE_CHECKING:
    from torch_geometric.data import Data


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
    from ..safe_pickle import load_array_pickle  # scipy's sparse classes, imported with it

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


def _load_planetoid_spec(spec: str, data_dir: Optional[Union[str, Path]], missing_features: str) -> Data:
    return load_planetoid(spec.lower().split("/", 1)[1], data_dir)


register_graph_format(
    GraphFormat(
        "planetoid",
        "the Planetoid pickles planetoid/<Name>/raw/ind.<name>.* of the data folder (restricted unpickler)",
        "planetoid/<name>",
        lambda spec: spec.lower().startswith("planetoid/"),
        _load_planetoid_spec,
        priority=20,
    )
)
