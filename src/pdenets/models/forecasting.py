r"""Forecasters for series on a graph of regions: ``(S, N, L)`` windows in, ``(S, N, H)`` forecasts out.

``S`` forecast origins, ``N`` regions, ``L`` past values per region, ``H`` horizons. The graph is one
adjacency for every origin, a list of ``S`` (the graph of each origin's day) or a
:class:`~pdenets.operators.SliceGraphs` (the distinct graphs stored once, normalizations cached:
what a training loop should pass). Message passing never copies a graph per origin: a static graph
is applied to all origins in one sparse product.

* :class:`WindowMLP` — the convection: a per-region model with weights shared across regions
  (a linear map of the lags plus an MLP correction); no information crosses regions.
* ``coin-forecast`` — :class:`~pdenets.models.COIN` over :class:`WindowMLP`: the forecasts are
  then diffused on the region graph (``r`` explicit steps).
* :class:`WindowGCN` — two graph convolutions on the window features, the arithmetic of PyTorch
  Geometric's ``GCNConv`` (tested equal to it).
* :class:`GraphConvGRU` (``cheb-gru``) — our recurrent graph model: a GRU run over the lags
  whose gates are Chebyshev graph convolutions of order ``K = 2`` (the arithmetic of PyG's
  ``ChebConv``, tested equal to it), then a linear read-out; trained with early stopping.
* :class:`PyGTGConvGRU` (``pygt-gconv-gru``) — the reference: PyTorch Geometric Temporal's
  ``GConvGRU`` as its documentation runs it (``GConvGRU(lags, 32, K=1)`` on the lag vector, a new
  hidden state at every call, ReLU, ``Linear(32, H)``; 200 full-batch epochs of Adam at 0.01 on the
  per-node loss). With ``K = 1`` and no state its gates see neither the graph nor a recurrence.

Every forecaster a forecasting protocol compares is one entry of :data:`FORECASTERS` (``pdenets list
forecasters``): the closed-form references (``last-value``, ``moving-average``, ``linear``: a function of the
windows) and the trained ones (a registered model, built by :func:`~pdenets.models.create_model`). Each
declares what the protocol must know of it: whether it fits targets, and whether it diffuses itself (COIN's
own forecaster carries the diffusion in its layers: it is trained with the diffusion settings and not diffused
again), with the forecaster that is its convection alone. A new forecaster is one :func:`register_forecaster`
(or the :func:`forecaster` decorator over a model factory) in any module of :mod:`pdenets.models` or of a
``pdenets.forecasters`` plug-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple, Union, cast

import numpy as np
import torch
from torch import nn

from .._checks import check_floating, check_positive_int, check_probability
from .._deprecation import renamed_arguments
from .._registry import Registry
from ..operators.graph import GraphLike
from ..operators.slice_graphs import SliceGraphs, chebyshev_propagation_matrix, gcn_propagation_matrix
from .coin import COIN, mlp
from .registry import ModelExample, register_model


def _example(num_classes: int) -> ModelExample:
    """Two forecast origins of six regions with five lags; a ring graph per origin (the second one
    weighted)."""
    ring = torch.tensor([[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 0]])
    return ModelExample(
        {"in_features": 5}, (torch.randn(2, 6, 5), [(ring, None), (ring, torch.rand(6))]), (2, 6, num_classes)
    )


__all__ = [
    "Forecaster",
    "FORECASTERS",
    "register_forecaster",
    "forecaster",
    "learned_forecasters",
    "closed_form_forecasters",
    "linear_forecast",
    "linear_coefficients",
    "WindowMLP",
    "WindowGCN",
    "GraphConvGRU",
    "PyGTGConvGRU",
    "GCNGraphConv",
    "ChebGraphConv",
    "coin_forecast",
    "slice_graphs",
]

GraphSequence = Union[GraphLike, List[GraphLike], SliceGraphs]

#: a closed-form forecast: ``(inputs (S, N, L), targets (S, N, H), fitted (S, N, H) booleans) → (S, N, H)``;
#: it may read only the targets marked ``fitted``
ClosedForm = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class Forecaster:
    """A forecaster that forecasting protocols compare: closed-form, or a registered model trained on the
    windows.

    Args:
        name: its name (``--models``).
        description: one line for listings and reports.
        closed_form: the forecast as a function of the windows (:data:`ClosedForm`); ``None`` for a trained
            forecaster, built by :func:`~pdenets.models.create_model` ``(name, in_features=lags,
            num_classes=horizons)``.
        fits_targets: whether it reads training targets; one that reads none (``last-value``) may have its
            diffusion chosen on every target before the test period.
        diffuses_itself: it carries COIN's diffusion in its own layers: it is trained with the diffusion
            settings, and not diffused again.
        convection: for a forecaster that diffuses itself, the forecaster that is its convection alone (the
            pair a report compares); ``None`` otherwise.
    """

    name: str
    description: str
    closed_form: Optional[ClosedForm] = None
    fits_targets: bool = True
    diffuses_itself: bool = False
    convection: Optional[str] = None

    @property
    def is_closed_form(self) -> bool:
        """Whether its forecast is a closed form of the windows (nothing trained, one seed is enough)."""
        return self.closed_form is not None


#: The forecaster registry, name → :class:`Forecaster`, in registration order (the closed forms first): every
#: module of :mod:`pdenets.models` and the ``pdenets.forecasters`` entry points of other packages.
FORECASTERS: Registry[Forecaster] = Registry(
    "forecasters",
    kind="forecaster",
    package=__package__,
    describe=lambda entry: entry.description,
    check=lambda entry: (
        None if isinstance(entry, Forecaster) else f"must be a Forecaster, got {type(entry).__name__}"
    ),
)


def register_forecaster(entry: Forecaster, *, module: Optional[str] = None) -> Forecaster:
    """Make ``entry`` known to the forecasting protocols (``pdenets run coin-forecast --models NAME``).

    Args:
        entry: the declaration; a trained forecaster's ``name`` must also be a registered model.
        module: the module that defines it (its source in ``pdenets list``; default: the caller's closed
            form's).

    Returns:
        ``entry``.

    Raises:
        ValueError: the name is taken, or a self-diffusing forecaster names no convection (or vice versa).
    """
    if entry.diffuses_itself != (entry.convection is not None):
        raise ValueError(
            f"forecaster {entry.name!r}: a forecaster that diffuses itself names its convection alone "
            "(convection=...), and only such a forecaster does"
        )
    if entry.is_closed_form and entry.diffuses_itself:
        raise ValueError(f"forecaster {entry.name!r}: a closed form cannot diffuse itself")
    return FORECASTERS.register(
        entry.name, entry, module=module or getattr(entry.closed_form, "__module__", None)
    )


def forecaster(
    name: str, *, diffuses_itself: bool = False, convection: Optional[str] = None, **model: Any
) -> Callable[[Callable[..., nn.Module]], Callable[..., nn.Module]]:
    """Decorator: register a model factory as a trained forecaster (a ``forecast`` model and a
    :class:`Forecaster`).

    Args:
        name: the name of both.
        diffuses_itself: see :class:`Forecaster`.
        convection: see :class:`Forecaster`.
        model: the keyword arguments of :func:`~pdenets.models.register_model` (``defaults``, ``example``,
            ``description``; the family is ``"forecast"`` and the graph is given at ``forward``).

    Returns:
        The decorator; it returns the factory unchanged.
    """

    def decorator(factory: Callable[..., nn.Module]) -> Callable[..., nn.Module]:
        register_model(name, family="forecast", graph_input="forward", **model)(factory)
        text = model.get("description") or ((factory.__doc__ or "").strip().splitlines() or [""])[0]
        register_forecaster(
            Forecaster(name, text, diffuses_itself=diffuses_itself, convection=convection),
            module=factory.__module__,
        )
        return factory

    return decorator


def learned_forecasters() -> Tuple[str, ...]:
    """The trained forecasters, in registration order.

    Examples:
        >>> learned_forecasters()[:2]
        ('window-mlp', 'coin-forecast')
    """
    return tuple(name for name, entry in FORECASTERS.items() if not entry.is_closed_form)


def closed_form_forecasters() -> Tuple[str, ...]:
    """The closed-form forecasters, in registration order.

    Examples:
        >>> closed_form_forecasters()
        ('last-value', 'moving-average', 'linear')
    """
    return tuple(name for name, entry in FORECASTERS.items() if entry.is_closed_form)


def _last_value(inputs: torch.Tensor, targets: torch.Tensor, fitted: torch.Tensor) -> torch.Tensor:
    return inputs[..., -1:].expand_as(targets).clone()


def _moving_average(inputs: torch.Tensor, targets: torch.Tensor, fitted: torch.Tensor) -> torch.Tensor:
    return inputs.mean(-1, keepdim=True).expand_as(targets).clone()


def linear_forecast(inputs: torch.Tensor, targets: torch.Tensor, train: torch.Tensor) -> torch.Tensor:
    """Least squares on the lags with an intercept, shared across regions, one fit per horizon (the same
    forecasts on every call).

    Args:
        inputs: ``(S, N, L)`` windows.
        targets: ``(S, N, H)`` targets.
        train: ``(S, N, H)`` booleans, the targets to fit.

    Returns:
        ``(S, N, H)`` forecasts of every window.

    Examples:
        >>> inputs = torch.arange(12.0, dtype=torch.float64).reshape(6, 1, 2)
        >>> targets = 2 * inputs[..., 1:] + 1
        >>> observed = torch.ones_like(targets, dtype=torch.bool)
        >>> linear_forecast(inputs, targets, observed).flatten().round().tolist()
        [3.0, 7.0, 11.0, 15.0, 19.0, 23.0]
    """
    design = torch.cat([inputs, torch.ones_like(inputs[..., :1])], -1)
    coefficients = linear_coefficients(inputs, targets, train)
    out = torch.empty_like(targets)
    for horizon in range(targets.shape[-1]):
        out[..., horizon] = (design @ coefficients[horizon].unsqueeze(-1).to(design)).squeeze(-1)
    return out


def linear_coefficients(inputs: torch.Tensor, targets: torch.Tensor, train: torch.Tensor) -> torch.Tensor:
    """The least-squares fit of :func:`linear_forecast`: ``(H, L + 1)``, per horizon the weights of the ``L``
    lags and the intercept (last), so that a window ``w`` forecasts ``[w, 1] @ coefficients.T``.

    Args:
        inputs: ``(S, N, L)`` windows.
        targets: ``(S, N, H)`` targets.
        train: ``(S, N, H)`` booleans, the targets to fit.

    Returns:
        ``(H, L + 1)`` coefficients (in the inputs' dtype).

    Examples:
        >>> inputs = torch.arange(12.0, dtype=torch.float64).reshape(6, 1, 2)
        >>> observed = torch.ones(6, 1, 1, dtype=torch.bool)
        >>> fit = linear_coefficients(inputs, 2 * inputs[..., 1:] + 1, observed)
        >>> window = torch.cat([inputs[0, 0], torch.ones(1, dtype=torch.float64)])
        >>> fit.shape, (window @ fit.T).round().tolist()
        (torch.Size([1, 3]), [3.0])
    """
    design = torch.cat([inputs, torch.ones_like(inputs[..., :1])], -1)
    rows_of = []
    for horizon in range(targets.shape[-1]):
        rows = train[..., horizon]
        # LAPACK's gelsd through NumPy (an explicit transfer to the host: a closed form, solved once): the
        # same answer on every call (torch.linalg.lstsq on the CPU returns last-bit-different solutions for
        # the same input from one call to the next)
        solution, *_ = np.linalg.lstsq(
            design[rows].detach().cpu().numpy(),
            targets[..., horizon][rows].unsqueeze(-1).detach().cpu().numpy(),
            rcond=None,
        )
        rows_of.append(torch.from_numpy(solution[:, 0]))
    return torch.stack(rows_of)


register_forecaster(
    Forecaster("last-value", "the last observed value, for every horizon", _last_value, False)
)
register_forecaster(
    Forecaster("moving-average", "the mean of the lags, for every horizon", _moving_average, False)
)
register_forecaster(
    Forecaster(
        "linear",
        "least squares on the lags (shared across regions, one fit per horizon) on the fitted targets",
        linear_forecast,
    )
)


def slice_graphs(graph: GraphSequence, origins: int, nodes: int) -> SliceGraphs:
    """``graph`` as a :class:`SliceGraphs` of ``origins`` slices over ``nodes`` regions.

    One graph is shared by every origin; a list gives one per origin (repeated objects are stored once)."""
    if isinstance(graph, SliceGraphs):
        if graph.num_slices != origins or graph.num_nodes != nodes:
            raise ValueError(
                f"the graphs cover {graph.num_slices} origins of {graph.num_nodes} regions, the input "
                f"{origins} origins of {nodes} regions"
            )
        return graph
    if isinstance(graph, list):
        if len(graph) != origins:
            raise ValueError(f"{len(graph)} graphs for {origins} forecast origins")
        return SliceGraphs(graph, nodes)
    if graph is None:
        raise ValueError(
            "this forecaster needs the region graph: pass graph= (one adjacency, a list per origin or a "
            "SliceGraphs)"
        )
    return SliceGraphs([graph], nodes, ids=torch.zeros(origins, dtype=torch.long))


def _windows(x: torch.Tensor, graph: GraphSequence, lags: int, name: str):
    """Windows ``(S, N, L)`` (rows ``(M, L)`` read as one origin of ``M`` regions), their graphs, the output
    shape."""
    check_floating(x, f"input to {name}")
    if x.dim() not in (2, 3) or x.shape[-1] != lags:
        raise ValueError(
            f"{name} expects windows of shape (S, N, {lags}) or rows (M, {lags}), got {tuple(x.shape)}"
        )
    windows = x if x.dim() == 3 else x.unsqueeze(0)
    return windows, slice_graphs(graph, windows.shape[0], windows.shape[1]), x.shape[:-1]


class GCNGraphConv(nn.Module):
    r"""``Y = P X Θ + b`` with ``P = D^{-1/2}(Wᵀ + I)D^{-1/2}``: PyTorch Geometric's ``GCNConv`` on
    :class:`SliceGraphs`.

    The product runs in the narrower width (``P`` before ``Θ`` when ``in < out``). The normalized
    graphs are computed once per distinct graph. Shapes: ``(S, N, in)`` → ``(S, N, out)``.
    """

    def __init__(self, in_features: int, out_features: int, *, bias: bool = True):
        super().__init__()
        self.linear = nn.Linear(
            check_positive_int(in_features, "in_features"),
            check_positive_int(out_features, "out_features"),
            bias=False,
        )
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None
        nn.init.xavier_uniform_(self.linear.weight)

    def forward(self, x: torch.Tensor, graphs: SliceGraphs) -> torch.Tensor:
        propagation = graphs.normalized("gcn", gcn_propagation_matrix)
        if self.linear.in_features < self.linear.out_features:
            out = self.linear(propagation.propagate(x))
        else:
            out = propagation.propagate(self.linear(x))
        return out if self.bias is None else out + self.bias


class ChebGraphConv(nn.Module):
    r"""``Y = Σ_{k<K} T_k(L̂) X Θ_k + b``: PyTorch Geometric's ``ChebConv`` (``sym``, ``λ_max = 2``) on
    :class:`SliceGraphs`.

    ``T_0 = I``, ``T_1 = L̂``, ``T_k = 2 L̂ T_{k−1} − T_{k−2}``, ``L̂ = L − I`` of the symmetric
    normalized Laplacian. Shapes: ``(S, N, in)`` → ``(S, N, out)``.
    """

    def __init__(self, in_features: int, out_features: int, order: int = 2, *, bias: bool = True):
        super().__init__()
        in_features, out_features = (
            check_positive_int(in_features, "in_features"),
            check_positive_int(out_features, "out_features"),
        )
        lins = [
            nn.Linear(in_features, out_features, bias=False)
            for _ in range(check_positive_int(order, "order"))
        ]
        for lin in lins:
            nn.init.xavier_uniform_(lin.weight)
        self.lins = nn.ModuleList(lins)
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    @staticmethod
    def basis(x: torch.Tensor, graphs: SliceGraphs, order: int) -> List[torch.Tensor]:
        """``[T_0(L̂) X, …, T_{K−1}(L̂) X]``."""
        laplacian = graphs.normalized("chebyshev", chebyshev_propagation_matrix)
        terms = [x]
        if order > 1:
            terms.append(laplacian.propagate(x))
        for _ in range(2, order):
            terms.append(2 * laplacian.propagate(terms[-1]) - terms[-2])
        return terms

    def combine(self, terms: List[torch.Tensor]) -> torch.Tensor:
        """``Σ_k terms[k] Θ_k + b`` as one product: ``[T_0 X, …, T_{K−1} X] [Θ_0; …; Θ_{K−1}] + b``."""
        weight = torch.cat([cast(nn.Linear, lin).weight for lin in self.lins], 1)
        stacked = terms[0] if len(terms) == 1 else torch.cat(terms, -1)
        return torch.nn.functional.linear(stacked, weight, self.bias)

    def forward(self, x: torch.Tensor, graphs: SliceGraphs) -> torch.Tensor:
        return self.combine(self.basis(x, graphs, len(self.lins)))


class WindowMLP(nn.Module):
    r"""Per-region forecaster with shared weights: ``ŷ = A x + b + MLP(x)`` for each region's window ``x ∈
    R^L``.

    Args:
        lags: ``L``; horizons: ``H``; hidden_features: MLP width (default 32); num_layers: MLP layers
            (default 2); dropout: MLP dropout (default 0).

    Shapes: ``(S, N, L)`` or ``(M, L)`` → ``(S, N, H)`` or ``(M, H)``; the graph argument is ignored.

    Examples:
        >>> import torch
        >>> WindowMLP(4, 2)(torch.randn(3, 5, 4)).shape
        torch.Size([3, 5, 2])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(
        self,
        lags: int,
        horizons: int,
        *,
        hidden_features: int = 32,
        num_layers: int = 2,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.linear = nn.Linear(self.lags, self.horizons)
        self.correction = mlp(
            self.lags, hidden_features, self.horizons, num_layers=num_layers, dropout=dropout
        )

    def forward(self, x: torch.Tensor, graph: GraphSequence = None) -> torch.Tensor:
        check_floating(x, "input to WindowMLP")
        if x.shape[-1] != self.lags:
            raise ValueError(f"WindowMLP expects {self.lags} lags in the last axis, got {tuple(x.shape)}")
        return self.linear(x) + self.correction(x)


class WindowGCN(nn.Module):
    r"""Two graph convolutions on the window features: ``P ReLU(P X Θ₁ + b₁) Θ₂ + b₂`` per origin's graph.

    ``P`` is PyTorch Geometric's ``GCNConv`` normalization
    (:func:`~pdenets.operators.gcn_propagation_matrix`).

    Examples:
        >>> import torch
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)
        >>> WindowGCN(4, 2)(torch.randn(3, 3, 4), ring).shape
        torch.Size([3, 3, 2])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(self, lags: int, horizons: int, *, hidden_features: int = 32, dropout: float = 0.0):
        super().__init__()
        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.first = GCNGraphConv(self.lags, check_positive_int(hidden_features, "hidden_features"))
        self.second = GCNGraphConv(hidden_features, self.horizons)
        self.dropout = nn.Dropout(check_probability(dropout, "dropout"))

    def forward(self, x: torch.Tensor, graph: GraphSequence) -> torch.Tensor:
        windows, graphs, leading = _windows(x, graph, self.lags, "WindowGCN")
        hidden = self.dropout(torch.relu(self.first(windows, graphs)))
        return self.second(hidden, graphs).reshape(*leading, self.horizons)


class GraphConvGRU(nn.Module):
    r"""GRU over the ``L`` lags whose gates are Chebyshev graph convolutions (GConvGRU), then ``Linear(hidden,
    H)``.

    $$
        z = σ(Θ_{xz} ⋆ x_τ + Θ_{hz} ⋆ h), \quad r = σ(Θ_{xr} ⋆ x_τ + Θ_{hr} ⋆ h), \quad
        \tilde h = \tanh(Θ_{xh} ⋆ x_τ + Θ_{hh} ⋆ (r ⊙ h)), \quad h ← z ⊙ h + (1 − z) ⊙ \tilde h,
    $$

    for ``τ = 1…L``, with ``⋆`` a Chebyshev convolution of order ``K`` on the origin's graph
    (:class:`ChebGraphConv`). The input terms of all ``L`` lags come from one propagation of the window.

    Examples:
        >>> import torch
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)
        >>> GraphConvGRU(4, 2, hidden_features=8)(torch.randn(3, 3, 4), ring).shape
        torch.Size([3, 3, 2])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(self, lags: int, horizons: int, *, hidden_features: int = 32, order: int = 2):
        super().__init__()
        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.hidden = hidden = check_positive_int(hidden_features, "hidden_features")
        self.order = check_positive_int(order, "order")
        self.input_gates = ChebGraphConv(1, 3 * hidden, self.order)
        self.update_gates = ChebGraphConv(hidden, 2 * hidden, self.order, bias=False)
        self.candidate = ChebGraphConv(hidden, hidden, self.order, bias=False)
        self.readout = nn.Linear(hidden, self.horizons)

    def forward(self, x: torch.Tensor, graph: GraphSequence) -> torch.Tensor:
        windows, graphs, leading = _windows(x, graph, self.lags, "GraphConvGRU")
        # the input terms of every lag at once: T_k(L̂) x_τ for all τ (one propagation per k), then
        # (S, N, L, K) @ (K, 3·hidden)
        lag_terms = torch.stack(ChebGraphConv.basis(windows, graphs, self.order), -1)
        gates_per_lag = self.input_gates.combine([lag_terms]).unbind(2)  # unbind: one gradient buffer, not L
        state = windows.new_zeros(*windows.shape[:2], self.hidden)
        for gates_x in gates_per_lag:
            gates_h = self.update_gates(state, graphs)
            x_z, x_r, x_h = gates_x.split(self.hidden, dim=-1)
            h_z, h_r = gates_h.split(self.hidden, dim=-1)
            update, reset = torch.sigmoid(x_z + h_z), torch.sigmoid(x_r + h_r)
            candidate = torch.tanh(x_h + self.candidate(reset * state, graphs))
            state = update * state + (1 - update) * candidate
        return self.readout(state).reshape(*leading, self.horizons)


class PyGTGConvGRU(nn.Module):
    r"""PyTorch Geometric Temporal's ``GConvGRU`` as its documented chickenpox example runs it, for ``H``
    horizons.

    The ``L`` lags of a region are its node features; one call of the GRU cell with a new hidden state
    ``h = 0`` (the example passes none), so with ``⋆`` a Chebyshev convolution of order ``K``:

    $$
        z = σ(Θ_{xz} ⋆ x + b_{hz}), \quad r = σ(Θ_{xr} ⋆ x + b_{hr}), \quad
        \tilde h = \tanh(Θ_{xh} ⋆ x + b_{hh}), \quad h = (1 − z) ⊙ \tilde h, \quad
        y = \mathrm{Linear}(\mathrm{ReLU}(h)),
    $$

    the state terms ``Θ_h ⋆ 0`` reduced to their biases. ``K = 1`` (the example's) is ``Θ_0 x``: no
    neighbour enters (the graph is accepted and unused). A reference model, not ours: its training is
    the example's too (200 full-batch epochs of Adam at 0.01, the per-node MSE; the task's
    ``REFERENCE_TRAINING``).

    Examples:
        >>> import torch
        >>> ring = (torch.tensor([[0, 1, 2], [1, 2, 0]]), None)
        >>> PyGTGConvGRU(4, 1)(torch.randn(3, 3, 4), ring).shape
        torch.Size([3, 3, 1])
    """

    @renamed_arguments(hidden="hidden_features")
    def __init__(self, lags: int, horizons: int, *, hidden_features: int = 32, order: int = 1):
        super().__init__()
        self.lags, self.horizons = check_positive_int(lags, "lags"), check_positive_int(horizons, "horizons")
        self.hidden = hidden = check_positive_int(hidden_features, "hidden_features")
        self.order = check_positive_int(order, "order")
        self.input_gates = ChebGraphConv(self.lags, 3 * hidden, self.order)
        self.state_bias = nn.Parameter(torch.zeros(3 * hidden))  # the state convolutions' biases (h = 0)
        self.readout = nn.Linear(hidden, self.horizons)

    def forward(self, x: torch.Tensor, graph: GraphSequence) -> torch.Tensor:
        windows, graphs, leading = _windows(x, graph, self.lags, "PyGTGConvGRU")
        gates = self.input_gates(windows, graphs) + self.state_bias
        x_z, x_r, x_h = gates.split(self.hidden, dim=-1)
        del x_r  # the reset gate multiplies the zero state: it changes nothing
        state = (1 - torch.sigmoid(x_z)) * torch.tanh(x_h)
        return self.readout(torch.relu(state)).reshape(*leading, self.horizons)


@forecaster(
    "window-mlp",
    defaults={"hidden_features": 32},
    example=_example,
    description="per-region forecaster (linear in the lags + MLP correction), no graph",
)
def window_mlp(in_features: int, num_classes: int, **kwargs) -> WindowMLP:
    """``in_features`` = lags, ``num_classes`` = horizons."""
    return WindowMLP(in_features, num_classes, **kwargs)


@forecaster(
    "coin-forecast",
    diffuses_itself=True,
    convection="window-mlp",
    defaults={"hidden_features": 32, "num_steps": 2, "step_size": 0.1, "learn_step_size": True},
    example=_example,
    description="COIN: the per-region forecaster, then r diffusion steps of the forecasts on the region "
    "graph",
)
@renamed_arguments(hidden="hidden_features")
def coin_forecast(
    in_features: int,
    num_classes: int,
    *,
    hidden_features: int = 32,
    num_layers: int = 2,
    dropout: float = 0.0,
    **kwargs,
) -> COIN:
    """COIN over :class:`WindowMLP` (``in_features`` = lags, ``num_classes`` = horizons); graph given at
    forward."""
    backbone = WindowMLP(
        in_features, num_classes, hidden_features=hidden_features, num_layers=num_layers, dropout=dropout
    )
    return COIN(backbone, **kwargs)


@forecaster(
    "window-gcn",
    defaults={"hidden_features": 32},
    example=_example,
    description="two GCN convolutions (PyTorch Geometric's GCNConv arithmetic) on the window features",
)
@renamed_arguments(hidden="hidden_features")
def window_gcn(in_features: int, num_classes: int, **kwargs) -> WindowGCN:
    return WindowGCN(in_features, num_classes, **kwargs)


@forecaster(
    "cheb-gru",
    defaults={"hidden_features": 32},
    example=_example,
    description="our recurrent graph model: a GRU over the lags with K = 2 Chebyshev gates, linear read-out",
)
@renamed_arguments(hidden="hidden_features")
def cheb_gru(in_features: int, num_classes: int, **kwargs) -> GraphConvGRU:
    return GraphConvGRU(in_features, num_classes, **kwargs)


@forecaster(
    "pygt-gconv-gru",
    defaults={"hidden_features": 32},
    example=_example,
    description="reference: PyTorch Geometric Temporal's GConvGRU as its documentation "
    "runs it (K = 1, no recurrence, ReLU, linear read-out)",
)
@renamed_arguments(hidden="hidden_features")
def pygt_gconv_gru(in_features: int, num_classes: int, **kwargs) -> PyGTGConvGRU:
    return PyGTGConvGRU(in_features, num_classes, **kwargs)
