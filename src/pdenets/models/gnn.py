"""Message-passing baselines built from PyTorch Geometric layers (GCN, GraphSAGE, GAT).

Architectures and default hyperparameters follow the original papers / PyG examples:

======================  ============================================  ===============================
model                   layers                                          optimizer (node classification)
======================  ============================================  ===============================
``gcn``                 GCNConv(F→16) ReLU, dropout .5, GCNConv(→C)    Adam lr .01, wd 5e-4
``sage-mean``           SAGEConv mean (F→64) ReLU, dropout .5, (→C)    Adam lr .01, wd 5e-4
``sage-maxpool``        SAGEConv max with pooling MLP (project=True)   Adam lr .01, wd 5e-4
``gat``                 GATConv 8 heads × 8 ELU, dropout .6, 1 head    Adam lr .005, wd 5e-4
======================  ============================================  ===============================

``num_layers`` (default 2) stacks more hidden layers of the same kind (depth study).
Every model maps ``(x, edge_index)`` to ``(N, C)`` logits; GCN normalizes the adjacency
with self-loops itself (cached per graph). ``x`` may be a sparse CSR tensor (bag-of-words, TF-IDF): the
dropout on the input then acts on its stored entries alone (a dropped zero is zero: the same distribution
as dropout of the dense matrix, without a random draw per zero) and the first layer's linear map reads it
sparse (GCN, GAT, GraphSAGE with max-pooling); GraphSAGE's mean aggregates the input itself and takes it
dense after the dropout.
"""

from __future__ import annotations

from typing import Callable, Protocol, cast

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_positive_int, check_probability
from .._deprecation import renamed_arguments
from .registry import ModelExample, register_model

__all__ = ["GCN", "GraphSAGE", "GAT", "sparse_dropout"]


def _example(num_classes: int) -> ModelExample:
    """Six nodes on a directed ring, five features."""
    ring = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]])
    return ModelExample({"in_features": 5}, (torch.randn(6, 5), ring), (6, num_classes))


def _check_sizes(
    in_features: int, num_classes: int, hidden_features: int, num_layers: int, dropout: float, heads: int = 1
) -> None:
    for value, name in (
        (in_features, "in_features"),
        (num_classes, "num_classes"),
        (hidden_features, "hidden_features"),
        (num_layers, "num_layers"),
        (heads, "heads"),
    ):
        check_positive_int(value, name)
    check_probability(dropout, "dropout")


class _Resettable(Protocol):
    def reset_parameters(self) -> None: ...


def sparse_dropout(features: torch.Tensor, p: float, training: bool = True) -> torch.Tensor:
    """Inverted dropout of a sparse CSR matrix: each stored entry zeroed with probability ``p``, the others
    scaled by ``1/(1−p)`` (:func:`~pdenets.nn.fast_dropout`'s masks); the sparsity pattern is kept (a dropped
    entry is stored as zero). Without gradient: for input features.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> x = torch.ones(200, 300).to_sparse_csr()
        >>> out = sparse_dropout(x, 0.25)
        >>> round(float((out.values() == 0).float().mean()), 2), out.layout == torch.sparse_csr
        (0.25, True)
    """
    from ..nn.dropout import fast_dropout

    if not training or p == 0:
        return features
    values = fast_dropout(features.values().detach(), p, training=True)
    return torch.sparse_csr_tensor(
        features.crow_indices(), features.col_indices(), values, features.shape, dtype=features.dtype
    )


class _StackedConvolutions(nn.Module):
    """Dropout → convolution → activation, layer after layer (no activation after the last); sparse input
    features (module docstring) go through :func:`sparse_dropout`."""

    activation: Callable[[torch.Tensor], torch.Tensor] = staticmethod(F.relu)
    #: whether the first convolution reads sparse input features (its first operation is a linear map)
    sparse_input: bool = True

    def __init__(self, convs, dropout: float):
        super().__init__()
        self.convs = nn.ModuleList(convs)
        self.dropout = dropout

    def reset_parameters(self) -> None:
        for conv in self.convs:
            cast(_Resettable, conv).reset_parameters()  # a torch_geometric convolution

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self._layers(x, edge_index, len(self.convs))

    def features(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """What the last convolution reads: the output of the layers before it, ``(N, hidden)`` (the input
        features, dense, for a one-layer network)."""
        out = self._layers(x, edge_index, len(self.convs) - 1)
        return out.to_dense() if out.layout != torch.strided else out

    def _layers(self, x: torch.Tensor, edge_index: torch.Tensor, count: int) -> torch.Tensor:
        """The first ``count`` layers (no activation after the network's last)."""
        for index, conv in enumerate(self.convs[:count]):
            if x.layout == torch.sparse_csr:
                x = sparse_dropout(x, self.dropout, self.training)
                if not self.sparse_input:
                    x = x.to_dense()
            else:
                x = F.dropout(x, self.dropout, self.training)
            x = conv(x, edge_index)
            if index < len(self.convs) - 1:
                x = self.activation(x)
        return x


class GCN(_StackedConvolutions):
    r"""Graph convolutional network (Kipf & Welling 2017): ``H ← σ(D̃^{-1/2} Ã D̃^{-1/2} H Θ)``.

    Shapes: ``x (N, F)``, ``edge_index (2, E)`` → ``(N, C)``.

    Examples:
        >>> import torch
        >>> net = GCN(5, 3)
        >>> net(torch.randn(4, 5), torch.tensor([[0, 1, 2], [1, 2, 3]])).shape
        torch.Size([4, 3])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        hidden_features: int = 16,
        num_layers: int = 2,
        dropout: float = 0.5,
    ):
        _check_sizes(in_features, num_classes, hidden_features, num_layers, dropout)
        sizes = [in_features] + [hidden_features] * (num_layers - 1) + [num_classes]
        from torch_geometric.nn import GCNConv  # on first use: registering the model stays light

        super().__init__([GCNConv(a, b, cached=True) for a, b in zip(sizes[:-1], sizes[1:])], dropout)


class GraphSAGE(_StackedConvolutions):
    r"""GraphSAGE (Hamilton et al. 2017) with mean or max-pooling aggregation.

    ``h_i ← W₁ h_i + W₂ AGG_{j∈N(i)} h_j``; ``aggregator="maxpool"`` applies a ReLU MLP to the
    neighbours before the max (PyG ``SAGEConv(aggr="max", project=True)``).

    Examples:
        >>> import torch
        >>> net = GraphSAGE(5, 3, aggregator="maxpool")
        >>> net(torch.randn(4, 5), torch.tensor([[0, 1, 2], [1, 2, 3]])).shape
        torch.Size([4, 3])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        aggregator: str = "mean",
        hidden_features: int = 64,
        num_layers: int = 2,
        dropout: float = 0.5,
    ):
        _check_sizes(in_features, num_classes, hidden_features, num_layers, dropout)
        if aggregator not in ("mean", "maxpool"):
            raise ValueError(f"aggregator must be 'mean' or 'maxpool', got {aggregator!r}")
        sizes = [in_features] + [hidden_features] * (num_layers - 1) + [num_classes]
        options = {"aggr": "mean"} if aggregator == "mean" else {"aggr": "max", "project": True}
        from torch_geometric.nn import SAGEConv

        super().__init__([SAGEConv(a, b, **options) for a, b in zip(sizes[:-1], sizes[1:])], dropout)
        self.sparse_input = aggregator == "maxpool"  # the mean aggregates the input before any linear map


class GAT(_StackedConvolutions):
    r"""Graph attention network (Veličković et al. 2018): multi-head attention over neighbours.

    Hidden layers: ``heads`` heads of ``hidden_features`` units, concatenated, ELU; output layer: one
    head. Dropout on inputs and attention coefficients.

    Examples:
        >>> import torch
        >>> net = GAT(5, 3)
        >>> net(torch.randn(4, 5), torch.tensor([[0, 1, 2], [1, 2, 3]])).shape
        torch.Size([4, 3])
    """

    activation = staticmethod(F.elu)

    @renamed_arguments(hidden="hidden_features")
    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        hidden_features: int = 8,
        heads: int = 8,
        num_layers: int = 2,
        dropout: float = 0.6,
    ):
        _check_sizes(in_features, num_classes, hidden_features, num_layers, dropout, heads)
        from torch_geometric.nn import GATConv

        layers = []
        width = in_features
        for _ in range(num_layers - 1):
            layers.append(GATConv(width, hidden_features, heads=heads, dropout=dropout))
            width = hidden_features * heads
        layers.append(GATConv(width, num_classes, heads=1, concat=False, dropout=dropout))
        super().__init__(layers, dropout)


register_model(
    "gcn",
    family="message-passing",
    defaults={"hidden_features": 16, "dropout": 0.5},
    graph_input="forward",
    example=_example,
    description="GCN (Kipf & Welling 2017)",
)(GCN)


@register_model(
    "sage-mean",
    family="message-passing",
    defaults={"hidden_features": 64, "dropout": 0.5},
    graph_input="forward",
    example=_example,
    description="GraphSAGE with mean aggregation (Hamilton et al. 2017)",
)
@renamed_arguments(hidden="hidden_features")
def sage_mean(in_features: int, num_classes: int, **kwargs) -> GraphSAGE:
    return GraphSAGE(in_features, num_classes, aggregator="mean", **kwargs)


@register_model(
    "sage-maxpool",
    family="message-passing",
    defaults={"hidden_features": 64, "dropout": 0.5},
    graph_input="forward",
    example=_example,
    description="GraphSAGE with max-pooling aggregation (Hamilton et al. 2017)",
)
@renamed_arguments(hidden="hidden_features")
def sage_maxpool(in_features: int, num_classes: int, **kwargs) -> GraphSAGE:
    return GraphSAGE(in_features, num_classes, aggregator="maxpool", **kwargs)


register_model(
    "gat",
    family="message-passing",
    defaults={"hidden_features": 8, "heads": 8, "dropout": 0.6},
    graph_input="forward",
    example=_example,
    description="GAT (Velickovic et al. 2018)",
)(GAT)
