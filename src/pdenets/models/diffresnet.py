r"""Diffusion residual network (Diff-ResNet) of "Diffusion Mechanism in Residual Neural Network: Theory and
Applications"."""

from __future__ import annotations

from typing import Optional, Protocol, cast

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_floating, check_positive_int
from ..nn.convection import ConvectionBlock
from ..nn.diffusion import DiffusionLayer, WeightsArg, has_hooks
from .registry import ModelExample, register_model


def _example(num_classes: int, num_steps: int = 2) -> ModelExample:
    """Six samples on a ring graph, five features, two diffusion steps (or ``num_steps``)."""
    ring = torch.roll(torch.eye(6), 1, 0)
    settings = {
        "in_features": 5,
        "block": "graph",
        "num_steps": num_steps,
        "step_size": 0.25,
        "weights": ring + ring.T,
    }
    return ModelExample(settings, (torch.randn(6, 5),), (6, num_classes))


__all__ = ["DiffResNet", "no_diff_resnet"]


class _Resettable(Protocol):
    def reset_parameters(self) -> None: ...


@register_model(
    "diff-resnet",
    family="diffusion",
    graph_input="constructor",
    example=_example,
    description="Diff-ResNet: residual blocks, each followed by r diffusion steps on a graph of samples",
)
class DiffResNet(nn.Module):
    r"""Convection–diffusion network: ``s`` residual blocks, each followed by ``r`` diffusion steps.

    Lie–Trotter splitting of ``dx_i/dt = f(x_i, θ(t)) − γ Σ_j w_ij (x_i − x_j)`` ("Diffusion Mechanism in
    Residual Neural Network: Theory and Applications", eq. 4, 6, 7; Algorithm 1):

    $$
        x^{k+1/2} = x^k + f(x^k, θ^k), \qquad
        x^{k+1} = (I - \gamma L)^r x^{k+1/2}, \qquad
        y = \mathrm{FC}(x^s).
    $$

    Symbols: ``x^k`` the ``(N, width)`` features of all samples after block ``k``, ``f(·, θ^k)`` the residual
    branch of block ``k``, ``L = Λ − W`` the graph Laplacian of the sample weights ``w_ij`` (``Λ`` their
    degree matrix), ``γ`` the step size, ``r`` the diffusion steps per block, ``s`` the number of blocks and
    ``FC`` the linear classifier. With ``r = 0`` this is a plain ResNet ("No-Diff-ResNet").

    Args:
        in_features: input size ``d``.
        num_classes: classifier outputs ``C``.
        num_blocks: ``s`` convection blocks (default 1).
        num_steps: ``r`` diffusion steps after each block (default 10).
        step_size: ``γ`` (default 0.5).
        hidden_features: if given, a linear map ``d → hidden`` precedes the blocks, which
            then work in that width (default: ``None``, the blocks work in the input space).
        block: ``"mlp"`` (``x + FC2 ReLU FC1 x``) or ``"graph"`` (``x + ReLU FC1 x``) (default: ``"mlp"``).
        dropout: dropout at each diffusion step (graph variant), default 0.
        dropout_position: ``"after"`` each step (paper text, default) or ``"before"`` (paper code).
        weights: the sample graph: fixed ``W``, a builder such as
            :class:`~pdenets.operators.KnnGaussianWeights` (built once per forward from
            the input), or ``None`` (pass ``weights`` to :meth:`forward`) (default: ``None``).
        check_stability: refuse ``γ`` beyond the stability bound (default: ``True``).

    Raises:
        TypeError: if a size is not an integer.
        ValueError: if a size is not positive, ``step_size ≤ 0``, ``num_steps < 0``, or ``block``,
            ``dropout`` or ``dropout_position`` is invalid.

    Shapes:
        - input: ``(N, d)`` — all samples of the graph (labelled and unlabelled); dense or
          torch sparse (sparse bag-of-words features make the first block cheap).
        - output: ``(N, num_classes)`` logits.

    Without dropout (evaluation), the last diffusion is linear and commutes with the
    classifier: ``FC((I − γL)^r h) = (I − γL)^r (h Wᵀ) + b`` (rows of ``I − γL`` sum to 1),
    so the ``r`` steps run on ``num_classes`` columns instead of ``width``.

    Examples:
        >>> import torch
        >>> from pdenets.operators import KnnGaussianWeights
        >>> net = DiffResNet(2, 2, num_steps=60, step_size=1.0,
        ...                  weights=KnnGaussianWeights(n_top=25, sigma=0.5, include_self=True,
        ...                                             normalization="row"))
        >>> sum(p.numel() for p in net.parameters())      # the paper's 18 parameters
        18
        >>> net(torch.randn(100, 2)).shape
        torch.Size([100, 2])
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        *,
        num_blocks: int = 1,
        num_steps: int = 10,
        step_size: float = 0.5,
        hidden_features: Optional[int] = None,
        block: str = "mlp",
        dropout: float = 0.0,
        dropout_position: str = "after",
        weights: WeightsArg = None,
        check_stability: bool = True,
    ):
        super().__init__()
        in_features = check_positive_int(in_features, "in_features")
        num_classes = check_positive_int(num_classes, "num_classes")
        num_blocks = check_positive_int(num_blocks, "num_blocks")
        if hidden_features is not None:
            hidden_features = check_positive_int(hidden_features, "hidden_features")
        width = hidden_features or in_features
        self.in_features = in_features
        self.num_classes = num_classes
        self.num_blocks = num_blocks
        self.input_map = nn.Linear(in_features, width) if hidden_features else None
        self.blocks = nn.ModuleList(ConvectionBlock(width, variant=block) for _ in range(num_blocks))
        self.diffusion = DiffusionLayer(
            step_size=step_size,
            num_steps=num_steps,
            weights=weights,
            dropout=dropout,
            dropout_position=dropout_position,
            check_stability=check_stability,
        )
        self.classifier = nn.Linear(width, num_classes)

    @property
    def num_steps(self) -> int:
        return self.diffusion.num_steps

    @property
    def step_size(self) -> float:
        return self.diffusion.step_size

    def reset_parameters(self) -> None:
        for module in self.modules():
            if module is not self and hasattr(module, "reset_parameters"):
                cast(_Resettable, module).reset_parameters()

    def _convect(self, x: torch.Tensor, weights: WeightsArg):
        """Everything up to the last block's convection output, and the graph to use."""
        check_floating(x, "input to DiffResNet")
        if x.dim() != 2 or x.shape[1] != self.in_features:
            raise ValueError(f"expected input of shape (N, {self.in_features}), got {tuple(x.shape)}")
        parameters = self.classifier.weight.dtype
        if x.dtype != parameters:  # both are float32 or float64 (check_floating)
            model_call, input_call = ("double", "float") if x.dtype == torch.float64 else ("float", "double")
            raise TypeError(
                f"input to DiffResNet is {x.dtype} but the model's parameters are {parameters}: call "
                f"model.{model_call}() or pass x.{input_call}()"
            )
        if weights is None and self.diffusion.weight_builder is not None and self.num_steps > 0:
            weights = self.diffusion.weight_builder(x.detach() if x.layout == torch.strided else x.to_dense())
        out = self.input_map(x) if self.input_map is not None else x
        for block in self.blocks[:-1]:
            out = self.diffusion(block(out), weights)
        return self.blocks[-1](out), weights

    def features(self, x: torch.Tensor, weights: WeightsArg = None) -> torch.Tensor:
        """Features before the classifier, shape ``(N, width)``."""
        out, weights = self._convect(x, weights)
        return self.diffusion(out, weights)

    def diffusion_scores(self, x: torch.Tensor, weights: WeightsArg = None):
        """What the evaluation logits are a sum of (:mod:`pdenets.analysis.explanations`): every sample's
        class scores before the last diffusion ``s = h Wᵀ`` ``(N, C)``, the classifier's bias ``(C,)``, the
        diffusion operator (``None`` without steps) and its steps ``r``; the logits are
        ``A^r s + b``. Computed in evaluation mode without gradients (the mode is restored).

        Examples:
            >>> import torch
            >>> net = DiffResNet(5, 3, num_steps=2, block="graph", weights=torch.ones(6, 6) / 6)
            >>> scores, bias, operator, steps = net.diffusion_scores(torch.randn(6, 5))
            >>> scores.shape, steps
            (torch.Size([6, 3]), 2)
        """
        training = self.training
        self.eval()
        try:
            with torch.no_grad():
                out, weights = self._convect(x, weights)
                scores = F.linear(out, self.classifier.weight)
                operator = self.diffusion.operator_for(out, weights) if self.num_steps > 0 else None
        finally:
            self.train(training)
        return scores, self.classifier.bias.detach(), operator, self.num_steps

    def forward(self, x: torch.Tensor, weights: WeightsArg = None) -> torch.Tensor:
        out, weights = self._convect(x, weights)
        linear_diffusion = self.num_steps > 0 and (self.diffusion.dropout == 0 or not self.training)
        if linear_diffusion and self.num_classes < out.shape[1]:
            return self.diffusion(F.linear(out, self.classifier.weight), weights) + self.classifier.bias
        if has_hooks(self.blocks[-1]):  # a hook saw the last block's output: it may keep it
            return self.classifier(self.diffusion(out, weights))
        # the last block's output is the network's own, read by nothing else: the steps may reuse it
        return self.diffusion.read_out(out, self.classifier, weights, consume_input=True)

    def extra_repr(self) -> str:
        return f"num_blocks={self.num_blocks}, num_steps={self.num_steps}, step_size={self.step_size:g}"


@register_model(
    "no-diff-resnet",
    family="diffusion",
    graph_input="constructor",
    fixed={"num_steps": 0},
    example=lambda num_classes: _example(num_classes, num_steps=0),
    description="the same network without diffusion (r = 0): the paper's No-Diff-ResNet",
)
def no_diff_resnet(in_features: int, num_classes: int, **kwargs) -> DiffResNet:
    """The same network without diffusion (``r = 0``): the paper's "No-Diff-ResNet" / ResNet.

    ``x^{k+1} = x^k + f(x^k, θ^k)``, ``y = FC(x^s)``: the :class:`DiffResNet` with ``num_steps = 0``, the
    baseline of "Diffusion Mechanism in Residual Neural Network: Theory and Applications". Registered as
    ``"no-diff-resnet"``. Further keyword arguments (``num_blocks``, ``hidden_features``, ``block``, …) go to
    :class:`DiffResNet`; ``num_steps`` is always ``0`` (another value is refused) and ``step_size`` defaults
    to ``1.0`` (unused).

    Args:
        in_features: input size ``d``, the input ``(N, d)``.
        num_classes: classifier outputs ``C``, the output ``(N, C)``.

    Returns:
        A :class:`DiffResNet` without diffusion.

    Raises:
        ValueError: as :class:`DiffResNet`, or ``num_steps`` other than ``0``.

    Examples:
        >>> import torch
        >>> net = no_diff_resnet(2, 2)
        >>> net.num_steps, sum(p.numel() for p in net.parameters())
        (0, 18)
        >>> net(torch.randn(10, 2)).shape
        torch.Size([10, 2])
    """
    if kwargs.get("num_steps", 0) != 0:
        raise ValueError(
            f"no-diff-resnet has no diffusion steps (num_steps=0), got num_steps={kwargs['num_steps']}"
        )
    kwargs = {**kwargs, "num_steps": 0}
    kwargs.setdefault("step_size", 1.0)
    return DiffResNet(in_features, num_classes, **kwargs)
