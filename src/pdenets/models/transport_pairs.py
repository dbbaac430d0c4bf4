r"""Plain networks and ResNets that differ only by the identity (“A Mathematical Principle of Deep Learning:
Learn the Geodesic Curve in the Wasserstein Space”): the geodesic-analysis pairs.

Every block computes ``v(x) = W₂ σ(W₁ σ(x))`` (affine maps or 3×3 convolutions); the ResNet block returns
``x + v(x)``, the plain block ``v(x)``. The two networks of a pair have the same parameters, so a
``state_dict`` of one loads into the other and their blocks' outputs differ by exactly ``x``.

* MLP (MNIST): ``784 → 1000``, 5 blocks in ``R^1000``, ``→ 10``;
* CNN, ``K = 1``: a stride-2 convolution ``3×32×32 → 32×16×16``, 10 blocks, ``→ classes``;
* CNN, ``K = 4``: stages ``64×32×32, 128×16×16, 256×8×8, 512×4×4`` of 5 blocks, a stride-2 1×1
  convolution between stages, ``→ classes``.

The CNNs end in one linear map of the flattened last representation (``head="flatten"``, the papers'
"decrease the dimension from 32×16×16 to 10") or of its channel means (``head="pool"``).

Initialization (``init``): ``"kaiming"`` draws every weight from ``N(0, 2 / fan_in)`` (He et al., the
variance-preserving choice for a ReLU chain) with zero biases; ``"torch"`` keeps PyTorch's default
(``kaiming_uniform(a=√5)``, variance ``1 / (3 fan_in)``); ``"auto"`` (default) takes ``"kaiming"`` for a plain
network and ``"torch"`` for a ResNet — the choice under which each keeps the scale of its signal:
under ``"torch"`` a plain network's signal shrinks about 6× per block (the plain MLP stays at 10.8 % after
one MNIST epoch vs 75 % with ``"kaiming"``), while under ``"kaiming"`` every residual branch roughly
doubles the variance (the K = 4 ResNet, 20 blocks, overflows in its first epoch). The architectures
are identical either way: a ``state_dict`` of one member loads into the other.

The blocks are :class:`TransportBlock` modules, so ``record_tracks(model, data, blocks=TransportBlock)``
records every block's tracks, grouped into stages of equal width.
"""

from __future__ import annotations

from typing import Callable, List, Sequence, Tuple, Union

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_positive_int
from .registry import ModelExample, register_model


def _mlp_example(num_classes: int) -> ModelExample:
    """A pair member of width 7 with two blocks on six points of R^5."""
    return ModelExample(
        {"in_features": 5, "width": 7, "num_blocks": 2}, (torch.randn(6, 5),), (6, num_classes)
    )


def _cnn_example(widths: Tuple[int, ...]) -> Callable[[int], ModelExample]:
    def example(num_classes: int) -> ModelExample:
        """A small CNN pair member (two blocks per stage) on six 8 × 8 RGB images."""
        return ModelExample(
            {"in_features": 3, "widths": widths, "blocks": 2, "image_size": 8},
            (torch.randn(6, 3, 8, 8),),
            (6, num_classes),
        )

    return example


__all__ = ["TransportBlock", "TransportMLP", "TransportCNN", "INITS", "initialize"]

INITS = ("auto", "kaiming", "torch")


def initialize(model: nn.Module, init: str, *, residual: bool) -> nn.Module:
    """Re-draw the weights of every linear and convolutional layer: ``"auto"``, ``"kaiming"`` or ``"torch"``;
    head: ``"flatten"`` or ``"pool"``; image_size: input side (for the flattened head's width)."""
    if init not in INITS:
        raise ValueError(f"init must be one of {INITS}, got {init!r}")
    if init == "auto":
        init = "torch" if residual else "kaiming"
    if init == "kaiming":
        for module in model.modules():
            if isinstance(module, (nn.Linear, nn.Conv2d)):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                assert module.bias is not None  # the transport networks' layers all have a bias
                nn.init.zeros_(module.bias)
    return model


class TransportBlock(nn.Module):
    r"""``x + W₂ σ(W₁ σ(x))`` (``residual=True``) or ``W₂ σ(W₁ σ(x))``; affine (``(N, d)``) or 3×3
    convolutions.

    Examples:
        >>> import torch
        >>> plain, res = TransportBlock(4, residual=False), TransportBlock(4, residual=True)
        >>> res.load_state_dict(plain.state_dict())
        <All keys matched successfully>
        >>> x = torch.randn(3, 4)
        >>> torch.allclose(res(x) - plain(x), x)
        True
    """

    def __init__(self, width: int, *, residual: bool, convolutional: bool = False):
        super().__init__()
        width = check_positive_int(width, "width")
        self.residual = bool(residual)
        self.first: Union[nn.Conv2d, nn.Linear]
        self.second: Union[nn.Conv2d, nn.Linear]
        if convolutional:
            self.first = nn.Conv2d(width, width, 3, padding=1)
            self.second = nn.Conv2d(width, width, 3, padding=1)
        else:
            self.first = nn.Linear(width, width)
            self.second = nn.Linear(width, width)

    def velocity(self, x: torch.Tensor) -> torch.Tensor:
        """``v(x) = W₂ σ(W₁ σ(x))``."""
        return self.second(F.relu(self.first(F.relu(x))))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.velocity(x) if self.residual else self.velocity(x)

    def extra_repr(self) -> str:
        return f"residual={self.residual}"


class TransportMLP(nn.Module):
    """``in → width``, ``num_blocks`` blocks in ``R^width``, ``→ num_classes`` (paper: 784 → 1000, 5 blocks,
    → 10)."""

    def __init__(
        self,
        in_features: int = 784,
        num_classes: int = 10,
        *,
        width: int = 1000,
        num_blocks: int = 5,
        residual: bool = True,
        init: str = "auto",
    ):
        super().__init__()
        self.input = nn.Linear(
            check_positive_int(in_features, "in_features"), check_positive_int(width, "width")
        )
        self.blocks = nn.Sequential(
            *(
                TransportBlock(width, residual=residual)
                for _ in range(check_positive_int(num_blocks, "num_blocks"))
            )
        )
        self.head = nn.Linear(width, check_positive_int(num_classes, "num_classes"))
        initialize(self, init, residual=residual)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.blocks(self.input(x.flatten(1))))


class TransportCNN(nn.Module):
    """Stages of convolutional blocks with stride-2 1×1 projections between them, global pooling, a linear
    head.

    Args:
        widths: channels per stage (``K = len(widths)``).
        blocks: blocks per stage.
        stem_stride: stride of the 3×3 stem convolution (2 for ``K = 1``: 32×32 → 16×16; 1 for ``K = 4``).
        init: ``"auto"``, ``"kaiming"`` or ``"torch"``.
        head: ``"flatten"`` or ``"pool"``.
        image_size: input side (for the flattened head's width).
    """

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 10,
        *,
        widths: Sequence[int] = (32,),
        blocks: int = 10,
        stem_stride: int = 2,
        residual: bool = True,
        init: str = "auto",
        head: str = "flatten",
        image_size: int = 32,
    ):
        super().__init__()
        widths = [check_positive_int(w, "widths") for w in widths]
        if not widths:
            raise ValueError("widths must name at least one stage")
        blocks = check_positive_int(blocks, "blocks")
        self.stem = nn.Conv2d(
            check_positive_int(in_channels, "in_channels"),
            widths[0],
            3,
            stride=check_positive_int(stem_stride, "stem_stride"),
            padding=1,
        )
        layers: List[nn.Module] = []
        for index, width in enumerate(widths):
            if index:
                layers.append(nn.Conv2d(widths[index - 1], width, 1, stride=2))
            layers.extend(TransportBlock(width, residual=residual, convolutional=True) for _ in range(blocks))
        self.body = nn.Sequential(*layers)
        if head not in ("flatten", "pool"):
            raise ValueError(f"head must be 'flatten' or 'pool', got {head!r}")
        self.pool = head == "pool"
        side = -(-check_positive_int(image_size, "image_size") // stem_stride)
        for _ in widths[1:]:
            side = -(-side // 2)
        features = widths[-1] if self.pool else widths[-1] * side * side
        self.head = nn.Linear(features, check_positive_int(num_classes, "num_classes"))
        initialize(self, init, residual=residual)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = self.body(self.stem(x))
        return self.head(features.mean(dim=(2, 3)) if self.pool else features.flatten(1))


def _mlp(residual: bool) -> Callable[..., TransportMLP]:
    def factory(in_features: int = 784, num_classes: int = 10, **kwargs) -> TransportMLP:
        return TransportMLP(in_features, num_classes, residual=residual, **kwargs)

    return factory


def _cnn(
    residual: bool, widths: Tuple[int, ...], blocks: int, stem_stride: int
) -> Callable[..., TransportCNN]:
    def factory(in_features: int = 3, num_classes: int = 10, **kwargs) -> TransportCNN:
        options = {"widths": widths, "blocks": blocks, "stem_stride": stem_stride, **kwargs}
        return TransportCNN(in_features, num_classes, residual=residual, **options)

    return factory


for _residual, _prefix in ((True, "resnet"), (False, "plain")):
    register_model(
        f"{_prefix}-mlp",
        family="transport",
        example=_mlp_example,
        description=f"{_prefix} MLP pair member: 784 → 1000, 5 blocks, → 10 (geodesic analysis)",
    )(_mlp(_residual))
    register_model(
        f"{_prefix}-cnn-k1",
        family="transport",
        example=_cnn_example((4,)),
        description=f"{_prefix} CNN pair member, K = 1: 32×16×16, 10 blocks",
    )(_cnn(_residual, (32,), 10, 2))
    register_model(
        f"{_prefix}-cnn-k4",
        family="transport",
        example=_cnn_example((4, 8)),
        description=f"{_prefix} CNN pair member, K = 4: 64/128/256/512 stages of 5 blocks",
    )(_cnn(_residual, (64, 128, 256, 512), 5, 1))
