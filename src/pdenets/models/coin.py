r"""COIN: convection by any backbone, then diffusion on a graph of samples ("Convection-Diffusion Equation: A
Theoretically Certified Framework for Neural Networks").

A network read as the flow of a convection–diffusion equation on ``[0, T]``:

$$
    \frac{\partial u}{\partial t} = \underbrace{v(x, t) \cdot \nabla u}_{\text{convection}}
        + \underbrace{\sigma^2 \Delta u}_{\text{diffusion}},
$$

split in time: the backbone (any ``nn.Module``) is the convection from ``0`` to ``T − 1``; the last
unit of time is diffusion, discretized on a graph of the samples by ``r`` explicit steps
``X ← (I − γL) X`` ("Diffusion Mechanism in Residual Neural Network: Theory and Applications", eq. 7).
Diff-ResNet is the special case whose backbone is one residual MLP block
(``COIN(Sequential(ConvectionBlock(d)), head=Linear(d, c))`` equals ``DiffResNet(d, c, num_blocks=1)`` for
the same weights; see the tests).
"""

from __future__ import annotations

import math
from typing import Any, Callable, List, Optional, Sequence, Union

import torch
from torch import nn

from .._checks import check_choice, check_floating, check_positive, check_positive_int, check_probability
from .._deprecation import renamed_arguments
from ..nn.diffusion import DiffusionLayer
from ..nn.dropout import FastDropout
from ..operators.diffusion import LAPLACIANS, SliceDiffusion
from ..operators.graph import GraphLike, as_weight_matrix, is_dense
from ..operators.slice_graphs import SliceGraphs
from .registry import ModelExample, register_model

__all__ = ["COIN", "coin_mlp", "mlp", "block_diagonal_graph", "GraphArg"]

#: a fixed graph, a builder ``points -> W`` (e.g. :class:`~pdenets.operators.KnnGaussianWeights`), a list of
#: graphs (time-varying: one per leading index of the input), or ``None``
GraphArg = Union[GraphLike, Callable[[torch.Tensor], torch.Tensor], List[GraphLike], SliceGraphs, None]


def block_diagonal_graph(
    graphs: Sequence[GraphLike], num_nodes: int, *, dtype: Optional[torch.dtype] = None, device=None
) -> torch.Tensor:
    """The ``S·N × S·N`` sparse block-diagonal weights of ``S`` graphs on the same ``N`` nodes.

    ``W = diag(W_0, W_1, …, W_{S−1})``, i.e. ``W[s·N + i, s·N + j] = W_s[i, j]`` and ``0`` across blocks,
    with ``W_s`` the weights of ``graphs[s]``. Diffusing ``X`` of shape ``(S, N, C)`` reshaped to
    ``(S·N, C)`` on this graph diffuses every slice ``X[s]`` on its own graph ``graphs[s]``, in one sparse
    product per step.

    Args:
        graphs: ``S ≥ 1`` graphs on the same ``N`` nodes, each in any form of
            :func:`~pdenets.operators.as_weight_matrix` (PyG ``(edge_index, edge_weight)``, sparse or dense
            ``(N, N)`` tensor, scipy sparse matrix).
        num_nodes: number of nodes ``N`` of every graph.
        dtype: floating dtype of the weights (default: ``None``, as given).
        device (torch.device | str | None): device of the result (default: ``None``, where the weights are).

    Returns:
        Coalesced sparse COO tensor of shape ``(S·N, S·N)``.

    Raises:
        ValueError: if ``graphs`` is empty, ``num_nodes < 1`` or a graph is malformed (the message names it).
        TypeError: if ``num_nodes`` is not an integer or a graph has an unsupported type.

    Examples:
        >>> import torch
        >>> a = torch.tensor([[0., 1.], [1., 0.]])
        >>> block_diagonal_graph([a, 2 * a], 2).to_dense()
        tensor([[0., 1., 0., 0.],
                [1., 0., 0., 0.],
                [0., 0., 0., 2.],
                [0., 0., 2., 0.]])
    """
    num_nodes = check_positive_int(num_nodes, "num_nodes")
    if len(graphs) == 0:
        raise ValueError("a time-varying graph needs at least one graph")
    indices, values = [], []
    for position, graph in enumerate(graphs):
        try:
            matrix = as_weight_matrix(graph, num_nodes, dtype=dtype)
        except (ValueError, TypeError) as error:
            raise type(error)(f"graph {position} of the sequence: {error}") from None
        matrix = matrix.to_sparse().coalesce() if is_dense(matrix) else matrix
        indices.append(matrix.indices() + position * num_nodes)
        values.append(matrix.values())
    size = len(graphs) * num_nodes
    out = torch.sparse_coo_tensor(torch.cat(indices, 1), torch.cat(values), (size, size))
    return out.to(device=device).coalesce() if device is not None else out.coalesce()


class COIN(nn.Module):
    r"""Convection (any backbone), then ``r`` diffusion steps on a graph of samples, then an optional head.

    $$
        h = \mathrm{backbone}(x) \quad (t: 0 \to T-1), \qquad
        h \leftarrow (I - \gamma L)^r h \quad (t: T-1 \to T), \qquad
        y = \mathrm{head}(h).
    $$

    Symbols: ``L = Λ − W`` (or ``I − Λ^{-1/2} W Λ^{-1/2}`` with ``laplacian="normalized"``) of the
    non-negative sample weights ``W``, ``Λ`` their diagonal degree matrix, ``γ`` the step size, ``r`` the
    number of steps, ``T`` the final time. This is the COIN architecture of "Convection-Diffusion Equation: A
    Theoretically Certified Framework for Neural Networks": the network as the flow of
    ``∂u/∂t = v(x, t) · ∇u + σ² Δu``, split into convection (the backbone) and diffusion (the last unit of
    time).

    The graph of samples is, in order of precedence:

    * given to :meth:`forward` (``graph=``): an adjacency in any form of
      :func:`~pdenets.operators.as_weight_matrix` — PyG ``(edge_index, edge_weight)``, sparse or
      dense tensor, scipy — or a **list** of such graphs for a time-varying graph, with the input of
      shape ``(S, N, ...)``: slice ``s`` diffuses on ``graph[s]``; or a
      :class:`~pdenets.operators.SliceGraphs` (the same, each distinct graph stored once: a static
      graph diffuses all slices in one sparse product per step);
    * fixed at construction (``graph=`` a matrix or a list), or fixed later by :meth:`fix_graph`;
    * built per batch by a builder (``graph=KnnGaussianWeights(...)``) from the detached input
      (``graph_from="input"``, as Diff-ResNet) or from the backbone's features
      (``graph_from="features"``: images, text — the backbone's embedding space).

    Args:
        backbone: the convection, ``(N, ...) -> (N, C)`` (or ``(N, *)``); any ``nn.Module``.
        step_size: ``γ`` (default 0.5).
        num_steps: ``r ≥ 0`` (default 10; ``0`` gives the backbone alone).
        graph: see above (default ``None``: give it to :meth:`forward`).
        head: module applied after the diffusion (e.g. a linear classifier), default none.
        graph_from: ``"input"`` (default) or ``"features"`` — what a builder sees.
        laplacian: ``"combinatorial"`` (default) or ``"normalized"``.
        dropout: dropout at each diffusion step (default 0).
        check_stability: refuse ``γ`` beyond the stability bound (default ``True``).
        learn_step_size: learn ``γ`` with the weights (default ``False``): ``γ = γ_max · sigmoid(ρ)``
            with ``γ_max = max_step_size`` and ``ρ`` initialized so that ``γ = step_size``. Each step
            is then the convex combination ``(1 − γ/γ_max) X + (γ/γ_max)(I − γ_max L) X`` — stable
            for every ``ρ`` when ``γ_max`` is; training can turn the diffusion down to nothing.
        max_step_size: ``γ_max`` of a learned step size (default 1.0: the bound of row-normalized weights).

    Raises:
        TypeError: if ``backbone`` (or a given ``head``) is not an ``nn.Module``, or ``graph`` has an
            unsupported type.
        ValueError: if ``graph_from``, ``laplacian`` or ``dropout`` is invalid, a fixed graph list is empty,
            or a learned step size does not start in ``(0, max_step_size)``.

    Shapes:
        - input: ``(N, ...)`` — the ``N`` samples of the graph; or ``(S, N, ...)`` with a list of
          ``S`` graphs. The backbone sees ``(N, ...)`` or ``(S·N, ...)``.
        - output: the head's output for every sample, ``(N, ...)`` or ``(S, N, ...)``.

    Examples:
        >>> import torch
        >>> from torch import nn
        >>> from pdenets.operators import KnnGaussianWeights
        >>> backbone = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16))
        >>> model = COIN(backbone, step_size=0.5, num_steps=5, head=nn.Linear(16, 3),
        ...              graph=KnnGaussianWeights(n_top=5, sigma_neighbor=3, normalization="row"))
        >>> model(torch.randn(32, 4)).shape
        torch.Size([32, 3])
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)          # a PyG edge list
        >>> model(torch.randn(3, 4), graph=ring).shape
        torch.Size([3, 3])
    """

    def __init__(
        self,
        backbone: nn.Module,
        *,
        step_size: float = 0.5,
        num_steps: int = 10,
        graph: GraphArg = None,
        head: Optional[nn.Module] = None,
        graph_from: str = "input",
        laplacian: str = "combinatorial",
        dropout: float = 0.0,
        check_stability: bool = True,
        learn_step_size: bool = False,
        max_step_size: float = 1.0,
    ):
        super().__init__()
        if not isinstance(backbone, nn.Module):
            raise TypeError(f"backbone must be an nn.Module, got {type(backbone).__name__}")
        if head is not None and not isinstance(head, nn.Module):
            raise TypeError(f"head must be an nn.Module or None, got {type(head).__name__}")
        self.backbone = backbone
        self.head = head
        self.graph_from = check_choice(graph_from, "graph_from", ("input", "features"))
        check_choice(laplacian, "laplacian", LAPLACIANS)
        builder = graph if callable(graph) and not isinstance(graph, (torch.Tensor, list, tuple)) else None
        self.learn_step_size = bool(learn_step_size)
        self.step_logit: Optional[nn.Parameter] = None
        if self.learn_step_size:
            max_step_size = check_positive(max_step_size, "max_step_size")
            check_positive(step_size, "step_size")
            if step_size >= max_step_size:
                raise ValueError(
                    f"a learned step size starts below max_step_size={max_step_size:g}, got "
                    f"step_size={step_size:g}"
                )
            ratio = step_size / max_step_size
            self.step_logit = nn.Parameter(torch.tensor(math.log(ratio / (1 - ratio))))
        self.max_step_size = float(max_step_size)
        self.diffusion = DiffusionLayer(
            step_size=max_step_size if self.learn_step_size else step_size,
            num_steps=num_steps,
            weights=builder,
            dropout=check_probability(dropout, "dropout"),
            laplacian=laplacian,
            check_stability=check_stability,
        )
        self._fixed: GraphArg = None
        if graph is not None and builder is None:
            self._fixed = self._check_graph(graph)

    @property
    def step_size(self) -> float:
        """``γ`` (the current value when it is learned)."""
        if self.step_logit is not None:
            return float(self.max_step_size * torch.sigmoid(self.step_logit.detach()))
        return self.diffusion.step_size

    @property
    def num_steps(self) -> int:
        return self.diffusion.num_steps

    @staticmethod
    def _check_graph(graph: GraphArg) -> GraphArg:
        if isinstance(graph, list):
            if not graph:
                raise ValueError("a time-varying graph (list) needs at least one graph")
            return graph
        if isinstance(graph, (torch.Tensor, tuple, SliceGraphs)) or hasattr(graph, "tocoo"):
            return graph
        raise TypeError(
            "graph must be an adjacency (tensor, (edge_index, edge_weight), scipy), a list of them "
            f"(time-varying) or a builder such as KnnGaussianWeights, got {type(graph).__name__}"
        )

    def fix_graph(self, x: torch.Tensor) -> torch.Tensor:
        """Build the graph once from ``x`` with the builder (through the backbone for
        ``graph_from="features"``) and keep it fixed (the transductive setting); returns the weights."""
        if self.diffusion.weight_builder is None:
            raise ValueError(
                "fix_graph needs a graph builder (graph=KnnGaussianWeights(...)) at construction"
            )
        with torch.no_grad():
            points = x if self.graph_from == "input" else self.backbone(x)
            self._fixed = self.diffusion.weight_builder(points.detach())
        return self._fixed

    def release_graph(self) -> None:
        """Forget a graph fixed by :meth:`fix_graph` (the builder is used per batch again)."""
        self._fixed = None

    def _flat(self, x: torch.Tensor, graph: GraphArg):
        """The input with samples on one axis, the graph for it, and the leading shape to restore."""
        if isinstance(graph, list):
            if x.dim() < 2 or x.shape[0] != len(graph):
                raise ValueError(
                    f"a time-varying graph of {len(graph)} graphs needs input of shape "
                    f"({len(graph)}, N, ...), got {tuple(x.shape)}"
                )
            nodes = x.shape[1]
            weights = block_diagonal_graph(
                graph, nodes, dtype=x.dtype if x.is_floating_point() else None, device=x.device
            )
            return x.reshape(x.shape[0] * nodes, *x.shape[2:]), weights, x.shape[:2]
        return x, graph, x.shape[:1]

    def forward(self, x: torch.Tensor, graph: GraphArg = None) -> torch.Tensor:
        check_floating(x, "input to COIN")
        if x.dim() < 1 or x.shape[0] == 0:
            raise ValueError(f"COIN needs at least one sample, got input of shape {tuple(x.shape)}")
        graph = self._check_graph(graph) if graph is not None else self._fixed
        if isinstance(graph, SliceGraphs):
            return self._forward_slices(x, graph)
        flat, weights, leading = self._flat(x, graph)
        if (
            weights is None
            and self.diffusion.weight_builder is not None
            and self.num_steps > 0
            and self.graph_from == "input"
        ):
            weights = self.diffusion.weight_builder(flat.detach())
        folded = self._folded(flat, weights)
        if folded is not None:  # the head's output diffused: the same numbers, fewer columns diffused
            return folded.reshape(*leading, *folded.shape[1:])
        features = self.backbone(flat)
        if not isinstance(features, torch.Tensor) or features.dim() < 1 or features.shape[0] != flat.shape[0]:
            raise ValueError(
                f"the backbone must return one row per sample ({flat.shape[0]}), got "
                f"{tuple(features.shape) if isinstance(features, torch.Tensor) else type(features)}"
            )
        if weights is None and self.diffusion.weight_builder is not None and self.num_steps > 0:
            weights = self.diffusion.weight_builder(features.detach())
        if self.num_steps > 0 and weights is None:
            raise ValueError(
                "COIN has no graph of samples: pass graph= to forward, give a fixed graph or a builder "
                "(KnnGaussianWeights) at construction, or use num_steps=0"
            )
        if self.num_steps == 0:
            out = features
        elif self.commutes_with_head() and features.dim() == 2:  # the head's C columns diffused
            assert self.head is not None
            out = self._diffuse(self.head(features), weights)
            return out.reshape(*leading, *out.shape[1:])
        else:
            out = self._diffuse(features, weights)
        if self.head is not None:
            out = self.head(out)
        return out.reshape(*leading, *out.shape[1:])

    def _diffuse(self, features: torch.Tensor, weights: Any) -> torch.Tensor:
        """``r`` diffusion steps of ``features`` on ``weights`` (a learned step size's relaxed steps)."""
        if self.step_logit is not None:
            return self._learned_diffusion(features, weights)
        return self.diffusion(features, weights)

    def commutes_with_head(self) -> bool:
        """Whether the head may be applied before the diffusion, with the same output.

        Each step ``X ← (I − γL) X`` mixes rows and an affine head ``y = x Wᵀ + b`` maps columns; they commute
        when the steps keep constants, ``(I − γL) 1 = 1``: a combinatorial Laplacian ``L = Λ − W`` has
        ``L 1 = 0`` for any weights (a learned step ``X ← X − ρ γ L X`` too), and no dropout acts between the
        steps. Then ``head((I − γL)^r h) = (I − γL)^r head(h)``, and diffusing the head's ``C`` columns costs
        ``C / d`` of diffusing the features' ``d``: :meth:`forward` takes that order where ``C < d``. A
        :class:`~torch.nn.Sequential` backbone that ends in a linear map is folded into the head as well
        (``head(A h') = (W_head A) h' + …``): its ``d × d`` products are replaced by ``C × d`` ones.
        """
        head = self.head
        return (
            type(head) is nn.Linear
            and self.num_steps > 0
            and self.diffusion.laplacian == "combinatorial"
            and (self.diffusion.dropout == 0 or not self.training)
            and head.out_features < head.in_features
        )

    def _folded(self, flat: torch.Tensor, weights: Any) -> Optional[torch.Tensor]:
        """The output of a :class:`~torch.nn.Sequential` backbone ending in a linear map, the head folded
        into that map and diffused after it (:meth:`commutes_with_head`); ``None`` for any other model."""
        backbone, head = self.backbone, self.head
        if weights is None or not isinstance(backbone, nn.Sequential) or not len(backbone):
            return None
        last = backbone[-1]
        if type(last) is not nn.Linear or not self.commutes_with_head():
            return None
        assert isinstance(head, nn.Linear)  # commutes_with_head
        if last.out_features != head.in_features:
            return None
        hidden = backbone[:-1](flat)
        weight = head.weight @ last.weight  # (C, d_in): the last map and the head in one
        if last.bias is None:
            bias = head.bias
        else:
            bias = head.weight @ last.bias if head.bias is None else head.weight @ last.bias + head.bias
        return self._diffuse(nn.functional.linear(hidden, weight, bias), weights)

    def _forward_slices(self, x: torch.Tensor, graphs: SliceGraphs) -> torch.Tensor:
        """Backbone on the ``S·N`` rows, then ``r`` steps ``X_s ← X_s − γ L_{g(s)} X_s`` slice by slice
        (:class:`~pdenets.operators.SliceDiffusion`)."""
        if x.dim() < 2 or x.shape[0] != graphs.num_slices or x.shape[1] != graphs.num_nodes:
            raise ValueError(
                f"the graphs cover {graphs.num_slices} slices of {graphs.num_nodes} nodes; the input "
                f"has shape {tuple(x.shape)}"
            )
        slices, nodes = x.shape[:2]
        features = self.backbone(x.reshape(slices * nodes, *x.shape[2:]))
        if (
            not isinstance(features, torch.Tensor)
            or features.dim() != 2
            or features.shape[0] != slices * nodes
        ):
            raise ValueError(
                f"over SliceGraphs the backbone must return (S·N, C) = ({slices * nodes}, C), got "
                f"{tuple(features.shape) if isinstance(features, torch.Tensor) else type(features)}"
            )
        out = features.reshape(slices, nodes, -1)
        if self.num_steps > 0:
            diffusion = self.diffusion
            # a learned step γ_max · sigmoid(ρ) is stable whenever γ_max is: γ_max is checked
            operator = SliceDiffusion(
                graphs,
                self.max_step_size if self.step_logit is not None else diffusion.step_size,
                check_stability=diffusion.check_stability,
                laplacian=diffusion.laplacian,
            )
            scale = None if self.step_logit is None else torch.sigmoid(self.step_logit).to(out.dtype)
            hooks = {}
            if diffusion.dropout > 0 and self.training:

                def drop(values: torch.Tensor) -> torch.Tensor:
                    return torch.nn.functional.dropout(values, diffusion.dropout)

                hooks = {f"{diffusion.dropout_position}_step": drop}
            out = operator.apply(out, self.num_steps, step_scale=scale, **hooks)
        if self.head is not None:
            out = self.head(out)
        return out

    def _learned_diffusion(self, features: torch.Tensor, weights: Any) -> torch.Tensor:
        """``r`` relaxed steps ``X ← X + ρ (A X − X) = X − ρ γ_max L X`` with ``ρ = sigmoid(step_logit) =
        γ/γ_max`` (:meth:`~pdenets.operators.DiffusionOperator.apply` with ``step_scale``), dropout after
        each."""
        operator = self.diffusion.operator_for(features, weights)
        assert self.step_logit is not None  # a learned step (the caller's branch)
        ratio = torch.sigmoid(self.step_logit).to(features.dtype)
        dropout = self.diffusion.dropout

        def drop(values: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.dropout(values, dropout)

        after = drop if dropout > 0 and self.training else None
        return operator.apply(features, self.num_steps, step_scale=ratio, after_step=after)

    def extra_repr(self) -> str:
        fixed = (
            ""
            if self._fixed is None
            else (
                f", fixed time-varying graph ({len(self._fixed)})"
                if isinstance(self._fixed, list)
                else ", fixed graph"
            )
        )
        learned = (
            f", learned step size (now {self.step_size:.4g}, max {self.max_step_size:g})"
            if self.learn_step_size
            else ""
        )
        return f"graph_from={self.graph_from!r}{fixed}{learned}"


def mlp(
    in_features: int, hidden_features: int, out_features: int, *, num_layers: int = 2, dropout: float = 0.0
) -> nn.Module:
    """``num_layers`` affine maps with ReLU (and dropout, :class:`~pdenets.nn.FastDropout`) between them:
    ``in → hidden → … → out``."""
    in_features, hidden, out_features = (
        check_positive_int(v, name)
        for v, name in (
            (in_features, "in_features"),
            (hidden_features, "hidden_features"),
            (out_features, "out_features"),
        )
    )
    num_layers = check_positive_int(num_layers, "num_layers")
    dropout = check_probability(dropout, "dropout")
    sizes = [in_features] + [hidden] * (num_layers - 1) + [out_features]
    layers: List[nn.Module] = []
    for index, (size_in, size_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(size_in, size_out))
        if index < num_layers - 1:
            layers.append(nn.ReLU())
            if dropout:
                layers.append(FastDropout(dropout))
    return nn.Sequential(*layers)


def _sample_graph_example(num_classes: int) -> ModelExample:
    """Six samples on a ring graph, five features."""
    ring = torch.roll(torch.eye(6), 1, 0)
    return ModelExample({"in_features": 5, "graph": ring + ring.T}, (torch.randn(6, 5),), (6, num_classes))


@register_model(
    "coin-mlp",
    family="coin",
    defaults={"hidden_features": 64, "num_layers": 2, "num_steps": 10, "step_size": 0.5},
    graph_input="constructor",
    example=lambda num_classes: _sample_graph_example(num_classes),
    description="COIN with an MLP backbone: MLP features, r diffusion steps on a sample graph, linear "
    "classifier",
)
@renamed_arguments(hidden="hidden_features")
def coin_mlp(
    in_features: int,
    num_classes: int,
    *,
    hidden_features: int = 64,
    num_layers: int = 2,
    dropout: float = 0.0,
    **kwargs,
) -> COIN:
    """COIN over an MLP (``in → hidden``, ``num_layers`` layers) with a linear head ``hidden → num_classes``.

    ``y = FC((I − γL)^r MLP(x))``: the convection is an MLP with ReLU between its ``num_layers`` affine maps,
    the diffusion ``r`` explicit steps on the graph of samples (see :class:`COIN`, after "Convection-Diffusion
    Equation: A Theoretically Certified Framework for Neural Networks"), the head a linear classifier.
    Registered as ``"coin-mlp"`` (registry defaults: ``hidden_features=64``, ``num_layers=2``,
    ``num_steps=10``, ``step_size=0.5``). Further keyword arguments (``step_size``, ``num_steps``, ``graph``,
    …) go to :class:`COIN`.

    Args:
        in_features: size ``d`` of the input features, ``(N, d)``.
        num_classes: number of classes ``C``, the output ``(N, C)``.
        hidden_features: width of the MLP and of the diffused features (default: ``64``).
        num_layers: number of affine maps of the MLP (default: ``2``).
        dropout: dropout between the MLP layers (default: ``0.0``).

    Returns:
        A :class:`COIN` with an MLP backbone and a linear head.

    Raises:
        ValueError: if a size is not a positive integer or ``dropout`` is not in ``[0, 1)``; also as
            :class:`COIN`.

    Examples:
        >>> import torch
        >>> from pdenets.operators import KnnGaussianWeights
        >>> net = coin_mlp(4, 3, hidden_features=16, num_steps=5,
        ...                graph=KnnGaussianWeights(n_top=5, sigma_neighbor=3, normalization="row"))
        >>> net(torch.randn(32, 4)).shape
        torch.Size([32, 3])
    """
    backbone = mlp(in_features, hidden_features, hidden_features, num_layers=num_layers, dropout=dropout)
    return COIN(
        backbone, head=nn.Linear(hidden_features, check_positive_int(num_classes, "num_classes")), **kwargs
    )
