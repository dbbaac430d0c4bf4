"""The receptive field of a convolutional network, measured: which input pixels one output position depends
on.

For a network ``F`` that maps images ``(1, C, H, W)`` to feature maps ``(1, C', H', W')``, the
receptive field of the output position ``(i, j)`` is the support of

    g(p, q) = Σ_{c, k} |∂F(x)_{c', i, j} / ∂x_{c, p, q}|     (summed over the output channels c')

taken over a few random inputs ``x`` (one input can hide a pixel behind an inactive ReLU). The
network runs in eval mode on a float64 copy: batch normalization then uses its running
statistics, as at test time (in train mode its batch statistics couple every pixel to every
other). A local CNN has a window of a few dozen pixels; a nonlocal block makes it the whole image.

Examples:
    >>> import torch
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(1, 4, 3, padding=1), torch.nn.ReLU(),
    ...                           torch.nn.Conv2d(4, 4, 3, padding=1))
    >>> receptive_field(net, (1, 32, 32))
    (5, 5)
"""

from __future__ import annotations

import copy
from typing import Callable, Optional, Sequence, Tuple

import torch
from torch import nn

__all__ = ["receptive_field", "receptive_field_mask"]


def receptive_field_mask(
    model: nn.Module,
    input_shape: Sequence[int],
    *,
    position: Optional[Tuple[int, int]] = None,
    forward: Optional[Callable[[nn.Module, torch.Tensor], torch.Tensor]] = None,
    draws: int = 4,
    seed: int = 0,
) -> torch.Tensor:
    """Boolean ``(H, W)`` mask of the input pixels that the output at ``position`` depends on.

    Args:
        model: the network (left unchanged: a float64 copy in eval mode is measured).
        input_shape: ``(C, H, W)`` of one input image.
        position: output position ``(i, j)`` (default: the centre of the output map).
        forward: ``forward(model, x)`` giving the ``(1, C', H', W')`` map to measure (default ``model(x)``;
            e.g. ``lambda m, x: m.features(x)`` for a network whose ``forward`` ends in a classifier).
        draws: random inputs whose gradient supports are joined (default: ``4``).
        seed: seed of the random inputs (default: ``0``).

    The mask is the support of ``g(p, q) = Σ_x Σ_{c', c} |∂F(x)_{c', i, j} / ∂x_{c, p, q}|`` over the
    ``draws`` random inputs ``x``, with ``(i, j) = position`` and ``F`` the measured map.

    Returns:
        Boolean ``(H, W)`` tensor, ``True`` at the input pixels the output at ``position`` depends on.

    Raises:
        ValueError: if ``input_shape`` is not ``(C, H, W)`` with positive sizes, ``draws < 1``, the measured
            output is not a ``(1, C', H', W')`` map, or ``position`` lies outside it.

    Examples:
        >>> import torch
        >>> net = torch.nn.Conv2d(1, 1, 3, padding=1)
        >>> mask = receptive_field_mask(net, (1, 8, 8), position=(0, 0))
        >>> mask.shape, int(mask.sum())
        (torch.Size([8, 8]), 4)
    """
    if len(input_shape) != 3 or any(int(size) < 1 for size in input_shape):
        raise ValueError(f"input_shape must be (C, H, W) with positive sizes, got {tuple(input_shape)}")
    if draws < 1:
        raise ValueError(f"draws must be at least 1, got {draws}")
    probe = copy.deepcopy(model).to(torch.float64).eval()
    device = next((p.device for p in probe.parameters()), torch.device("cpu"))  # where the model is
    generator = torch.Generator().manual_seed(seed)  # the same probes on every device: drawn on the CPU
    support = torch.zeros(tuple(int(size) for size in input_shape[1:]), dtype=torch.float64, device=device)
    for _ in range(draws):
        x = (
            torch.randn(1, *input_shape, generator=generator, dtype=torch.float64)
            .to(device)
            .requires_grad_(True)
        )
        out = forward(probe, x) if forward is not None else probe(x)
        if out.dim() != 4 or out.shape[0] != 1:
            raise ValueError(
                f"the measured output must be a (1, C, H, W) feature map, got shape {tuple(out.shape)}; "
                "pass forward=... to measure an inner map (e.g. lambda m, x: m.features(x))"
            )
        row, col = position if position is not None else (out.shape[-2] // 2, out.shape[-1] // 2)
        if not (0 <= row < out.shape[-2] and 0 <= col < out.shape[-1]):
            raise ValueError(
                f"position {(row, col)} is outside the {out.shape[-2]}x{out.shape[-1]} output map"
            )
        (gradient,) = torch.autograd.grad(out[0, :, row, col].sum(), x)
        support += gradient[0].abs().sum(0)
    return (support > 0).cpu()


def receptive_field(model: nn.Module, input_shape: Sequence[int], **options) -> Tuple[int, int]:
    """Height and width of the smallest window holding the receptive field of one output position.

    The window is the bounding box of :func:`receptive_field_mask` (same options); ``(H, W)`` of the input
    means the network sees all of it (e.g. a nonlocal block), ``(0, 0)`` that the output depends on no pixel.

    Args:
        model: the network (left unchanged: a float64 copy in eval mode is measured).
        input_shape: ``(C, H, W)`` of one input image.

    Keyword options (``**options``) are passed on to :func:`receptive_field_mask`: ``position``, ``forward``,
    ``draws`` and ``seed``.

    Returns:
        ``(height, width)`` of the window, in input pixels.

    Raises:
        ValueError: as :func:`receptive_field_mask`.

    Examples:
        >>> import torch
        >>> receptive_field(torch.nn.Conv2d(3, 8, 5, padding=2), (3, 16, 16))
        (5, 5)
    """
    mask = receptive_field_mask(model, input_shape, **options)
    rows = mask.any(1).nonzero().flatten()
    cols = mask.any(0).nonzero().flatten()
    if rows.numel() == 0:
        return 0, 0
    return int(rows.max() - rows.min() + 1), int(cols.max() - cols.min() + 1)
