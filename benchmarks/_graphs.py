"""Graphs the benchmarks are measured on, built at any size without an N x N or int64 edge list in memory."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["block_graph_csr"]


def block_graph_csr(
    num_nodes: int, num_classes: int, degree: int, features: int, seed: int = 0, chunk: int = 1 << 20
):
    """The block graph of :func:`block_graph` built for very large ``N``: chunked, 32-bit indices, CSR only.

    The same construction (80 % of each node's ``degree / 2`` drawn edges inside its block, symmetrized,
    bag-of-words features with a class signal), drawn chunk by chunk, so that nothing of ``N × features``
    floats or int64 edge lists is ever held. Returns the features as a CSR tensor, the labels, and the GCN
    weights ``D̃^{-1/2} (A + I) D̃^{-1/2}`` as a CSR tensor (32-bit indices: ~8 bytes per stored entry).
    """
    import scipy.sparse as sp

    generator = np.random.default_rng(seed)
    labels = generator.integers(0, num_classes, num_nodes).astype(np.int8)
    order = np.argsort(labels, kind="stable").astype(np.int32)
    sizes = np.bincount(labels, minlength=num_classes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    centres = generator.random((num_classes, features)) < 0.1
    half = max(1, degree // 2)
    sources, targets, bags = [], [], []
    for first in range(0, num_nodes, chunk):
        nodes = np.arange(first, min(first + chunk, num_nodes), dtype=np.int32)
        rows = np.repeat(nodes, half)
        block = labels[rows]
        inside = generator.random(rows.size) < 0.8
        same_block = order[starts[block] + (generator.random(rows.size) * sizes[block]).astype(np.int64)]
        cols = np.where(inside, same_block, generator.integers(0, num_nodes, rows.size, dtype=np.int32))
        keep = rows != cols
        sources.append(rows[keep])
        targets.append(cols[keep])
        bag = (generator.random((nodes.size, features), dtype=np.float32) < 0.03) | (
            centres[labels[nodes]] & (generator.random((nodes.size, features), dtype=np.float32) < 0.3)
        )
        bag[:, 0] |= ~bag.any(1)
        bag = sp.csr_matrix(bag.astype(np.float32))
        bag.data /= np.repeat(np.asarray(bag.sum(1)).ravel(), np.diff(bag.indptr))
        bags.append(bag)
    x = sp.vstack(bags, format="csr")
    del bags
    loops = np.arange(num_nodes, dtype=np.int32)
    rows = np.concatenate(sources + targets + [loops])
    cols = np.concatenate(targets + sources + [loops])
    del sources, targets
    adjacency = sp.coo_matrix(
        (np.ones(rows.size, dtype=np.float32), (rows, cols)), shape=(num_nodes, num_nodes)
    )
    del rows, cols
    adjacency = adjacency.tocsr()  # duplicates summed, as coalescing does
    adjacency.sort_indices()
    inverse_sqrt = (np.asarray(adjacency.sum(1), dtype=np.float32).ravel()) ** -0.5
    for first in range(0, num_nodes, chunk):  # w_ij / sqrt(d_i d_j), row block by row block
        begin, end = adjacency.indptr[first], adjacency.indptr[min(first + chunk, num_nodes)]
        row_scale = np.repeat(
            inverse_sqrt[first : first + chunk], np.diff(adjacency.indptr[first : first + chunk + 1])
        )
        adjacency.data[begin:end] *= row_scale * inverse_sqrt[adjacency.indices[begin:end]]

    def as_torch(matrix):
        return torch.sparse_csr_tensor(
            torch.from_numpy(matrix.indptr.astype(np.int32, copy=False)),
            torch.from_numpy(matrix.indices.astype(np.int32, copy=False)),
            torch.from_numpy(matrix.data),
            matrix.shape,
            check_invariants=False,
        )

    return as_torch(x), torch.from_numpy(labels.astype(np.int64)), as_torch(adjacency)
