r"""Hamiltonian CNNs with nonlocal PIDE blocks (Bohn, Griebel & Kannan, 2021, §4.1, §4.6).

A 3×3 convolution stem (+ batch norm + ReLU), then ``len(units)`` Units; Unit ``u`` stacks
``units[u]`` :class:`~pdenets.nn.HamiltonianBlock` s of width ``widths[u]`` and, if a nonlocal
operator is chosen, one :class:`~pdenets.nn.NonlocalBlock` after its ``nonlocal_after``-th
block (the 2nd). Between Units: 2×2 average pooling (not for segmentation) and a 1×1
convolution + ReLU widening the channels. Head: 2×2 average pooling, flatten and a linear
layer (``head="pool"``, the paper's CIFAR head), global average pooling + linear
(``"global"``), or a 1×1 convolution to per-pixel class logits (``"segmentation"``).

``units=(6, 6, 6)`` with widths 32/64/112 is *Hamiltonian-74* (each block counts four
convolutions: 12·6 + 2 = 74 layers). Regularizers (eqs. 4.7–4.8): :meth:`HamiltonianNet.l2_penalty`
(``Σ ‖K‖_F²`` over all convolution kernels) and :meth:`HamiltonianNet.smoothness_penalty`
(``(1/h) Σ_j Σ_k ‖K_{j,k} − K_{j+1,k}‖_F²`` over consecutive Hamiltonian blocks of a Unit,
nonlocal blocks skipped), to be weighted by ``α₁/2`` and ``α₂``.

Examples:
    >>> import torch
    >>> net = HamiltonianNet(num_classes=10, units=(1, 1), widths=(8, 16), nonlocal_operator="fractional")
    >>> net(torch.randn(2, 3, 32, 32)).shape
    torch.Size([2, 10])
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, cast

import torch
from torch import nn

from .._checks import check_choice, check_positive, check_positive_int
from ..nn.hamiltonian import HamiltonianBlock
from ..nn.nonlocal_block import NonlocalBlock
from .registry import ModelExample, register_model


def _example(num_classes: int) -> ModelExample:
    """A two-stage network (2 and 1 units, widths 8 and 16) on six 16 × 16 RGB images."""
    return ModelExample(
        {"units": (2, 1), "widths": (8, 16), "image_size": 16}, (torch.randn(6, 3, 16, 16),), (6, num_classes)
    )


__all__ = ["HamiltonianNet", "HEADS"]

HEADS = ("pool", "global", "segmentation")


class HamiltonianNet(nn.Module):
    """Hamiltonian network, optionally with one nonlocal block per Unit (module docstring).

    Args:
        in_channels: image channels (default 3).
        num_classes: outputs (classes, or per-pixel classes for segmentation).
        units: blocks per Unit (default ``(6, 6, 6)``).
        widths: channels per Unit (default ``(32, 64, 112)``); all even.
        step_size: ``h`` of every Hamiltonian and nonlocal block (default 0.06).
        nonlocal_operator: ``None`` or an operator of :class:`~pdenets.nn.NonlocalBlock`.
        nonlocal_after: the nonlocal block follows this many blocks of each Unit (default 2).
        nonlocal_options: more arguments of :class:`~pdenets.nn.NonlocalBlock` (``lam``, ``s``,
            ``subsample``, ``stages``, ``normalizer``, ``path``).
        head: ``"pool"``, ``"global"`` or ``"segmentation"``.
        image_size: input side (default 32), for the ``"pool"`` head's input size.
        batch_norm: batch normalization in the stem and the blocks (default ``True``).
    """

    def __init__(
        self,
        in_channels: int = 3,
        num_classes: int = 10,
        *,
        units: Sequence[int] = (6, 6, 6),
        widths: Sequence[int] = (32, 64, 112),
        step_size: float = 0.06,
        nonlocal_operator: Optional[str] = None,
        nonlocal_after: int = 2,
        nonlocal_options: Optional[Dict[str, Any]] = None,
        head: str = "pool",
        image_size: int = 32,
        batch_norm: bool = True,
    ):
        super().__init__()
        units, widths = list(units), list(widths)
        if not units or len(units) != len(widths):
            raise ValueError(f"units {units} and widths {widths} must be non-empty and of the same length")
        for value in units:
            check_positive_int(value, "blocks per unit")
        for value in widths:
            if check_positive_int(value, "width", minimum=2) % 2:
                raise ValueError(f"widths must be even (Hamiltonian blocks split the channels), got {widths}")
        self.head_kind = check_choice(head, "head", HEADS)
        num_classes = check_positive_int(num_classes, "num_classes")
        self.step_size = check_positive(step_size, "step_size")
        self.units_spec, self.widths = tuple(units), tuple(widths)
        self.nonlocal_operator = nonlocal_operator
        norm = nn.BatchNorm2d if batch_norm else (lambda channels: nn.Identity())
        self.stem = nn.Sequential(
            nn.Conv2d(check_positive_int(in_channels, "in_channels"), widths[0], 3, padding=1),
            norm(widths[0]),
            nn.ReLU(),
        )
        pool = head != "segmentation"
        self.units = nn.ModuleList()
        self.transitions = nn.ModuleList()
        for index, (count, width) in enumerate(zip(units, widths)):
            layers: List[nn.Module] = []
            for block in range(count):
                layers.append(HamiltonianBlock(width, step_size=step_size, batch_norm=batch_norm))
                if nonlocal_operator is not None and block + 1 == min(nonlocal_after, count):
                    layers.append(
                        NonlocalBlock(
                            width,
                            operator=nonlocal_operator,
                            step_size=step_size,
                            batch_norm=batch_norm,
                            **(nonlocal_options or {}),
                        )
                    )
            self.units.append(nn.Sequential(*layers))
            if index + 1 < len(units):
                self.transitions.append(
                    nn.Sequential(
                        nn.AvgPool2d(2) if pool else nn.Identity(),
                        nn.Conv2d(width, widths[index + 1], 1),
                        nn.ReLU(),
                    )
                )
        side = image_size // 2 ** (len(units) - 1) if pool else image_size
        if head == "pool":
            if side < 2:
                raise ValueError(
                    f"image_size={image_size} is too small for {len(units)} units and the pooling head"
                )
            self.head: nn.Module = nn.Sequential(
                nn.AvgPool2d(2), nn.Flatten(), nn.Linear(widths[-1] * (side // 2) ** 2, num_classes)
            )
        elif head == "global":
            self.head = nn.Sequential(
                nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(widths[-1], num_classes)
            )
        else:
            self.head = nn.Conv2d(widths[-1], num_classes, 1)
        for part in (self.stem, self.transitions, self.head):  # the blocks initialize themselves
            for module in part.modules():
                if isinstance(module, nn.Conv2d):
                    nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
                    assert module.bias is not None  # these convolutions are built with a bias
                    nn.init.zeros_(module.bias)

    def hamiltonian_blocks(self) -> List[HamiltonianBlock]:
        return [m for m in self.modules() if isinstance(m, HamiltonianBlock)]

    def nonlocal_blocks(self) -> List[NonlocalBlock]:
        return [m for m in self.modules() if isinstance(m, NonlocalBlock)]

    def features(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for index, unit in enumerate(self.units):
            x = unit(x)
            if index < len(self.transitions):
                x = self.transitions[index](x)
        return x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise ValueError(f"HamiltonianNet expects images (B, C, H, W), got shape {tuple(x.shape)}")
        return self.head(self.features(x))

    def l2_penalty(self) -> torch.Tensor:
        """``Σ ‖K‖_F²`` over every convolution kernel (eq. 4.7 without the factor ``α₁/2``)."""
        # the stem is a convolution: the sum has a term, so it is a tensor
        return cast(
            torch.Tensor, sum(m.weight.square().sum() for m in self.modules() if isinstance(m, nn.Conv2d))
        )

    def smoothness_penalty(self) -> torch.Tensor:
        """``(1/h) Σ_j Σ_k ‖K_{j,k} − K_{j+1,k}‖_F²`` over consecutive Hamiltonian blocks of each Unit (eq.
        4.8 without ``α₂``; ``h Σ ‖ΔK/h‖² = Σ ‖ΔK‖²/h``)."""
        total = cast(nn.Conv2d, self.stem[0]).weight.new_zeros(())
        for unit in self.units:
            blocks = [m for m in cast(nn.Sequential, unit) if isinstance(m, HamiltonianBlock)]
            for first, second in zip(blocks[:-1], blocks[1:]):
                for name in ("conv1", "conv2"):
                    difference = getattr(first, name).weight - getattr(second, name).weight
                    total = total + difference.square().sum() / self.step_size
        return total

    def extra_repr(self) -> str:
        return f"units={self.units_spec}, widths={self.widths}, nonlocal={self.nonlocal_operator!r}"


#: the nonlocal operators with a fractional order ``s``
FRACTIONAL_OPERATORS = ("fractional", "inverse-fractional")


def _variant(operator: Optional[str], s: float = 0.5):
    def factory(
        in_channels: int = 3, num_classes: int = 10, segmentation: bool = False, **kwargs
    ) -> HamiltonianNet:
        if segmentation:
            kwargs["head"] = "segmentation"
        options = dict(kwargs.pop("nonlocal_options", None) or {})
        if operator in FRACTIONAL_OPERATORS:
            options.setdefault("s", s)
        if operator is not None:
            options.setdefault("normalizer", "row-sum" if operator == "diffusion-gaussian" else "count")
        return HamiltonianNet(
            in_channels, num_classes, nonlocal_operator=operator, nonlocal_options=options, **kwargs
        )

    return factory


#: the settings of :class:`~pdenets.models.image_networks.ImageArchitecture` (and of the input) each variant
#: is built from: the Hamiltonian stack; its nonlocal blocks; the order ``s`` of the fractional kernels
HAMILTONIAN_SETTINGS = {
    "units": "units",
    "widths": "widths",
    "step_size": "step_size",
    "image_size": "image_size",
    "head": "head",
}
NONLOCAL_SETTINGS = {
    **HAMILTONIAN_SETTINGS,
    "lam": "nonlocal_options.lam",
    "subsample": "nonlocal_options.subsample",
    "stages": "nonlocal_options.stages",
}
FRACTIONAL_SETTINGS = {**NONLOCAL_SETTINGS, "s": "nonlocal_options.s"}


def _settings(operator: Optional[str]) -> Dict[str, str]:
    """The settings a variant is built from: the Hamiltonian stack, with a nonlocal operator its blocks' too,
    with a fractional one also the order ``s``."""
    if operator is None:
        return HAMILTONIAN_SETTINGS
    return FRACTIONAL_SETTINGS if operator in FRACTIONAL_OPERATORS else NONLOCAL_SETTINGS


#: the registered variants, in this order: name, nonlocal operator (``None``: none), description
VARIANTS = (
    ("hamiltonian-74", None, "Hamiltonian-74 (6-6-6 Verlet blocks, 32/64/112)"),
    (
        "hamiltonian-74-diffusion",
        "diffusion-dot",
        "Hamiltonian-74 + nonlocal diffusion (embedded dot product, 1/N)",
    ),
    (
        "hamiltonian-74-gaussian",
        "diffusion-gaussian",
        "Hamiltonian-74 + nonlocal diffusion (embedded Gaussian, row sums)",
    ),
    ("hamiltonian-74-fractional", "fractional", "Hamiltonian-74 + fractional Laplacian (-Delta)^(1/2)"),
    (
        "hamiltonian-74-inverse-fractional",
        "inverse-fractional",
        "Hamiltonian-74 + inverse fractional Laplacian (-Delta)^(-1/2)",
    ),
    ("hamiltonian-74-log", "log", "Hamiltonian-74 + log kernel (-Delta)^(-1), s = n/2"),
)
for _name, _operator, _description in VARIANTS:
    register_model(
        _name, family="image", settings=_settings(_operator), example=_example, description=_description
    )(_variant(_operator))
