r"""Forecasters for series on a graph of regions: ``(S, N, L)`` windows in, ``(S, N, H)`` forecasts out.

``S`` forecast origins, ``N`` regions, ``L`` past values per region, ``H`` horizons. The graph is one
adjacency for every origin or a list of ``S`` (the graph of each origin's day); the message-passing
models batch the origins as one disjoint graph (:func:`~pdenets.models.coin.block_diagonal_graph`).

* :class:`WindowMLP` — the convection: a per-region model with weights shared across regions
  (a linear map of the lags plus an MLP correction); no information crosses regions.
* ``coin-forecast`` — :class:`~pdenets.models.COIN` over :class:`WindowMLP`: the forecasts are
  then diffused on the region graph (``r`` explicit steps).
* :class:`WindowGCN` — two PyTorch Geometric ``GCNConv`` layers on the window features.
* :class:`GraphConvGRU` — a recurrent graph model: a GRU over the lags whose gates are
  Chebyshev graph convolutions (``ChebConv``, Seo et al.'s GConvGRU), then a linear read-out.
"""

from __future__ import annotations

from typing import List, Union

import torch
from torch import nn

from .._checks import check_floating, check_positive_int, check_probability
from ..operators.graph import GraphLike, as_weight_matrix, is_dense
from .coin import COIN, block_diagonal_graph, mlp
from .registry import register_model

__all__ = ["WindowMLP", "WindowGCN", "GraphConvGRU", "coin_forecast", "batched_edges"]

GraphSequence = Union[GraphLike, List[GraphLike]]


def _flat_graph(x: torch.Tensor, graph: GraphSequence, lags: int, name: str):
    """Rows ``(M, L)``, the graph on those rows as ``(edge_index, edge_weight)``, and the output's leading shape.

    Windows ``(S, N, L)`` take one graph for all origins or a list of ``S``; rows ``(M, L)`` take a graph on
    the ``M`` rows (e.g. a precomputed disjoint union)."""
    check_floating(x, f"input to {name}")
    if x.dim() not in (2, 3) or x.shape[-1] != lags:
        raise ValueError(f"{name} expects windows of shape (S, N, {lags}) or rows (M, {lags}), got {tuple(x.shape)}")
    if x.dim() == 3:
        origins, nodes = x.shape[:2]
        edge_index, edge_weight = batched_edges(graph, origins, nodes, dtype=x.dtype, device=x.device)
        return x.reshape(origins * nodes, lags), edge_index, edge_weight, x.shape[:2]
    matrix = as_weight_matrix(graph, x.shape[0], dtype=x.dtype)
    matrix = matrix.to_sparse().coalesce() if is_dense(matrix) else matrix
    return x, matrix.indices().to(x.device), matrix.values().to(x.device), x.shape[:1]


def batched_edges(graph: GraphSequence, origins: int, nodes: int, *, dtype=None, device=None):
    """``(edge_index, edge_weight)`` of the disjoint union of the origins' graphs (``origins · nodes`` nodes)."""
    graphs = graph if isinstance(graph, list) else [graph] * origins
    if len(graphs) != origins:
        raise ValueError(f"{len(graphs)} graphs for {origins} forecast origins")
    matrix = block_diagonal_graph(graphs, nodes, dtype=dtype, device=device)
    return matrix.indices(), matrix.values()


class WindowMLP(nn.Module):
    r"""Per-region forecaster with shared weights: ``ŷ = A x + b + MLP(x)`` for each region's window ``x ∈ R^L``.

    Args:
        lags: ``L``; horizons: ``H``; hidden: MLP width (default 32); num_layers: MLP layers
            (default 2); dropout: MLP dropout (default 0).

    Shapes: ``(S, N, L)`` or ``(M, L)`` → ``(S, N, H)`` or ``(M, H)``; the graph argument is ignored.

    Example:
        >>> import torch
        >>> WindowMLP(4, 2)(torch.randn(3, 5, 4)).shape
        torch.Size([3, 5, 2])
    """

    def __init__(self, lags: int, horizons: int, *, hidden: int = 32, num_layers: int = 2, dropout: float = 0.0):
        super().__init__()
        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.linear = nn.Linear(self.lags, self.horizons)
        self.correction = mlp(self.lags, hidden, self.horizons, num_layers=num_layers, dropout=dropout)

    def forward(self, x: torch.Tensor, graph: GraphSequence = None) -> torch.Tensor:
        check_floating(x, "input to WindowMLP")
        if x.shape[-1] != self.lags:
            raise ValueError(f"WindowMLP expects {self.lags} lags in the last axis, got {tuple(x.shape)}")
        return self.linear(x) + self.correction(x)


class WindowGCN(nn.Module):
    r"""Two ``GCNConv`` layers on the window features: ``Â ReLU(Â X Θ₁) Θ₂`` per origin's graph.

    Example:
        >>> import torch
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)
        >>> WindowGCN(4, 2)(torch.randn(3, 3, 4), ring).shape
        torch.Size([3, 3, 2])
    """

    def __init__(self, lags: int, horizons: int, *, hidden: int = 32, dropout: float = 0.0):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.first = GCNConv(self.lags, check_positive_int(hidden, "hidden"))
        self.second = GCNConv(hidden, self.horizons)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))

    def forward(self, x: torch.Tensor, graph: GraphSequence) -> torch.Tensor:
        flat, edge_index, edge_weight, leading = _flat_graph(x, graph, self.lags, "WindowGCN")
        hidden = self.dropout(torch.relu(self.first(flat, edge_index, edge_weight)))
        return self.second(hidden, edge_index, edge_weight).reshape(*leading, self.horizons)


class GraphConvGRU(nn.Module):
    r"""GRU over the ``L`` lags whose gates are Chebyshev graph convolutions (GConvGRU), then ``Linear(hidden, H)``.

    .. math::

        z = σ(Θ_{xz} ⋆ x_τ + Θ_{hz} ⋆ h), \quad r = σ(Θ_{xr} ⋆ x_τ + Θ_{hr} ⋆ h), \quad
        \tilde h = \tanh(Θ_{xh} ⋆ x_τ + Θ_{hh} ⋆ (r ⊙ h)), \quad h ← z ⊙ h + (1 − z) ⊙ \tilde h,

    for ``τ = 1…L``, with ``⋆`` a ``ChebConv`` of order ``K`` on the origin's graph.

    Example:
        >>> import torch
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)
        >>> GraphConvGRU(4, 2, hidden=8)(torch.randn(3, 3, 4), ring).shape
        torch.Size([3, 3, 2])
    """

    def __init__(self, lags: int, horizons: int, *, hidden: int = 32, order: int = 2):
        super().__init__()
        from torch_geometric.nn import ChebConv

        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.hidden = check_positive_int(hidden, "hidden")
        order = check_positive_int(order, "order")
        self.input_gates = ChebConv(1, 3 * hidden, K=order)
        self.update_gates = ChebConv(hidden, 2 * hidden, K=order, bias=False)
        self.candidate = ChebConv(hidden, hidden, K=order, bias=False)
        self.readout = nn.Linear(hidden, self.horizons)

    def forward(self, x: torch.Tensor, graph: GraphSequence) -> torch.Tensor:
        flat, edge_index, edge_weight, leading = _flat_graph(x, graph, self.lags, "GraphConvGRU")
        state = flat.new_zeros(flat.shape[0], self.hidden)
        for step in range(self.lags):
            gates_x = self.input_gates(flat[:, step:step + 1], edge_index, edge_weight, lambda_max=2.0)
            gates_h = self.update_gates(state, edge_index, edge_weight, lambda_max=2.0)
            x_z, x_r, x_h = gates_x.split(self.hidden, dim=1)
            h_z, h_r = gates_h.split(self.hidden, dim=1)
            update, reset = torch.sigmoid(x_z + h_z), torch.sigmoid(x_r + h_r)
            candidate = torch.tanh(x_h + self.candidate(reset * state, edge_index, edge_weight, lambda_max=2.0))
            state = update * state + (1 - update) * candidate
        return self.readout(state).reshape(*leading, self.horizons)


@register_model("window-mlp", family="forecast", defaults={"hidden": 32},
                description="per-region forecaster (linear in the lags + MLP correction), no graph")
def window_mlp(in_features: int, num_classes: int, **kwargs) -> WindowMLP:
    """``in_features`` = lags, ``num_classes`` = horizons."""
    return WindowMLP(in_features, num_classes, **kwargs)


@register_model("coin-forecast", family="forecast", defaults={"hidden": 32, "num_steps": 2, "step_size": 0.1,
                                                             "learn_step_size": True},
                description="COIN: the per-region forecaster, then r diffusion steps of the forecasts on the region "
                            "graph")
def coin_forecast(in_features: int, num_classes: int, *, hidden: int = 32, num_layers: int = 2, dropout: float = 0.0,
                  **kwargs) -> COIN:
    """COIN over :class:`WindowMLP` (``in_features`` = lags, ``num_classes`` = horizons); graph given at forward."""
    backbone = WindowMLP(in_features, num_classes, hidden=hidden, num_layers=num_layers, dropout=dropout)
    return COIN(backbone, **kwargs)


@register_model("window-gcn", family="forecast", defaults={"hidden": 32},
                description="two GCNConv layers (PyTorch Geometric) on the window features")
def window_gcn(in_features: int, num_classes: int, **kwargs) -> WindowGCN:
    return WindowGCN(in_features, num_classes, **kwargs)


@register_model("gconv-gru", family="forecast", defaults={"hidden": 32},
                description="recurrent graph model: GRU over the lags with ChebConv gates (GConvGRU), linear read-out")
def gconv_gru(in_features: int, num_classes: int, **kwargs) -> GraphConvGRU:
    return GraphConvGRU(in_features, num_classes, **kwargs)
