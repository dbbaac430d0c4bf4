r"""Graph neural network propagation read as diffusion.

From "Convection-Diffusion Equation: A Theoretically Certified Framework for Neural Networks" (COIN)
and "Diffusion Mechanism in Residual Neural Network: Theory and Applications" (§3).

Let ``W̃ = W + I`` be the graph with unit self-loops, ``D̃`` its degrees and
``Â = D̃^{-1/2} W̃ D̃^{-1/2}``. The normalized Laplacian of the self-looped graph is
``L̃ = I − Â``, and one explicit diffusion step of ``dX/dt = −L̃ X`` with step ``γ`` is

$$
    X \leftarrow (I - \gamma \tilde L) X = (1 - \gamma) X + \gamma \hat A X .
$$

* **GCN** (Kipf & Welling): the propagation ``Â X`` of a layer ``σ(Â X Θ)`` is this step with
  ``γ = 1`` — a GCN layer is one diffusion step followed by a pointwise map (convection).
* **SGC** (Wu et al.): ``Â^K X`` is ``K`` diffusion steps with ``γ = 1``.
* **APPNP** (Gasteiger et al.): ``X^{k+1} = (1 − α) Â X^k + α X^0`` is a diffusion step with
  ``γ = 1`` followed by a relaxation towards the input: the explicit scheme of
  ``dX/dt = −L̃ X − α/(1−α)·(X − X^0)`` (diffusion with a source term that keeps the solution near
  the data, the personalized-PageRank fixed point ``α (I − (1 − α) Â)^{-1} X^0``).

The functions below compute these propagations with :class:`~pdenets.operators.DiffusionOperator`
(``laplacian="normalized"``); the tests compare them with PyTorch Geometric's ``GCNConv``,
``SGConv`` and ``APPNP`` layers. Existing self-loops of ``W`` are replaced by unit ones first.
Direction: ``W[i, j]`` is the weight of edge ``(i, j)`` and row ``i`` diffuses from column ``j``; PyG's
layers send messages from source to target, so for a *directed* edge list they equal these functions
on the reversed edges (``edge_index.flip(0)``). Undirected graphs need no care.
"""

from __future__ import annotations

from typing import Optional

import torch

from .._checks import check_features, check_positive_int, check_probability
from .diffusion import DiffusionOperator
from .graph import GraphLike, add_self_loops, as_weight_matrix, remove_self_loops

__all__ = ["gcn_diffusion_operator", "gcn_propagate", "sgc_propagate", "appnp_propagate"]


def gcn_diffusion_operator(
    adjacency: GraphLike, num_nodes: Optional[int] = None, *, dtype: Optional[torch.dtype] = None
) -> DiffusionOperator:
    """The diffusion operator ``I − L̃ = Â`` with ``γ = 1`` on the self-looped graph (normalized Laplacian).

    ``Â = D̃^{-1/2} W̃ D̃^{-1/2}``,  ``W̃ = W + I``,  ``L̃ = I − Â``,

    where ``W`` is the adjacency (existing self-loops replaced by unit ones), ``D̃`` the degrees of
    ``W̃`` and ``L̃`` its normalized Laplacian: applying the operator once is the propagation of
    a GCN layer ("Semi-Supervised Classification with Graph Convolutional Networks"), read as one
    explicit diffusion step ("Convection-Diffusion Equation: A Theoretically Certified Framework
    for Neural Networks").

    Args:
        adjacency: ``(N, N)`` adjacency ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy sparse matrix).
        num_nodes: number of nodes ``N`` when ``adjacency`` is an edge list (default: ``None``, inferred).
        dtype: floating dtype of the operator's weights (default: ``None``, the default dtype).

    Returns:
        A :class:`~pdenets.operators.DiffusionOperator` whose matrix is ``Â``.

    Examples:
        >>> import torch
        >>> path = torch.tensor([[0., 1.], [1., 0.]])
        >>> gcn_diffusion_operator(path).matrix()
        tensor([[0.5000, 0.5000],
                [0.5000, 0.5000]])
    """
    weights = as_weight_matrix(adjacency, num_nodes, dtype=dtype)
    return DiffusionOperator(add_self_loops(remove_self_loops(weights)), 1.0, laplacian="normalized")


def gcn_propagate(
    features: torch.Tensor, adjacency: GraphLike, num_nodes: Optional[int] = None
) -> torch.Tensor:
    r"""GCN's propagation ``Â X`` as one diffusion step with ``γ = 1``.

    ``X ← Â X = (I − L̃) X``,  ``Â = D̃^{-1/2} (W + I) D̃^{-1/2}``,

    with ``X`` the node features, ``W`` the adjacency, ``D̃`` the degrees of ``W + I`` and ``L̃``
    its normalized Laplacian: the propagation of "Semi-Supervised Classification with Graph
    Convolutional Networks" (Kipf & Welling), read as diffusion in "Convection-Diffusion Equation:
    A Theoretically Certified Framework for Neural Networks".

    Args:
        features: node features ``X`` of shape ``(N, *)``.
        adjacency: ``(N, N)`` adjacency ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy sparse matrix).
        num_nodes: number of nodes ``N`` when ``adjacency`` is an edge list (default: ``None``, inferred).

    Returns:
        ``Â X``, same shape as ``features``.

    Examples:
        >>> import torch
        >>> path = torch.tensor([[0., 1.], [1., 0.]])
        >>> gcn_propagate(torch.tensor([[2.], [0.]]), path).round(decimals=6)
        tensor([[1.],
                [1.]])
    """
    check_features(features, "features")
    return gcn_diffusion_operator(adjacency, num_nodes, dtype=features.dtype).apply(features, 1)


def sgc_propagate(
    features: torch.Tensor, adjacency: GraphLike, num_steps: int = 2, num_nodes: Optional[int] = None
) -> torch.Tensor:
    """SGC's propagation ``Â^K X``: ``K = num_steps`` diffusion steps with ``γ = 1``.

    ``X ← Â^K X``,  ``Â = D̃^{-1/2} (W + I) D̃^{-1/2}``,

    with ``X`` the node features, ``W`` the adjacency and ``D̃`` the degrees of ``W + I``: the
    propagation of "Simplifying Graph Convolutional Networks" (Wu et al.), i.e. ``K`` explicit
    diffusion steps with the normalized Laplacian of the self-looped graph.

    Args:
        features: node features ``X`` of shape ``(N, *)``.
        adjacency: ``(N, N)`` adjacency ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy sparse matrix).
        num_steps: the number of steps ``K ≥ 0`` (default: ``2``).
        num_nodes: number of nodes ``N`` when ``adjacency`` is an edge list (default: ``None``, inferred).

    Returns:
        ``Â^K X``, same shape as ``features``.

    Examples:
        >>> import torch
        >>> path = torch.tensor([[0., 1., 0.], [1., 0., 1.], [0., 1., 0.]])
        >>> sgc_propagate(torch.tensor([[6.], [0.], [0.]]), path, num_steps=2).round(decimals=4)
        tensor([[2.5000],
                [2.0412],
                [1.0000]])
    """
    check_features(features, "features")
    num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
    return gcn_diffusion_operator(adjacency, num_nodes, dtype=features.dtype).apply(features, num_steps)


def appnp_propagate(
    features: torch.Tensor,
    adjacency: GraphLike,
    num_steps: int = 10,
    alpha: float = 0.1,
    num_nodes: Optional[int] = None,
) -> torch.Tensor:
    r"""APPNP's propagation: ``K`` diffusion steps with ``γ = 1``, each relaxed towards the input.

    ``X^{k+1} = (1 − α) Â X^k + α X^0``,  ``k = 0, …, K − 1``,

    with ``X^0`` the input features, ``Â = D̃^{-1/2} (W + I) D̃^{-1/2}`` the normalized self-looped
    adjacency, ``α`` the teleport (restart) probability and ``K = num_steps`` (``α = 0``: SGC).
    From "Predict then Propagate: Graph Neural Networks meet Personalized PageRank" (Gasteiger et
    al.): the explicit scheme of diffusion with a source term that keeps the solution near the data.

    Args:
        features: input features ``X^0`` of shape ``(N, *)``.
        adjacency: ``(N, N)`` adjacency ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy sparse matrix).
        num_steps: the number of steps ``K ≥ 0`` (default: ``10``).
        alpha: the teleport probability ``α ∈ [0, 1)`` (default: ``0.1``).
        num_nodes: number of nodes ``N`` when ``adjacency`` is an edge list (default: ``None``, inferred).

    Returns:
        ``X^K``, same shape as ``features``.

    Examples:
        >>> import torch
        >>> path = torch.tensor([[0., 1.], [1., 0.]])
        >>> appnp_propagate(torch.tensor([[2.], [0.]]), path, num_steps=1, alpha=0.5).round(decimals=6)
        tensor([[1.5000],
                [0.5000]])
    """
    check_features(features, "features")
    num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
    alpha = check_probability(alpha, "alpha")
    operator = gcn_diffusion_operator(adjacency, num_nodes, dtype=features.dtype)
    out = features
    for _ in range(num_steps):
        out = (1 - alpha) * operator.apply(out, 1) + alpha * features
    return out
