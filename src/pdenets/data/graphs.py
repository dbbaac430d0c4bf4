"""Citation graphs from local files: Planetoid raw pickles and gnn-benchmark ``.npz`` files.

Every loader returns a PyTorch Geometric :class:`~torch_geometric.data.Data` with

* ``x`` — ``(N, F)`` float32 node features (dense),
* ``edge_index`` — ``(2, E)`` directed edges as stored in the file,
* ``y`` — ``(N,)`` int64 labels, ``-1`` for nodes without a label,
* ``name`` — a short name, ``source`` — the file(s) read.

Dataset specifications accepted by :func:`load_graph`:

``cora``, ``citeseer``, ``pubmed``
    ``<data dir>/npz/<name>.npz`` — the gnn-benchmark files the Diff-ResNet code reads
    (what paper 000, Table 1 was computed on).
``planetoid/cora``, ``planetoid/citeseer``, ``planetoid/pubmed``
    ``<data dir>/planetoid/<Name>/raw/ind.<name>.*`` — the Planetoid pickles, read with a
    restricted unpickler (:mod:`pdenets.data.safe_pickle`).
a path to a ``.npz`` file
    a user's own graph in the gnn-benchmark layout (``adj_data/adj_indices/adj_indptr/
    adj_shape``, ``attr_data/attr_indices/attr_indptr/attr_shape`` or a dense
    ``attr_matrix``, and ``labels``).

Nothing is downloaded. A missing file raises :class:`DatasetNotFoundError` naming the
file, the directory searched and where the data comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Union

import numpy as np
import scipy.sparse as sp
import torch
from torch_geometric.data import Data

from .paths import DATA_ENV_VAR, resolve_data_dir
from .safe_pickle import load_array_pickle

__all__ = ["DatasetNotFoundError", "load_graph", "load_planetoid", "load_npz", "GRAPH_SOURCES"]

PLANETOID_NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")

GRAPH_SOURCES: Dict[str, str] = {
    "planetoid": "https://github.com/kimiyoung/planetoid (raw files also in github.com/tkipf/gcn, gcn/data/)",
    "npz": "https://github.com/shchur/gnn-benchmark (data/npz/); also github.com/shwangtangjun/Diff-ResNet, graph/data/",
}


class DatasetNotFoundError(FileNotFoundError):
    """A dataset file is missing from the data directory (nothing is downloaded)."""


def _missing(path: Path, data_dir: Path, source: str, detail: str = "") -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"missing dataset file {path}{detail}. Searched data directory {data_dir} (set it with --data-dir or "
        f"${DATA_ENV_VAR}). Get the file from {GRAPH_SOURCES[source]} and place it at that path; pdenets never "
        "downloads data."
    )


def _sparse_to_dense_float(matrix) -> torch.Tensor:
    return torch.from_numpy(np.asarray(sp.csr_matrix(matrix).todense(), dtype=np.float32))


def load_planetoid(name: str, data_dir: Optional[Union[str, Path]] = None) -> Data:
    """Read ``planetoid/<Name>/raw/ind.<name>.*`` (Kipf & Welling's node ordering).

    Test nodes are placed at the ids listed in ``test.index``; ids inside the test range
    that the file does not list (CiteSeer has 15) get zero features and label ``-1``.
    """
    key = name.lower()
    if key not in PLANETOID_NAMES:
        raise ValueError(f"unknown Planetoid dataset {name!r}; choose from {sorted(PLANETOID_NAMES)}")
    root = resolve_data_dir(data_dir)
    folder = root / "planetoid" / PLANETOID_NAMES[key] / "raw"
    paths = {part: folder / f"ind.{key}.{part}" for part in PLANETOID_PARTS}
    for part, path in paths.items():
        if not path.is_file():
            detail = ""
            if key == "pubmed" and part == "allx":
                detail = " (the features of 18,657 PubMed nodes live only in this file)"
            raise _missing(path, root, "planetoid", detail)
    parts = {part: load_array_pickle(path) for part, path in paths.items() if part != "test.index"}
    test_index = np.loadtxt(paths["test.index"], dtype=np.int64).reshape(-1)

    allx, tx = sp.csr_matrix(parts["allx"]), sp.csr_matrix(parts["tx"])
    ally, ty = np.asarray(parts["ally"]), np.asarray(parts["ty"])
    graph = parts["graph"]
    num_nodes = max(len(graph), int(test_index.max()) + 1, allx.shape[0] + tx.shape[0])
    features = sp.lil_matrix((num_nodes, allx.shape[1]), dtype=np.float32)
    features[: allx.shape[0]] = allx
    features[test_index] = tx
    onehot = np.zeros((num_nodes, ally.shape[1]), dtype=np.float32)
    onehot[: ally.shape[0]] = ally
    onehot[test_index] = ty
    labels = np.where(onehot.sum(1) > 0, onehot.argmax(1), -1)

    rows, cols = [], []
    for node, neighbours in graph.items():
        for neighbour in neighbours:
            rows.append(int(node))
            cols.append(int(neighbour))
    edge_index = torch.tensor([rows, cols], dtype=torch.long)
    return Data(x=_sparse_to_dense_float(features), edge_index=edge_index, y=torch.from_numpy(labels).long(),
                num_nodes=num_nodes, name=f"planetoid/{key}", source=str(folder))


def _csr(archive, prefix: str) -> sp.csr_matrix:
    return sp.csr_matrix((archive[f"{prefix}_data"], archive[f"{prefix}_indices"], archive[f"{prefix}_indptr"]),
                         shape=tuple(archive[f"{prefix}_shape"]))


def load_npz(path: Union[str, Path], *, name: Optional[str] = None, data_dir: Optional[Path] = None) -> Data:
    """Read a gnn-benchmark ``.npz`` graph (arrays only: object arrays are never unpickled)."""
    path = Path(path)
    if not path.is_file():
        raise _missing(path, resolve_data_dir(data_dir) if data_dir else path.parent, "npz")
    with np.load(path, allow_pickle=False) as archive:
        keys = set(archive.files)
        required = {"adj_data", "adj_indices", "adj_indptr", "adj_shape", "labels"}
        if not required <= keys:
            raise ValueError(f"{path} lacks {sorted(required - keys)}; expected the gnn-benchmark layout "
                             "(adj_data/adj_indices/adj_indptr/adj_shape, attr_* or attr_matrix, labels)")
        adjacency = _csr(archive, "adj").tocoo()
        if {"attr_data", "attr_indices", "attr_indptr", "attr_shape"} <= keys:
            features = _sparse_to_dense_float(_csr(archive, "attr"))
        elif "attr_matrix" in keys:
            features = torch.from_numpy(np.asarray(archive["attr_matrix"], dtype=np.float32))
        else:
            raise ValueError(f"{path} has no node attributes (attr_* CSR parts or attr_matrix)")
        labels = np.asarray(archive["labels"])
    if labels.ndim == 2:  # one-hot
        labels = np.where(labels.sum(1) > 0, labels.argmax(1), -1)
    num_nodes = adjacency.shape[0]
    if adjacency.shape[0] != adjacency.shape[1] or features.shape[0] != num_nodes or labels.shape[0] != num_nodes:
        raise ValueError(f"{path}: adjacency {adjacency.shape}, attributes {tuple(features.shape)} and "
                         f"labels {labels.shape} disagree on the number of nodes")
    edge_index = torch.from_numpy(np.vstack([adjacency.row, adjacency.col]).astype(np.int64))
    return Data(x=features, edge_index=edge_index, y=torch.from_numpy(labels.astype(np.int64)), num_nodes=num_nodes,
                name=name or path.stem, source=str(path))


def load_graph(spec: str, data_dir: Optional[Union[str, Path]] = None) -> Data:
    """Load a graph by specification (see the module docstring).

    Example:
        >>> load_graph("no-such-graph")
        Traceback (most recent call last):
        ...
        ValueError: unknown graph 'no-such-graph': use cora, citeseer, pubmed, planetoid/<name> or a path to a .npz file
    """
    text = str(spec)
    lowered = text.lower()
    if lowered.endswith(".npz") and ("/" in text or Path(text).exists()):
        return load_npz(text)
    if lowered.startswith("planetoid/"):
        return load_planetoid(lowered.split("/", 1)[1], data_dir)
    if lowered in PLANETOID_NAMES:
        root = resolve_data_dir(data_dir)
        return load_npz(root / "npz" / f"{lowered}.npz", name=lowered, data_dir=root)
    raise ValueError(f"unknown graph {spec!r}: use cora, citeseer, pubmed, planetoid/<name> or a path to a .npz file")
