"""Graphs the benchmarks are measured on, built at any size without an N x N or int64 edge list in memory."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["block_graph_csr", "knn_graph_csr", "mixture_points"]


def block_graph_csr(
    num_nodes: int, num_classes: int, degree: int, features: int, seed: int = 0, chunk: int = 1 << 20
):
    """The block graph of :func:`block_graph` built for very large ``N``: chunked, 32-bit indices, CSR only.

    The same construction (80 % of each node's ``degree / 2`` drawn edges inside its block, symmetrized,
    bag-of-words features with a class signal), drawn chunk by chunk, so that nothing of ``N × features``
    floats or int64 edge lists is ever held. Returns the features as a CSR tensor, the labels, and the GCN
    weights ``D̃^{-1/2} (A + I) D̃^{-1/2}`` as a CSR tensor (32-bit indices: ~8 bytes per stored entry).
    """
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
        bags.append(_bag_of_words(labels[nodes], centres, generator))
    return (
        _as_torch(_stack_rows(bags)),
        torch.from_numpy(labels.astype(np.int64)),
        _gcn_weights(sources, targets, num_nodes, chunk),
    )


def mixture_points(num_nodes: int, num_classes: int, dimension: int = 3, seed: int = 0):
    """``num_nodes`` points of a Gaussian mixture in ``dimension`` dimensions, in random order (the ids a
    user's data comes with: nothing about them follows space), and their components as labels.

    The ``num_classes`` component means are drawn in the unit cube; each component's spread is 0.12 per
    axis, so neighbouring components overlap (a k-NN graph links them a little, as real data's do)."""
    generator = np.random.default_rng(seed)
    means = generator.random((num_classes, dimension))
    labels = generator.integers(0, num_classes, num_nodes).astype(np.int8)
    points = means[labels] + 0.12 * generator.standard_normal((num_nodes, dimension))
    return points.astype(np.float32), labels


def knn_graph_csr(
    num_nodes: int,
    num_classes: int,
    neighbours: int,
    features: int,
    seed: int = 0,
    chunk: int = 1 << 20,
    dimension: int = 3,
):
    """The graph Diff-ResNet builds on data: each point of :func:`mixture_points` linked to its ``neighbours``
    nearest points (Euclidean), symmetrized, self-loops, GCN weights; bag-of-words features of its component.

    The nodes keep the random order of the points. Built in chunks of queries with 32-bit indices (SciPy's
    k-d tree, all threads), so that 20,000,000 nodes fit. Returns what :func:`block_graph_csr` returns.
    """
    from scipy.spatial import cKDTree

    points, labels = mixture_points(num_nodes, num_classes, dimension, seed)
    generator = np.random.default_rng(seed + 1)
    centres = generator.random((num_classes, features)) < 0.1
    tree = cKDTree(points, leafsize=32, balanced_tree=False, compact_nodes=False)
    sources, targets, bags = [], [], []
    for first in range(0, num_nodes, chunk):
        last = min(first + chunk, num_nodes)
        _, found = tree.query(points[first:last], k=neighbours + 1, workers=-1)
        found = found.astype(np.int32)
        rows = np.repeat(np.arange(first, last, dtype=np.int32), neighbours + 1)
        found = found.ravel()
        keep = found != rows
        sources.append(rows[keep])
        targets.append(found[keep])
        bags.append(_bag_of_words(labels[first:last], centres, generator))
    del tree, points
    return (
        _as_torch(_stack_rows(bags)),
        torch.from_numpy(labels.astype(np.int64)),
        _gcn_weights(sources, targets, num_nodes, chunk),
    )


def _bag_of_words(labels: np.ndarray, centres: np.ndarray, generator):
    """Rows of binary words (3 % noise, 30 % of the class's words), each normalized to sum 1."""
    import scipy.sparse as sp

    features = centres.shape[1]
    bag = (generator.random((labels.size, features), dtype=np.float32) < 0.03) | (
        centres[labels] & (generator.random((labels.size, features), dtype=np.float32) < 0.3)
    )
    bag[:, 0] |= ~bag.any(1)
    bag = sp.csr_matrix(bag.astype(np.float32))
    bag.data /= np.repeat(np.asarray(bag.sum(1)).ravel(), np.diff(bag.indptr))
    return bag


def _stack_rows(blocks):
    import scipy.sparse as sp

    return sp.vstack(blocks, format="csr")


def _gcn_weights(sources, targets, num_nodes: int, chunk: int):
    """``D̃^{-1/2} (A + I) D̃^{-1/2}`` of the edges (each added both ways, duplicates summed), a CSR tensor."""
    import scipy.sparse as sp

    loops = np.arange(num_nodes, dtype=np.int32)
    rows = np.concatenate(sources + targets + [loops])
    cols = np.concatenate(targets + sources + [loops])
    sources.clear()
    targets.clear()
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
    return _as_torch(adjacency)


def _as_torch(matrix):
    return torch.sparse_csr_tensor(
        torch.from_numpy(matrix.indptr.astype(np.int32, copy=False)),
        torch.from_numpy(matrix.indices.astype(np.int32, copy=False)),
        torch.from_numpy(matrix.data),
        matrix.shape,
        check_invariants=False,
    )
