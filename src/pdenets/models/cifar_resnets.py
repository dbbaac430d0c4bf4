r"""The ResNet baselines of the PIDE paper's CIFAR tables: ResNet-44 (He et al. 2016a) and PreResNet-20
(2016b).

* :class:`CifarResNet` (v1): a 3×3 stem (16) and three stages of ``n`` basic blocks
  ``conv3×3–BN–ReLU–conv3×3–BN`` + shortcut → ReLU, widths 16/32/64, stride-2 downsampling
  with 1×1 projection shortcuts, global average pooling and a linear layer: depth ``6n + 2``
  (``n = 7``: ResNet-44, 0.66 M parameters for 10 classes).
* :class:`CifarPreResNet` (v2): pre-activation bottlenecks ``BN–ReLU–conv1×1–BN–ReLU–conv3×3–
  BN–ReLU–conv1×1`` (stage outputs 64/128/256, bottleneck widths 16/64/128), depth ``9n + 2``
  (``n = 2``: PreResNet-20, 0.57 M parameters for 10 classes), final BN–ReLU, global pooling
  and a linear layer.

``segmentation=True`` keeps the resolution (no striding) and ends in a 1×1 convolution to
per-pixel logits.

Examples:
    >>> import torch
    >>> net = CifarResNet(depth=8)
    >>> net(torch.randn(2, 3, 32, 32)).shape
    torch.Size([2, 10])
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_positive_int
from .registry import ModelExample, register_model

__all__ = ["CifarResNet", "CifarPreResNet"]


def _conv(in_channels: int, out_channels: int, kernel: int, stride: int = 1) -> nn.Conv2d:
    return nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2, bias=False)


class _Basic(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int):
        super().__init__()
        self.conv1, self.bn1 = _conv(in_channels, out_channels, 3, stride), nn.BatchNorm2d(out_channels)
        self.conv2, self.bn2 = _conv(out_channels, out_channels, 3), nn.BatchNorm2d(out_channels)
        self.shortcut = (
            nn.Identity()
            if stride == 1 and in_channels == out_channels
            else nn.Sequential(_conv(in_channels, out_channels, 1, stride), nn.BatchNorm2d(out_channels))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class _Bottleneck(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, stride: int, middle: int):
        super().__init__()
        self.bn1, self.conv1 = nn.BatchNorm2d(in_channels), _conv(in_channels, middle, 1)
        self.bn2, self.conv2 = nn.BatchNorm2d(middle), _conv(middle, middle, 3, stride)
        self.bn3, self.conv3 = nn.BatchNorm2d(middle), _conv(middle, out_channels, 1)
        self.shortcut = (
            nn.Identity()
            if stride == 1 and in_channels == out_channels
            else _conv(in_channels, out_channels, 1, stride)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return self.conv3(F.relu(self.bn3(out))) + self.shortcut(x)


class _StagedNet(nn.Module):
    def __init__(
        self,
        block,
        blocks_per_stage: int,
        stem: int,
        widths,
        in_channels: int,
        num_classes: int,
        segmentation: bool,
        pre_activation: bool,
        middles=None,
    ):
        super().__init__()
        check_positive_int(num_classes, "num_classes")
        self.stem = (
            nn.Sequential(_conv(in_channels, stem, 3), nn.BatchNorm2d(stem), nn.ReLU())
            if not pre_activation
            else _conv(in_channels, stem, 3)
        )
        layers, channels = [], stem
        for stage, width in enumerate(widths):
            for index in range(blocks_per_stage):
                stride = 2 if stage > 0 and index == 0 and not segmentation else 1
                extra = () if middles is None else (middles[stage],)
                layers.append(block(channels, width, stride, *extra))
                channels = width
        self.body = nn.Sequential(*layers)
        self.final = nn.Sequential(nn.BatchNorm2d(channels), nn.ReLU()) if pre_activation else nn.Identity()
        self.head = (
            nn.Conv2d(channels, num_classes, 1)
            if segmentation
            else nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(channels, num_classes))
        )
        for module in self.modules():
            if isinstance(module, nn.Conv2d):
                nn.init.kaiming_normal_(module.weight, nonlinearity="relu")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.final(self.body(self.stem(x))))

    def l2_penalty(self) -> torch.Tensor:
        # the stem is a convolution: the sum has a term, so it is a tensor
        return cast(
            torch.Tensor, sum(m.weight.square().sum() for m in self.modules() if isinstance(m, nn.Conv2d))
        )


class CifarResNet(_StagedNet):
    """ResNet v1 of depth ``6n + 2`` (module docstring)."""

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 10,
        *,
        depth: int = 44,
        widths=(16, 32, 64),
        segmentation: bool = False,
    ):
        if (depth - 2) % 6 or depth < 8:
            raise ValueError(f"a CIFAR ResNet v1 has depth 6n + 2 (8, 14, 20, ..., 44, ...), got {depth}")
        super().__init__(
            _Basic, (depth - 2) // 6, widths[0], widths, in_channels, num_classes, segmentation, False
        )


class CifarPreResNet(_StagedNet):
    """Pre-activation bottleneck ResNet v2 of depth ``9n + 2`` (module docstring)."""

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 10,
        *,
        depth: int = 20,
        widths=(64, 128, 256),
        middles=(16, 64, 128),
        segmentation: bool = False,
    ):
        if (depth - 2) % 9 or depth < 11:
            raise ValueError(f"a CIFAR PreResNet v2 has depth 9n + 2 (11, 20, 29, ...), got {depth}")
        super().__init__(
            _Bottleneck, (depth - 2) // 9, 16, widths, in_channels, num_classes, segmentation, True, middles
        )


register_model(
    "resnet-44",
    family="image",
    settings={"resnet_depth": "depth", "resnet_widths": "widths"},
    example=lambda num_classes: ModelExample({"depth": 8}, (torch.randn(6, 3, 16, 16),), (6, num_classes)),
    description="ResNet-44 (v1, 16/32/64), the PIDE paper's baseline",
)(CifarResNet)
register_model(
    "preresnet-20",
    family="image",
    example=lambda num_classes: ModelExample({"depth": 11}, (torch.randn(6, 3, 16, 16),), (6, num_classes)),
    description="PreResNet-20 (v2 bottlenecks, 64/128/256)",
)(CifarPreResNet)
