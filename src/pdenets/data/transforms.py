"""Graph preprocessing steps, each a small function ``Data -> Data`` usable on its own.

The Diff-ResNet protocol (Wang, Dou, Bao, Shi, *Diffusion Mechanism in Residual Neural Network:
Theory and Applications*, Appendix E.2) composes them in
:func:`preprocess_citation_graph`: undirected, no self-loops, unit edge weights, largest
connected component, binary bag-of-words, row-normalized features.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from .._lazy import LazyModule
from .graphs import _pyg_data

#: scipy.sparse, imported when a graph is read (not when pdenets starts)
sp = LazyModule("scipy.sparse")

if TYPE_CHECKING:  # torch_geometric is imported where a graph is built, not when pdenets starts
    import scipy.sparse
    from torch_geometric.data import Data


__all__ = [
    "to_undirected",
    "remove_self_loops",
    "largest_connected_component",
    "binarize_features",
    "row_normalize_features",
    "preprocess_citation_graph",
    "adjacency_matrix",
]


def _copy(data: Data, **changes) -> Data:
    values = {key: data[key] for key in data.keys()}
    values.update(changes)
    return _pyg_data(**values)


def adjacency_matrix(data: Data) -> scipy.sparse.csr_matrix:
    """Unit-weight scipy CSR adjacency (duplicates summed)."""
    row, col = data.edge_index.cpu().numpy()
    return sp.csr_matrix((np.ones(row.shape[0], dtype=np.float32), (row, col)), shape=(data.num_nodes,) * 2)


def _edges(matrix: scipy.sparse.spmatrix) -> torch.Tensor:
    coo = sp.coo_matrix(matrix)
    order = np.lexsort((coo.col, coo.row))
    return torch.from_numpy(np.vstack([coo.row[order], coo.col[order]]).astype(np.int64))


def to_undirected(data: Data) -> Data:
    """Add the reverse of every edge; duplicate edges collapse to one (unit weights)."""
    adjacency = adjacency_matrix(data)
    adjacency = ((adjacency + adjacency.T) > 0).astype(np.float32)
    return _copy(data, edge_index=_edges(adjacency))


def remove_self_loops(data: Data) -> Data:
    keep = data.edge_index[0] != data.edge_index[1]
    return _copy(data, edge_index=data.edge_index[:, keep])


def largest_connected_component(data: Data) -> Data:
    """Keep the nodes of the largest (weakly) connected component, relabelled in their original order.

    ``original_index`` records each kept node's id in the input graph.
    """
    from scipy.sparse.csgraph import connected_components

    count, component = connected_components(adjacency_matrix(data), directed=True, connection="weak")
    sizes = np.bincount(component)
    keep = np.flatnonzero(component == sizes.argmax())
    mapping = -np.ones(data.num_nodes, dtype=np.int64)
    mapping[keep] = np.arange(keep.size)
    row, col = data.edge_index.cpu().numpy()
    inside = (mapping[row] >= 0) & (mapping[col] >= 0)
    edge_index = torch.from_numpy(np.vstack([mapping[row[inside]], mapping[col[inside]]]))
    keep_t = torch.from_numpy(keep)
    original = data["original_index"][keep_t] if "original_index" in data else keep_t
    return _copy(
        data,
        x=data.x[keep_t],
        y=data.y[keep_t],
        edge_index=edge_index,
        num_nodes=int(keep.size),
        original_index=original,
    )


def binarize_features(data: Data) -> Data:
    """Bag-of-words presence: every non-zero feature becomes 1."""
    return _copy(data, x=(data.x != 0).to(data.x.dtype))


def row_normalize_features(data: Data) -> Data:
    """Each feature row divided by its sum (all-zero rows stay zero)."""
    sums = data.x.sum(1, keepdim=True)
    return _copy(data, x=torch.where(sums > 0, data.x / sums.clamp_min(1e-30), data.x))


def preprocess_citation_graph(data: Data) -> Data:
    """The protocol's preprocessing: undirected, no self-loops, largest component, binary + row-normalized
    features.

    The graph keeps unit weights and no self-loops; the GCN-style self-loops and symmetric
    normalization belong to the models (:func:`pdenets.operators.gcn_normalize`).
    """
    data = remove_self_loops(to_undirected(data))
    data = largest_connected_component(data)
    return row_normalize_features(binarize_features(data))
