"""gnn-benchmark ``.npz`` graphs (Shchur et al., *Pitfalls of Graph Neural Network Evaluation*): a path to
a file, or the named datasets ``cora``, ``citeseer``, ``pubmed`` of the data folder (``npz/<name>.npz``, the
files the Diff-ResNet code reads); and :func:`save_graph_npz`, which writes the layout from a PyG ``Data``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import numpy as np
import torch

from ..errors import DatasetError
from ..paths import regular_file, resolve_data_dir
from ._common import (
    PLANETOID_NAMES,
    GraphFormat,
    _csr,
    _dense_features,
    _edge_index,
    _first_layout,
    _labels,
    _missing,
    _missing_features,
    _pyg_data,
    object_array_error,
    read_npz_arrays,
    register_graph_format,
    sp,
)

if TYPE_CHECKING:
    from torch_geometric.data import Data


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
    from ..._io import atomic_write

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


def _is_npz_path(spec: str) -> bool:
    return spec.lower().endswith(".npz") and (os.sep in spec or "/" in spec or Path(spec).exists())


def _load_npz_path(spec: str, data_dir: Optional[Union[str, Path]], missing_features: str) -> Data:
    return load_npz(spec, missing_features=missing_features)


def _load_named(spec: str, data_dir: Optional[Union[str, Path]], missing_features: str) -> Data:
    root = resolve_data_dir(data_dir)
    name = spec.lower()
    return load_npz(root / "npz" / f"{name}.npz", name=name, data_dir=root, missing_features=missing_features)


register_graph_format(
    GraphFormat(
        "npz",
        "a gnn-benchmark .npz file (CSR adjacency, attributes, labels), in either key layout that circulates",
        "a path to a .npz file",
        _is_npz_path,
        _load_npz_path,
        priority=10,
    )
)
register_graph_format(
    GraphFormat(
        "named",
        "cora, citeseer, pubmed: the gnn-benchmark files npz/<name>.npz of the data folder",
        ", ".join(PLANETOID_NAMES),
        lambda spec: spec.lower() in PLANETOID_NAMES,
        _load_named,
        priority=30,
    )
)
