r"""The diffusion step of a convection–diffusion network as a layer."""

from __future__ import annotations

from typing import Callable, Optional, Union

import torch
from torch import nn

from .._checks import (
    check_choice,
    check_dense,
    check_features,
    check_floating,
    check_positive,
    check_positive_int,
    check_probability,
)
from ..operators.diffusion import LAPLACIANS, DiffusionOperator
from ..operators.graph import GraphLike
from ..operators.partitioned import PartitionedDiffusion
from .adjoint_diffusion import adjoint_diffusion, adjoint_diffusion_readout
from .dropout import fast_dropout

__all__ = ["DiffusionLayer"]

WeightsArg = Union[
    GraphLike, Callable[[torch.Tensor], torch.Tensor], DiffusionOperator, PartitionedDiffusion, None
]


def has_hooks(*modules: nn.Module) -> bool:
    """Whether any of ``modules`` (or every module, globally) has forward or backward hooks: calls that
    skip ``Module.__call__`` (a fused path) must not run then."""
    from torch.nn.modules import module as torch_module

    global_hooks = (
        "_global_forward_hooks",
        "_global_forward_pre_hooks",
        "_global_backward_hooks",
        "_global_backward_pre_hooks",
    )
    if any(getattr(torch_module, name, None) for name in global_hooks):
        return True
    local_hooks = ("_forward_hooks", "_forward_pre_hooks", "_backward_hooks", "_backward_pre_hooks")
    return any(getattr(module, name, None) for module in modules for name in local_hooks)


class DiffusionLayer(nn.Module):
    r"""``r`` explicit diffusion steps on a graph of samples.

    From "Diffusion Mechanism in Residual Neural Network: Theory and Applications" (eq. 7 and
    Algorithm 1):

    $$
        x_i \leftarrow x_i - \gamma \sum_{j=1}^{N} w_{ij} (x_i - x_j)
        \quad\Longleftrightarrow\quad X \leftarrow (I - \gamma L) X,
        \qquad L = \Lambda - W,
    $$

    i.e. ``X ← (I − γL) X`` repeated ``r`` times; with ``dropout > 0`` each step is followed by
    dropout (the graph variant of Appendix E.2.3, ``x = Dropout(Diffusion(x))``), or preceded by it
    with ``dropout_position="before"`` (``x = Diffusion(Dropout(x))``, the paper's graph code).

    Symbols: ``X`` the features of all ``N`` samples (rows), ``W`` the non-negative weights
    between samples, ``Λ = diag(Σ_j w_ij)``, ``γ`` the step size, ``r`` the number of steps.
    The layer has no parameters.

    The graph is either fixed (given here, precomputed once: the transductive setting) or
    built per batch (``weights`` a callable such as
    :class:`~pdenets.operators.KnnGaussianWeights`, applied to the detached input: Remark 1
    of the paper), or passed to :meth:`forward`. Sparse weights never become dense.

    Args:
        step_size: ``γ > 0``. Must not exceed the stability bound
            :func:`~pdenets.operators.stability_bound` (``1/d`` for degree-``d`` weights).
        num_steps: ``r ≥ 0`` (``0`` makes the layer the identity) (default: ``1``).
        weights: fixed ``(N, N)`` weights ``W`` (dense/sparse tensor, ``(edge_index, edge_weight)``,
            scipy), a callable ``points -> W`` for per-batch graphs, an operator built already (a
            :class:`~pdenets.operators.DiffusionOperator`, or a
            :class:`~pdenets.operators.PartitionedDiffusion`: this process's rows of a graph split over
            processes, the input then this process's rows), or ``None`` (give ``W`` to :meth:`forward`)
            (default: ``None``).
        dropout: dropout rate in ``[0, 1)`` applied at each step (default: ``0.0``).
        dropout_position: ``"after"`` or ``"before"`` each step (default: ``"after"``).
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` for a
            ``γ`` beyond the bound (default: ``True``).
        laplacian: ``"combinatorial"`` (``L = Λ − W``) or ``"normalized"``
            (``L = I − Λ^{-1/2} W Λ^{-1/2}``; ``γ = 1`` on a self-looped graph is a GCN propagation)
            (default: ``"combinatorial"``).
        backward: ``"adjoint"`` (default): the backward pass runs the ``r`` transposed steps
            and redraws each dropout mask from its seed, so training memory does not grow
            with ``r`` (:func:`~pdenets.nn.adjoint_diffusion.adjoint_diffusion`; first-order
            gradients only); ``"autograd"``: autograd through the stored steps (keeps one
            mask per step; needed for double backward or a graph that requires grad). Both
            give the same numbers for the same torch seed (default: ``"adjoint"``).

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds the bound of a fixed graph.
        ValueError: ``γ ≤ 0``, ``r < 0``, a dropout rate outside ``[0, 1)`` or an unknown option.

    Shapes:
        - input: ``(N, *)`` — one row per graph node, any trailing feature shape.
        - output: same as input.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> from pdenets.nn import DiffusionLayer
        >>> from pdenets.operators import KnnGaussianWeights
        >>> layer = DiffusionLayer(step_size=0.5, num_steps=10,
        ...                        weights=KnnGaussianWeights(n_top=8, sigma=1.0, normalization="row"))
        >>> layer(torch.randn(64, 16)).shape
        torch.Size([64, 16])
    """

    def __init__(
        self,
        *,
        step_size: float,
        num_steps: int = 1,
        weights: WeightsArg = None,
        dropout: float = 0.0,
        dropout_position: str = "after",
        check_stability: bool = True,
        laplacian: str = "combinatorial",
        backward: str = "adjoint",
    ):
        super().__init__()
        self.backward = check_choice(backward, "backward", ("adjoint", "autograd"))
        self.laplacian = check_choice(laplacian, "laplacian", LAPLACIANS)
        self.dropout_position = check_choice(dropout_position, "dropout_position", ("after", "before"))
        self.step_size = check_positive(step_size, "step_size")
        self.num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        self.dropout = check_probability(dropout, "dropout")
        self.check_stability = bool(check_stability)
        self.weight_builder: Optional[Callable[[torch.Tensor], torch.Tensor]] = None
        self._fixed: Optional[Union[DiffusionOperator, PartitionedDiffusion]] = None
        self._recent: Optional[tuple] = None  # (weights tensor, version, operator)
        if isinstance(weights, (DiffusionOperator, PartitionedDiffusion)):  # an operator built by the caller
            if (
                abs(weights.step_size - self.step_size) > 1e-12 * self.step_size
                or weights.laplacian != self.laplacian
            ):
                raise ValueError(
                    f"the operator given as weights has step_size={weights.step_size:g} and a "
                    f"{weights.laplacian} Laplacian, the layer step_size={self.step_size:g} and a "
                    f"{self.laplacian} one: build them alike"
                )
            self._fixed = weights
        elif callable(weights) and not isinstance(weights, torch.Tensor):
            self.weight_builder = weights
        elif weights is not None:
            self._fixed = self._build(weights)

    def _build(self, weights: GraphLike) -> DiffusionOperator:
        return DiffusionOperator(
            weights, self.step_size, check_stability=self.check_stability, laplacian=self.laplacian
        )

    def operator_for(
        self, x: torch.Tensor, weights: WeightsArg = None
    ) -> Union[DiffusionOperator, PartitionedDiffusion]:
        """The diffusion operator ``A = I − γL`` this layer applies to ``x``: of ``weights`` when given, else
        of the layer's fixed graph, else of the graph its builder makes from the detached ``x``.

        A layer that keeps composing its own steps from ``A`` (e.g. COIN's learned diffusion time) builds it
        with the layer's step size, Laplacian and stability check. A weights tensor passed again unchanged
        reuses the operator built last time.

        Args:
            x: the features ``(N, *)`` (used only by a per-batch graph builder).
            weights: the graph for this call (default: ``None``: the layer's own).

        Returns:
            The :class:`~pdenets.operators.DiffusionOperator`.

        Raises:
            ValueError: the layer has no graph and none is given.

        Examples:
            >>> import torch
            >>> layer = DiffusionLayer(step_size=0.5, weights=torch.tensor([[0., 1.], [1., 0.]]))
            >>> layer.operator_for(torch.zeros(2, 3)).matrix()
            tensor([[0.5000, 0.5000],
                    [0.5000, 0.5000]])
        """
        if weights is not None:
            if isinstance(weights, torch.Tensor):
                recent = self._recent
                if recent is not None and recent[0] is weights and recent[1] == weights._version:
                    return recent[2]
                operator = self._build(weights)
                self._recent = (weights, weights._version, operator)
                return operator
            return self._build(weights)
        if self._fixed is not None:
            return self._fixed
        if self.weight_builder is not None:
            return self._build(self.weight_builder(x.detach()))
        raise ValueError(
            "DiffusionLayer has no graph: give weights= when constructing it (fixed graph or a "
            "builder such as KnnGaussianWeights) or pass weights to forward()"
        )

    def forward(self, x: torch.Tensor, weights: WeightsArg = None) -> torch.Tensor:
        """Diffuse ``x`` (shape ``(N, *)``); ``weights`` overrides the layer's graph."""
        return self._diffuse(x, weights)

    def read_out(
        self, x: torch.Tensor, readout: nn.Linear, weights: WeightsArg = None, *, consume_input: bool = False
    ) -> torch.Tensor:
        """``readout(self(x, weights))``: the diffused features through a linear layer (a classifier).

        Where the adjoint steps run (training with the default ``backward="adjoint"``), both go into one
        function (:func:`~pdenets.nn.adjoint_diffusion.adjoint_diffusion_readout`) that holds two
        ``N × C`` arrays a pass instead of three; ``consume_input``: the caller made ``x`` and reads it no
        more, so its memory may be one of the two. The numbers are those of the two calls. With hooks on
        this layer or ``readout`` (or global module hooks) the two modules are called as usual.

        Examples:
            >>> import torch
            >>> layer = DiffusionLayer(step_size=0.5, weights=torch.tensor([[0., 1.], [1., 0.]]))
            >>> readout = torch.nn.Linear(3, 2)
            >>> x = torch.randn(2, 3, requires_grad=True)
            >>> torch.allclose(layer.read_out(x, readout), readout(layer(x)))
            True
        """
        if has_hooks(self, readout):
            return readout(self(x, weights))
        return self._diffuse(x, weights, readout, consume_input)

    def _diffuse(
        self,
        x: torch.Tensor,
        weights: WeightsArg,
        readout: Optional[nn.Linear] = None,
        consume_input: bool = False,
    ) -> torch.Tensor:
        """:meth:`forward`, followed by ``readout`` where given."""
        check_dense(x, "input to DiffusionLayer", "DiffusionLayer")
        if self.num_steps == 0:
            out = check_floating(x, "input to DiffusionLayer")
            return out if readout is None else readout(out)
        check_features(x, "input to DiffusionLayer")
        operator = self.operator_for(x, weights)
        dropout = self.dropout if self.training else 0.0
        partitioned_dropout = isinstance(operator, PartitionedDiffusion) and dropout > 0
        if partitioned_dropout and self.backward == "autograd":
            raise ValueError(
                "a partitioned graph's dropout masks are drawn by the adjoint steps: build the layer "
                'with backward="adjoint" (the default)'
            )
        if partitioned_dropout or (
            self.backward == "adjoint"
            and x.requires_grad
            and torch.is_grad_enabled()
            and not operator.requires_grad
        ):
            if readout is not None and x.dim() == 2:
                return adjoint_diffusion_readout(
                    operator,
                    x,
                    self.num_steps,
                    readout.weight,
                    readout.bias,
                    dropout=dropout,
                    dropout_position=self.dropout_position,
                    consume_input=consume_input,
                )
            out = adjoint_diffusion(
                operator, x, self.num_steps, dropout=dropout, dropout_position=self.dropout_position
            )
        elif not (self.dropout > 0 and self.training):
            out = operator.apply(x, self.num_steps)
        else:

            def drop(features: torch.Tensor) -> torch.Tensor:
                return fast_dropout(features, self.dropout, training=True)

            if self.dropout_position == "before":
                out = operator.apply(x, self.num_steps, before_step=drop)
            else:
                out = operator.apply(x, self.num_steps, after_step=drop)
        return out if readout is None else readout(out)

    def reset_parameters(self) -> None:
        """The layer is parameter-free; provided for API symmetry."""

    def extra_repr(self) -> str:
        if self._fixed is not None:
            graph = f"fixed graph N={self._fixed.num_nodes}"
        elif self.weight_builder is not None:
            graph = f"per-batch {type(self.weight_builder).__name__}"
        else:
            graph = "graph given at forward"
        text = f"step_size={self.step_size:g}, num_steps={self.num_steps}, {graph}"
        if self.laplacian != "combinatorial":
            text += f", {self.laplacian} Laplacian"
        if self.dropout:
            text += f", dropout={self.dropout:g} ({self.dropout_position} each step)"
        return text
