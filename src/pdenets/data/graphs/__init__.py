"""Graphs from local files: every graph format in one registry, and :func:`load_graph`, which reads them all.

Every format returns a PyTorch Geometric :class:`~torch_geometric.data.Data` with

* ``x`` — ``(N, F)`` float32 node features (dense),
* ``edge_index`` — ``(2, E)`` int64 directed edges as stored in the file,
* ``y`` — ``(N,)`` int64 labels, ``-1`` for nodes without a label,
* ``name`` — a short name, ``source`` — the file(s) read.

The built-in formats (``pdenets list graph-formats``; one module of this package each):

``cora``, ``citeseer``, ``pubmed`` (:mod:`.npz`)
    ``<data dir>/npz/<name>.npz`` — the gnn-benchmark files the Diff-ResNet code reads.
``planetoid/cora``, ``planetoid/citeseer``, ``planetoid/pubmed`` (:mod:`.planetoid`)
    ``<data dir>/planetoid/<Name>/raw/ind.<name>.*`` — the Planetoid pickles, read with a
    restricted unpickler (:mod:`pdenets.data.safe_pickle`).
a path to a ``.npz`` file (:mod:`.npz`)
    a gnn-benchmark graph in either key layout that circulates: ``adj_data``,
    ``adj_indices``, ``adj_indptr``, ``adj_shape`` (+ ``attr_*`` or a dense ``attr_matrix``)
    or the dotted ``adj_matrix.data``, ``adj_matrix.indices``, ... (+ ``attr_matrix.*`` or a
    dense ``attr_matrix``); ``labels`` as ids or one-hot rows. Object arrays (node and
    class names) are never unpickled; they are ignored. :func:`save_graph_npz` writes this
    layout from a PyG ``Data``.
a folder (:mod:`.folder`)
    a plain edge list: ``edges.csv`` or ``edges.npy`` (one ``source,target`` pair of node
    ids per row; a header line is allowed), ``labels.csv``/``labels.npy`` (one class id per
    node, ``-1`` for unlabelled; defines the number of nodes) and optionally
    ``features.csv``/``features.npy`` (one row per node).
a path to a ``.txt``, ``.tsv``, ``.edges`` or ``.edgelist`` file (:mod:`.edge_list`)
    a text edge list as SNAP or NetworkX write it (``source target`` per line, ``#`` comments, nodes named
    by any numbers or words), with optional ``<stem>-labels.txt`` and ``<stem>-features.txt`` beside it.

A new format is one module here (or in a ``pdenets.graph_formats`` plug-in) that registers a
:class:`GraphFormat`: what it accepts, how it loads, its priority against the others.

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

from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Optional, Union

from ..errors import DatasetError, DatasetNotFoundError
from ._common import (
    GRAPH_FORMATS,
    GRAPH_SOURCES,
    MISSING_FEATURES,
    PLANETOID_NAMES,
    GraphFormat,
    NpzArrays,
    _pyg_data,
    object_array_error,
    read_npz_arrays,
    register_graph_format,
    sp,
)
from .edge_list import load_text_edge_list
from .folder import load_edge_list
from .npz import load_npz, save_graph_npz
from .planetoid import load_planetoid

if TYPE_CHECKING:
    from torch_geometric.data import Data

__all__ = [
    "DatasetError",
    "DatasetNotFoundError",
    "GraphFormat",
    "GRAPH_FORMATS",
    "register_graph_format",
    "load_graph",
    "graph_data",
    "accepted_forms",
    "load_planetoid",
    "load_npz",
    "load_edge_list",
    "load_text_edge_list",
    "save_graph_npz",
    "read_npz_arrays",
    "NpzArrays",
    "object_array_error",
    "GRAPH_SOURCES",
    "MISSING_FEATURES",
    "PLANETOID_NAMES",
    "sp",
    "_pyg_data",
]


def load_graph(
    spec: str, data_dir: Optional[Union[str, Path]] = None, *, missing_features: str = "identity"
) -> Data:
    """Load a graph by specification: the first registered format, by priority, that accepts it.

    The built-in formats (module docstring; ``pdenets list graph-formats`` lists every one): a path ending
    in ``.npz`` → :func:`load_npz`; ``planetoid/<name>`` → :func:`load_planetoid`; ``cora``, ``citeseer``
    or ``pubmed`` → ``<data dir>/npz/<name>.npz``; an existing folder → :func:`load_edge_list`; a
    ``.txt``/``.tsv`` edge list → :func:`load_text_edge_list`. Nothing is downloaded.

    Args:
        spec: a dataset name, ``planetoid/<name>``, a path to a file or a folder.
        data_dir: the data directory for named datasets (default: ``None``, see
            :func:`~pdenets.data.paths.resolve_data_dir`).
        missing_features: node features for a file or folder without any:
            ``"identity"`` (one-hot node ids) or ``"degree"`` (each node's out-degree)
            (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y`` (``-1``: unlabelled),
        ``num_nodes``, ``name`` and ``source``.

    Raises:
        ValueError: ``spec`` matches no format (the message lists every accepted form).
        DatasetNotFoundError: a file the specification names is missing.
        DatasetError: the file cannot be used (see the loaders).

    Examples:
        >>> load_graph("no-such-graph")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: unknown graph 'no-such-graph': use a path to a .npz file, planetoid/<name>, cora, ...
    """
    from ..._registry import call_plugin

    text = str(spec)
    for entry in _by_priority():
        if call_plugin(GRAPH_FORMATS, entry.name, "accepts", entry.accepts, text):
            return entry.load(text, data_dir, missing_features)
    raise ValueError(f"unknown graph {spec!r}: use {accepted_forms()}")


def graph_data(graph: Any, *, missing_features: str = "identity") -> Data:
    """A graph in any of the forms a user hands one over: a specification of :func:`load_graph` (a path or a
    name), a PyG ``Data`` with ``x`` and ``edge_index`` (a copy), or a pair ``(x, edge_index)``.

    Args:
        graph: the graph.
        missing_features: as in :func:`load_graph`, for a file or folder without node features.

    Raises:
        TypeError: ``graph`` is none of these, naming its type.

    Examples:
        >>> import torch
        >>> graph_data((torch.eye(3), torch.tensor([[0, 1], [1, 2]]))).num_nodes
        3
    """
    if isinstance(graph, (str, Path)):
        return load_graph(str(graph), missing_features=missing_features)
    if isinstance(graph, tuple) and len(graph) == 2:
        import torch
        from torch_geometric.data import Data

        x, edge_index = (torch.as_tensor(part) for part in graph)
        return Data(x=x, edge_index=edge_index, num_nodes=len(x))
    if hasattr(graph, "edge_index") and getattr(graph, "x", None) is not None:
        return graph.clone()
    raise TypeError(
        "graph must be a path or name of a graph file, a torch_geometric Data with x and edge_index, "
        f"or a pair (x, edge_index); got {type(graph).__name__}"
    )


def _by_priority() -> List[GraphFormat]:
    """The registered formats in the order :func:`load_graph` asks them (stable: ties by registration)."""
    return sorted(GRAPH_FORMATS.values(), key=lambda entry: entry.priority)


def accepted_forms() -> str:
    """Every way of naming a graph that :func:`load_graph` accepts, for help texts and messages.

    Examples:
        >>> accepted_forms()  # doctest: +ELLIPSIS
        'a path to a .npz file, planetoid/<name>, cora, citeseer, pubmed, a folder with edges.csv ...'
    """
    return ", ".join(entry.usage for entry in _by_priority())
