"""The registered image networks at a chosen scale, and what is measured on them.

The image models of the registry (``resnet-44``, ``preresnet-20``, ``hamiltonian-74`` and its
nonlocal variants) take their architecture from one set of settings (``units``, ``widths``,
``step_size``, ``lam``, ``s``, ``subsample``, ``stages``, ``resnet_depth``, ``resnet_widths``):
:func:`model_architecture` keeps those a network is built with, :func:`build_image_model` builds
it, :func:`count_flops` counts the multiply-adds of one forward pass and :func:`nonlocal_spectra`
gives the eigenvalues of the nonlocal blocks' 1×1 convolutions 𝒦₁, 𝒦₂ (Figs. 7–8 of Bohn, Griebel &
Kannan, *Deep Neural Networks and PIDE discretizations*). :data:`PAPER_ARCHITECTURE` is the
paper's full scale (Hamiltonian-74: 6-6-6 blocks of widths 32/64/112; ResNet-44).

Example:
    >>> import torch
    >>> net = build_image_model("hamiltonian-74-diffusion", {**PAPER_ARCHITECTURE, "units": (1, 1, 1)},
    ...                         channels=3, classes=10, size=32, segmentation=False)
    >>> net(torch.zeros(2, 3, 32, 32)).shape, len(nonlocal_spectra(net))
    (torch.Size([2, 10]), 6)
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Tuple

import torch

from ..nn.nonlocal_block import NonlocalBlock
from .registry import create_model

__all__ = ["PAPER_ARCHITECTURE", "model_architecture", "build_image_model", "count_flops", "nonlocal_spectra"]

#: the architecture settings of the paper's full-scale networks (CIFAR-10, Table 4)
PAPER_ARCHITECTURE = {"units": (6, 6, 6), "widths": (32, 64, 112), "step_size": 0.06, "lam": 0.1, "s": 0.5,
                      "subsample": 2, "stages": 2, "resnet_depth": 44, "resnet_widths": (16, 32, 64)}


def model_architecture(name: str, architecture: Mapping[str, Any]) -> Dict[str, Any]:
    """The settings of ``architecture`` that network ``name`` is built with (and so its job key holds).

    Args:
        name: a registered image model.
        architecture: every architecture setting (the keys of :data:`PAPER_ARCHITECTURE`).

    Returns:
        The settings the network uses: ``units``, ``widths`` and ``step_size`` for Hamiltonian
        networks, with ``lam``, ``subsample``, ``stages`` (and ``s`` for the fractional kernels) for
        the nonlocal variants; ``resnet_depth`` and ``resnet_widths`` for ResNet v1; none for the
        PreResNet.

    Examples:
        >>> model_architecture("resnet-44", PAPER_ARCHITECTURE)
        {'resnet_depth': 44, 'resnet_widths': (16, 32, 64)}
    """
    if name.startswith("hamiltonian"):
        used = ["units", "widths", "step_size"]
        if name != "hamiltonian-74":  # the nonlocal variants
            used += ["lam", "subsample", "stages"] + (["s"] if name.endswith("fractional") else [])
    else:
        used = ["resnet_depth", "resnet_widths"] if name == "resnet-44" else []
    return {key: architecture[key] for key in used}


def build_image_model(name: str, architecture: Mapping[str, Any], *, channels: int, classes: int, size: int,
                      segmentation: bool, head: str = "pool") -> torch.nn.Module:
    """A registered image model built with the settings of ``architecture`` it uses.

    Args:
        name: a registered image model.
        architecture: the architecture settings (at least those :func:`model_architecture` keeps).
        channels: input channels.
        classes: output classes (per pixel when segmenting).
        size: the side of the input images (for the nonlocal blocks' kernels).
        segmentation: end in per-pixel class logits at full resolution.
        head: the head of Hamiltonian networks when not segmenting (``"pool"`` or ``"global"``).

    Returns:
        The network, freshly initialized from the current torch seed.
    """
    used = model_architecture(name, architecture)
    if name.startswith("hamiltonian"):
        options = {key: used[key] for key in ("subsample", "stages", "lam", "s") if key in used}
        return create_model(name, in_channels=channels, num_classes=classes, units=tuple(used["units"]),
                            widths=tuple(used["widths"]), step_size=used["step_size"],
                            image_size=size, head="segmentation" if segmentation else head,
                            nonlocal_options=options)
    if name == "resnet-44":
        return create_model(name, in_channels=channels, num_classes=classes, depth=used["resnet_depth"],
                            widths=tuple(used["resnet_widths"]), segmentation=segmentation)
    return create_model(name, in_channels=channels, num_classes=classes, segmentation=segmentation)


def count_flops(model: torch.nn.Module, shape: Tuple[int, ...]) -> int:
    """Multiply-adds of one forward pass at batch size 1 (``FlopCounterMode`` counts 2 flops per multiply-add).

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
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.zeros(1, *shape))
    return counter.get_total_flops() // 2


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
            matrix = outer[0].weight.detach()[:, :, 0, 0].double()
            eigenvalues = torch.linalg.eigvals(matrix)
            symmetric = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
            out.append({"unit": unit + 1, "stage": stage + 1, "real": eigenvalues.real.tolist(),
                        "imag": eigenvalues.imag.tolist(), "symmetric": symmetric.tolist(),
                        "positive_fraction": float((eigenvalues.real > 0).double().mean()),
                        "symmetric_positive_fraction": float((symmetric > 0).double().mean())})
    return out
