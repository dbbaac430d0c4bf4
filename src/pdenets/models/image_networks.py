"""The registered image networks at a chosen scale, and what is measured on them.

The image models of the registry (``resnet-44``, ``preresnet-20``, ``hamiltonian-74`` and its
nonlocal variants) take their architecture from one set of settings, an :class:`ImageArchitecture`:
:func:`model_architecture` keeps those a network is built with, :func:`build_image_model` builds
it, :func:`count_flops` counts the multiply-adds of one forward pass (:func:`flops_table` for several
networks and scales) and :func:`nonlocal_spectra` gives the eigenvalues of the nonlocal blocks' 1×1
convolutions 𝒦₁, 𝒦₂ (Figs. 7–8 of Bohn, Griebel & Kannan, *Deep Neural Networks and PIDE
discretizations*). :data:`PAPER_ARCHITECTURE` is the paper's full scale (Hamiltonian-74: 6-6-6
blocks of widths 32/64/112; ResNet-44).

Examples:
    >>> import dataclasses, torch
    >>> small = dataclasses.replace(PAPER_ARCHITECTURE, units=(1, 1, 1))
    >>> shape = dict(channels=3, classes=10, size=32, segmentation=False)
    >>> net = build_image_model("hamiltonian-74-diffusion", small, **shape)
    >>> net(torch.zeros(2, 3, 32, 32)).shape, len(nonlocal_spectra(net))
    (torch.Size([2, 10]), 6)
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, cast

import torch

from ..nn.nonlocal_block import NonlocalBlock
from .registry import create_model, model_entry

__all__ = [
    "ImageArchitecture",
    "PAPER_ARCHITECTURE",
    "model_architecture",
    "build_image_model",
    "count_flops",
    "flops_table",
    "NetworkCost",
    "nonlocal_spectra",
]


@dataclass(frozen=True)
class ImageArchitecture:
    """The architecture settings of the image networks; ``None`` where a network does not use one.

    Args:
        units: Hamiltonian blocks per unit.
        widths: Hamiltonian channels per unit.
        step_size: ``h`` of the Hamiltonian and nonlocal blocks.
        lam: ``λ`` of the nonlocal kernels.
        s: the fractional order of ``(−Δ)^s`` and ``(−Δ)^{−s}``.
        subsample: max-pooling of keys and values in the nonlocal blocks.
        stages: stages of each nonlocal block.
        resnet_depth: the depth of ResNet v1 (``6n + 2``).
        resnet_widths: the stage widths of ResNet v1.
    """

    units: Optional[Tuple[int, ...]] = None
    widths: Optional[Tuple[int, ...]] = None
    step_size: Optional[float] = None
    lam: Optional[float] = None
    s: Optional[float] = None
    subsample: Optional[int] = None
    stages: Optional[int] = None
    resnet_depth: Optional[int] = None
    resnet_widths: Optional[Tuple[int, ...]] = None


#: the architecture of the paper's full-scale networks (CIFAR-10, Table 4)
PAPER_ARCHITECTURE = ImageArchitecture(
    units=(6, 6, 6),
    widths=(32, 64, 112),
    step_size=0.06,
    lam=0.1,
    s=0.5,
    subsample=2,
    stages=2,
    resnet_depth=44,
    resnet_widths=(16, 32, 64),
)


def model_architecture(name: str, architecture: ImageArchitecture) -> ImageArchitecture:
    """The settings of ``architecture`` that network ``name`` is built with (and so its job key holds).

    Each image model declares them in the registry (:attr:`~pdenets.models.registry.ModelEntry.settings`):
    a Hamiltonian network uses ``units``, ``widths`` and ``step_size``; its nonlocal variants also ``lam``,
    ``subsample`` and ``stages`` (and ``s``, the fractional ones); ResNet v1 ``resnet_depth`` and
    ``resnet_widths``; PreResNet none.

    Args:
        name: a registered image model.
        architecture: the architecture settings.

    Returns:
        ``architecture`` with ``None`` for the settings the network does not use.

    Examples:
        >>> used = model_architecture("resnet-44", PAPER_ARCHITECTURE)
        >>> used.resnet_depth, used.resnet_widths, used.units
        (44, (16, 32, 64), None)
        >>> model_architecture("hamiltonian-74-fractional", PAPER_ARCHITECTURE).s
        0.5
    """
    declared = model_entry(name).settings
    return ImageArchitecture(
        **{
            item.name: getattr(architecture, item.name)
            for item in fields(architecture)
            if item.name in declared
        }
    )


def build_image_model(
    name: str,
    architecture: ImageArchitecture,
    *,
    channels: int,
    classes: int,
    size: int,
    segmentation: bool,
    head: str = "pool",
) -> torch.nn.Module:
    """A registered image model built with the settings of ``architecture`` it declares.

    Every image factory takes ``in_channels``, ``num_classes`` and ``segmentation``; the rest (the
    architecture, the image side ``image_size``, the ``head``) it receives where its registry entry declares
    the setting (:meth:`~pdenets.models.registry.ModelEntry.settings_arguments`).

    Args:
        name: a registered image model.
        architecture: the architecture settings (at least those :func:`model_architecture` keeps).
        channels: input channels.
        classes: output classes (per pixel when segmenting).
        size: the side of the input images (for the nonlocal blocks' kernels).
        segmentation: end in per-pixel class logits at full resolution.
        head: the head of the networks that declare one (Hamiltonian) when not segmenting (``"pool"`` or
            ``"global"``).

    Returns:
        The network, freshly initialized from the current torch seed.
    """
    values: Dict[str, Any] = {
        item.name: _as_tuple(getattr(architecture, item.name)) for item in fields(architecture)
    }
    values.update(image_size=size, head=head)
    return create_model(
        name,
        in_channels=channels,
        num_classes=classes,
        segmentation=segmentation,
        **model_entry(name).settings_arguments(values),
    )


def _as_tuple(value: Any) -> Any:
    """A list of widths or units as a tuple (what the factories take); anything else unchanged."""
    return tuple(value) if isinstance(value, list) else value


def count_flops(model: torch.nn.Module, shape: Tuple[int, ...]) -> int:
    """Multiply-adds of one forward pass at batch size 1 (``FlopCounterMode`` counts 2 flops per
    multiply-add).

    Args:
        model: the network (put in evaluation mode).
        shape: the shape of one input, without the batch dimension.

    Returns:
        The number of multiply-adds.

    Examples:
        >>> count_flops(torch.nn.Linear(3, 2, bias=False), (3,))
        6
    """
    from torch.utils.flop_counter import FlopCounterMode

    model.eval()
    device = next((p.device for p in model.parameters()), torch.device("cpu"))
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.zeros(1, *shape, device=device))
    return counter.get_total_flops() // 2


@dataclass(frozen=True)
class NetworkCost:
    """The cost of one network: multiply-adds of one forward pass and parameters.

    Args:
        mflops: millions of multiply-adds of one image at batch size 1.
        parameters: parameters of the network.
    """

    mflops: float
    parameters: int


def flops_table(
    models: Sequence[str], scales: Mapping[str, ImageArchitecture]
) -> Dict[str, Dict[str, NetworkCost]]:
    """Multiply-adds and parameters of ``models`` built at every scale of ``scales`` for 32 × 32 RGB images.

    Args:
        models: registered image models.
        scales: a name (e.g. ``"paper scale"``) → the architecture the models are built with.

    Returns:
        Scale → model → its :class:`NetworkCost`.
    """
    out: Dict[str, Dict[str, NetworkCost]] = {}
    for label, architecture in scales.items():
        for model in models:
            network = build_image_model(
                model, architecture, channels=3, classes=10, size=32, segmentation=False
            )
            out.setdefault(label, {})[model] = NetworkCost(
                count_flops(network, (3, 32, 32)) / 1e6, sum(p.numel() for p in network.parameters())
            )
    return out


def nonlocal_spectra(model: torch.nn.Module) -> List[Dict[str, Any]]:
    """Eigenvalues of ``𝒦₁, 𝒦₂`` (the 1×1 convolutions of each nonlocal block) and of their symmetric parts.

    Args:
        model: a network; its :class:`~pdenets.nn.NonlocalBlock` s are taken in order.

    Returns:
        One dict per block and stage: ``unit`` and ``stage`` (from 1), the ``real`` and ``imag`` parts
        of the eigenvalues of 𝒦, the eigenvalues of its ``symmetric`` part, and the fractions of
        each that are positive (``positive_fraction``, ``symmetric_positive_fraction``).
    """
    out = []
    for unit, block in enumerate(m for m in model.modules() if isinstance(m, NonlocalBlock)):
        for stage, outer in enumerate(block.outer):
            kernel = cast(torch.nn.Conv2d, cast(torch.nn.Sequential, outer)[0])  # 𝒦 of the stage, 1×1
            matrix = kernel.weight.detach()[:, :, 0, 0].double()
            eigenvalues = torch.linalg.eigvals(matrix)
            symmetric = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
            out.append(
                {
                    "unit": unit + 1,
                    "stage": stage + 1,
                    "real": eigenvalues.real.tolist(),
                    "imag": eigenvalues.imag.tolist(),
                    "symmetric": symmetric.tolist(),
                    "positive_fraction": float((eigenvalues.real > 0).double().mean()),
                    "symmetric_positive_fraction": float((symmetric > 0).double().mean()),
                }
            )
    return out
