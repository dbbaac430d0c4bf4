"""Weight matrices of graphs: conversion, symmetrization and normalization.

A weight matrix ``W`` (N×N, non-negative) is accepted in any of these forms:

* a dense ``torch.Tensor``;
* a torch sparse tensor (COO or CSR);
* a PyTorch Geometric pair ``(edge_index, edge_weight)`` (``edge_weight`` may be ``None``
  for unit weights), with ``num_nodes`` given or inferred;
* a ``scipy.sparse`` matrix.

Functions return the same kind they receive: dense in → dense out, sparse in → a coalesced
sparse COO tensor out. Nothing here builds an N×N dense matrix from sparse input.

Dtypes: weights may be given as integers or booleans (an adjacency matrix) or in half
precision; they are promoted to the default floating dtype (float32 unless changed), or
to ``dtype`` when given. ``edge_index`` must hold integers: a float index is refused, never
rounded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional, Tuple, Union

import numpy as np
import torch

from .._checks import (
    check_finite,
    check_index_tensor,
    check_num_nodes,
    check_positive_int,
    check_scalar_entries,
    check_square,
)

if TYPE_CHECKING:  # scipy is imported only where a scipy matrix is converted
    import scipy.sparse

__all__ = [
    "GraphLike",
    "as_weight_matrix",
    "is_dense",
    "row_sums",
    "symmetrize",
    "symmetric_normalize",
    "row_normalize",
    "add_self_loops",
    "gcn_normalize",
    "remove_self_loops",
]

GraphLike = Union[torch.Tensor, Tuple[torch.Tensor, Optional[torch.Tensor]], "scipy.sparse.spmatrix"]
"""A weight matrix ``W`` in any accepted form: dense or sparse tensor, ``(edge_index, edge_weight)`` or scipy.

Examples:
    >>> import torch
    >>> edges = (torch.tensor([[0, 1], [1, 0]]), None)      # PyG edge list, unit weights
    >>> as_weight_matrix(edges).to_dense()
    tensor([[0., 1.],
            [1., 0.]])
"""


def is_dense(matrix: torch.Tensor) -> bool:
    return matrix.layout == torch.strided


def _from_scipy(matrix) -> torch.Tensor:
    coo = matrix.tocoo()
    indices = torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))
    values = torch.from_numpy(np.ascontiguousarray(coo.data))
    if not values.is_floating_point():
        values = values.to(torch.get_default_dtype())
    return torch.sparse_coo_tensor(indices, values, coo.shape).coalesce()


def as_weight_matrix(
    graph: GraphLike, num_nodes: Optional[int] = None, *, dtype: Optional[torch.dtype] = None
) -> torch.Tensor:
    """Return ``graph`` as a square weight matrix (dense tensor or coalesced sparse COO).

    Dense input stays dense; sparse tensors, edge lists and scipy matrices become a coalesced
    sparse COO tensor. Integer, boolean and half-precision weights are promoted to the default
    floating dtype (or ``dtype``).

    Args:
        graph: the ``(N, N)`` weights as a dense/sparse tensor, an ``(edge_index, edge_weight)`` pair
            (``edge_index`` of shape ``(2, E)``, ``edge_weight`` of shape ``(E,)`` or ``None`` for unit
            weights) or a scipy sparse matrix.
        num_nodes: number of nodes ``N`` for an edge list (default: ``None``, i.e. ``edge_index.max() + 1``).
        dtype: floating dtype to convert the values to (default: ``None``, keep float32/float64).

    Returns:
        The ``(N, N)`` weight matrix, dense or coalesced sparse COO.

    Raises:
        ValueError: non-square matrix, negative or non-finite weights, bad edge list.
        TypeError: an unsupported ``graph`` type, a non-tensor ``edge_weight`` or complex weights.

    Examples:
        >>> import torch
        >>> edge_index = torch.tensor([[0, 1], [1, 2]])
        >>> as_weight_matrix((edge_index, torch.tensor([2., 3.])), num_nodes=3).to_dense()
        tensor([[0., 2., 0.],
                [0., 0., 3.],
                [0., 0., 0.]])
    """
    if isinstance(graph, tuple):
        if len(graph) != 2:
            raise ValueError("an edge list must be given as (edge_index, edge_weight)")
        edge_index, edge_weight = graph
        if num_nodes is not None:
            num_nodes = check_num_nodes(
                check_positive_int(num_nodes, "num_nodes", minimum=0), f"num_nodes={num_nodes}"
            )
        edge_index = check_index_tensor(edge_index, "edge_index", shape=(2, None), size=num_nodes)
        if num_nodes is None and edge_index.numel():
            largest = int(edge_index.max())
            check_num_nodes(
                largest + 1, f"edge_index refers to node {largest}", hint="renumber or pass num_nodes"
            )
        if edge_weight is None:
            edge_weight = torch.ones(
                edge_index.shape[1], dtype=dtype or torch.get_default_dtype(), device=edge_index.device
            )
        if not isinstance(edge_weight, torch.Tensor):
            raise TypeError(f"edge_weight must be a tensor of shape (E,), got {type(edge_weight).__name__}")
        if edge_weight.shape != (edge_index.shape[1],):
            raise ValueError(
                f"edge_weight must have shape (E,) = ({edge_index.shape[1]},), got {tuple(edge_weight.shape)}"
            )
        if num_nodes is None:
            num_nodes = int(edge_index.max()) + 1 if edge_index.numel() else 0
        matrix = torch.sparse_coo_tensor(edge_index, edge_weight, (num_nodes, num_nodes)).coalesce()
    elif isinstance(graph, torch.Tensor):
        check_scalar_entries(graph, "weight matrix")
        if graph.layout in (torch.sparse_csr, torch.sparse_csc, torch.sparse_bsr, torch.sparse_bsc):
            matrix = graph.to_sparse_coo().coalesce()
        elif graph.layout == torch.sparse_coo:
            matrix = graph.coalesce()
        else:
            matrix = graph
    elif hasattr(graph, "tocoo"):
        matrix = _from_scipy(graph)
    else:
        raise TypeError(
            "graph must be a dense/sparse torch.Tensor, an (edge_index, edge_weight) pair "
            f"or a scipy.sparse matrix, got {type(graph).__name__}"
        )
    size = check_num_nodes(
        check_square(matrix, "weight matrix"), f"weight matrix of shape {tuple(matrix.shape)}"
    )
    if num_nodes is not None and size != num_nodes:
        raise ValueError(f"weight matrix is {size}x{size} but num_nodes={num_nodes}")
    if dtype is not None:
        matrix = matrix.to(dtype)
    matrix = real_floating_weights(matrix)
    check_weight_values(matrix if is_dense(matrix) else matrix.values())
    return matrix


def real_floating_weights(weights: torch.Tensor) -> torch.Tensor:
    """Weights (a tensor of any layout, or its values) in float32/float64: integer, boolean and half-precision
    ones go to the default floating dtype; complex ones are refused with a ``TypeError``."""
    if weights.dtype in (torch.float32, torch.float64):
        return weights
    if weights.is_complex():
        raise TypeError(f"weight matrix must be real, got {weights.dtype}")
    return weights.to(torch.get_default_dtype())


def check_weight_values(values: torch.Tensor) -> None:
    """Refuse NaN/inf (:class:`~pdenets._checks.NonFiniteError`) and negative weights (``ValueError``)."""
    check_finite(values, "weight matrix")
    if values.numel() and bool((values < 0).any()):
        raise ValueError("weight matrix has negative entries; diffusion weights must be >= 0")


def row_sums(weights: torch.Tensor) -> torch.Tensor:
    """Degrees ``d_i = Σ_j w_ij`` (row sums of ``W``) as a dense vector of length ``N``.

    Args:
        weights: ``(N, N)`` weights ``W``, dense or sparse COO.

    Returns:
        ``(N,)`` dense tensor of the degrees.

    Examples:
        >>> import torch
        >>> row_sums(torch.tensor([[0., 1.], [2., 3.]]).to_sparse())
        tensor([1., 5.])
    """
    if is_dense(weights):
        return weights.sum(dim=1)
    weights = weights.coalesce()
    out = torch.zeros(weights.shape[0], dtype=weights.dtype, device=weights.device)
    return out.index_add_(0, weights.indices()[0], weights.values())


def _scale(weights: torch.Tensor, left: torch.Tensor, right: Optional[torch.Tensor]) -> torch.Tensor:
    """Return ``diag(left) W diag(right)`` (right=None means no right factor)."""
    if is_dense(weights):
        out = left[:, None] * weights
        return out * right[None, :] if right is not None else out
    weights = weights.coalesce()
    row, col = weights.indices()
    values = weights.values() * left[row]
    if right is not None:
        values = values * right[col]
    return torch.sparse_coo_tensor(weights.indices(), values, weights.shape).coalesce()


def _safe_inverse(values: torch.Tensor, power: float) -> torch.Tensor:
    """``values ** -power`` with 0 for zero entries (isolated nodes keep zero weights)."""
    out = torch.zeros_like(values)
    positive = values > 0
    out[positive] = values[positive].pow(-power)
    return out


def symmetrize(weights: torch.Tensor) -> torch.Tensor:
    """Symmetrize a weight matrix: ``(W + Wᵀ) / 2``.

    Args:
        weights: ``(N, N)`` weights ``W``, dense or sparse COO.

    Returns:
        ``(W + Wᵀ) / 2``, dense for dense input, coalesced sparse COO otherwise.

    Examples:
        >>> import torch
        >>> symmetrize(torch.tensor([[0., 2.], [0., 0.]]))
        tensor([[0., 1.],
                [1., 0.]])
    """
    if is_dense(weights):
        return (weights + weights.transpose(0, 1)) / 2
    weights = weights.coalesce()
    return ((weights + weights.transpose(0, 1)) / 2).coalesce()


def symmetric_normalize(weights: torch.Tensor) -> torch.Tensor:
    """Symmetric normalization ``D^{-1/2} W D^{-1/2}``.

    ``w_ij ← w_ij / √(d_i d_j)``,  ``d_i = Σ_j w_ij``,

    with ``D = diag(d_i)`` the degrees; rows with zero degree stay zero.

    Args:
        weights: ``(N, N)`` non-negative weights ``W``, dense or sparse COO.

    Returns:
        ``(N, N)`` normalized weights, dense for dense input, coalesced sparse COO otherwise.

    Examples:
        >>> import torch
        >>> symmetric_normalize(torch.tensor([[0., 1., 1.], [1., 0., 0.], [1., 0., 0.]])).round(decimals=4)
        tensor([[0.0000, 0.7071, 0.7071],
                [0.7071, 0.0000, 0.0000],
                [0.7071, 0.0000, 0.0000]])
    """
    inv_sqrt = _safe_inverse(row_sums(weights), 0.5)
    return _scale(weights, inv_sqrt, inv_sqrt)


def row_normalize(weights: torch.Tensor) -> torch.Tensor:
    """Row (random-walk) normalization ``D^{-1} W``: each non-empty row sums to one.

    ``w_ij ← w_ij / d_i``,  ``d_i = Σ_j w_ij``,

    with ``D = diag(d_i)`` the degrees; rows with zero degree stay zero.

    Args:
        weights: ``(N, N)`` non-negative weights ``W``, dense or sparse COO.

    Returns:
        ``(N, N)`` normalized weights, dense for dense input, coalesced sparse COO otherwise.

    Examples:
        >>> import torch
        >>> row_normalize(torch.tensor([[0., 1., 3.], [1., 0., 0.], [0., 0., 0.]]))
        tensor([[0.0000, 0.2500, 0.7500],
                [1.0000, 0.0000, 0.0000],
                [0.0000, 0.0000, 0.0000]])
    """
    return _scale(weights, _safe_inverse(row_sums(weights), 1.0), None)


def remove_self_loops(weights: torch.Tensor) -> torch.Tensor:
    """Remove self-loops: zero the diagonal, ``w_ii ← 0``.

    Args:
        weights: ``(N, N)`` weights ``W``, dense or sparse COO.

    Returns:
        ``W`` without its diagonal, dense for dense input, coalesced sparse COO (diagonal entries
        dropped) otherwise.

    Examples:
        >>> import torch
        >>> remove_self_loops(torch.tensor([[1., 2.], [3., 4.]]))
        tensor([[0., 2.],
                [3., 0.]])
    """
    if is_dense(weights):
        return weights - torch.diag_embed(torch.diagonal(weights))
    weights = weights.coalesce()
    row, col = weights.indices()
    keep = row != col
    return torch.sparse_coo_tensor(
        weights.indices()[:, keep], weights.values()[keep], weights.shape
    ).coalesce()


def add_self_loops(weights: torch.Tensor, fill_value: float = 1.0) -> torch.Tensor:
    """Add self-loops: ``W + c · I`` with ``c = fill_value``.

    Existing diagonal entries are increased, not replaced (combine with :func:`remove_self_loops`
    to replace them).

    Args:
        weights: ``(N, N)`` weights ``W``, dense or sparse COO.
        fill_value: the weight ``c`` added to every diagonal entry (default: ``1.0``).

    Returns:
        ``W + c · I``, dense for dense input, coalesced sparse COO otherwise.

    Examples:
        >>> import torch
        >>> add_self_loops(torch.tensor([[0., 1.], [1., 0.]]), fill_value=2.0)
        tensor([[2., 1.],
                [1., 2.]])
    """
    size = weights.shape[0]
    if is_dense(weights):
        return weights + fill_value * torch.eye(size, dtype=weights.dtype, device=weights.device)
    diag = torch.arange(size, device=weights.device)
    eye = torch.sparse_coo_tensor(
        torch.stack([diag, diag]),
        torch.full((size,), float(fill_value), dtype=weights.dtype, device=weights.device),
        weights.shape,
    )
    return (weights.coalesce() + eye).coalesce()


def gcn_normalize(
    adjacency: GraphLike, num_nodes: Optional[int] = None, *, self_loops: bool = True, dtype=None
) -> torch.Tensor:
    """GCN-style normalization ``D̃^{-1/2} (A + I) D̃^{-1/2}`` with ``D̃`` the degrees of ``A + I``.

    ``Â = D̃^{-1/2} (A + I) D̃^{-1/2}``,  ``D̃ = diag(Σ_j (A + I)_ij)``,

    with ``A`` the adjacency: the renormalization trick of "Semi-Supervised Classification with
    Graph Convolutional Networks" (Kipf & Welling). Existing self-loops are replaced by unit ones
    first, so a graph that already has some (CiteSeer's npz file has 124) is normalized exactly like
    one that has none.

    Args:
        adjacency: the ``(N, N)`` adjacency ``A`` (any form accepted by :func:`as_weight_matrix`).
        num_nodes: number of nodes ``N`` for an edge list (default: ``None``, inferred).
        self_loops: replace the self-loops by unit ones (Kipf & Welling's renormalization trick);
            ``False`` normalizes ``A`` as given (default: ``True``).
        dtype (torch.dtype | None): floating dtype of the result (default: ``None``, the default dtype).

    Returns:
        ``(N, N)`` normalized matrix ``Â``, dense for dense input, coalesced sparse COO otherwise.

    Examples:
        >>> import torch
        >>> ring = torch.tensor([[0., 1, 1], [1, 0, 1], [1, 1, 0]])
        >>> gcn_normalize(ring)
        tensor([[0.3333, 0.3333, 0.3333],
                [0.3333, 0.3333, 0.3333],
                [0.3333, 0.3333, 0.3333]])
    """
    weights = as_weight_matrix(adjacency, num_nodes, dtype=dtype)
    if self_loops:
        weights = add_self_loops(remove_self_loops(weights))
    return symmetric_normalize(weights)
