r"""COIN over any forecasting model: its forecasts diffused on the origins' graphs, where that surely helps.

From "Convection-Diffusion Equation: A Theoretically Certified Framework for Neural Networks" (COIN): a
model's forecasts ``Y`` are the convection; ``r`` explicit diffusion steps on each origin's region graph

$$
Y_s \leftarrow Y_s - \gamma L_{g(s)} Y_s, \qquad L = \Lambda - W,
$$

are the last unit of time (:func:`diffuse_forecasts`, one
:class:`~pdenets.operators.SliceDiffusion`). :func:`choose_diffusion` takes the ``(γ, r)`` whose gain
over the model on the selection days is surely positive (:func:`block_gains`), else the model itself.
The windows, splits and errors are the forecasting task's (:mod:`pdenets.tasks.coin_forecast.protocol`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence

import torch

from ..operators.diffusion import SliceDiffusion
from ..operators.slice_graphs import SliceGraphs
from .training import masked_mse

__all__ = [
    "diffuse_forecasts",
    "choose_diffusion",
    "block_gains",
    "DiffusionChoice",
    "MIN_SELECTION_BLOCKS",
    "SELECTION_CONFIDENCE",
]

#: the fewest blocks of selection days on which a gain of COIN's diffusion is judged (fewer: the model is
#: kept)
MIN_SELECTION_BLOCKS = 5
#: the one-sided confidence of the lower bound a diffusion's gain must clear
SELECTION_CONFIDENCE = 0.95


def diffuse_forecasts(
    prediction: torch.Tensor, graphs: SliceGraphs, step_size: float, num_steps: int
) -> torch.Tensor:
    """``r`` explicit diffusion steps ``Y ← Y − γ L Y`` of forecasts, each origin on its own graph.

    ``Y_s ← Y_s − γ L_{g(s)} Y_s``,  ``L = Λ − W``,

    with ``Y_s`` the ``(N, H)`` forecasts of origin ``s``, ``W`` the weights of its graph ``g(s)``,
    ``Λ`` their degrees, ``γ`` the step size and ``r`` the number of steps
    (:class:`~pdenets.operators.SliceDiffusion`, stability checked).

    Args:
        prediction: ``(S, N, H)`` forecasts.
        graphs: the origins' graphs (:class:`~pdenets.operators.SliceGraphs`).
        step_size: ``γ > 0``.
        num_steps: ``r``.

    Returns:
        The diffused ``(S, N, H)`` forecasts.

    Examples:
        >>> pair = torch.tensor([[0.0, 1.0], [1.0, 0.0]])
        >>> graphs = SliceGraphs([pair], num_nodes=2, ids=torch.zeros(1, dtype=torch.long))
        >>> diffuse_forecasts(torch.tensor([[[4.0], [0.0]]]), graphs, 0.25, 1).flatten().tolist()
        [3.0, 1.0]
    """
    return SliceDiffusion(graphs, step_size).apply(prediction, num_steps)


@dataclass(frozen=True)
class DiffusionChoice:
    """COIN's diffusion over a model's forecasts: ``(γ, r)`` (``γ = 0``: the model kept), the selection days'
    evidence (mean block gain in MSE, its lower confidence bound, the number of blocks judged — for a kept
    model too, so that "too few blocks" and "no gain beyond the noise" can be told apart) and the
    selection-set MSE."""

    step_size: float
    num_steps: int
    gain: float
    lower_bound: float
    blocks: int
    selection_mse: float
    forecasts: torch.Tensor = field(repr=False, compare=False)


def block_gains(
    prediction: torch.Tensor,
    diffused: torch.Tensor,
    targets: torch.Tensor,
    mask: torch.Tensor,
    target_steps: torch.Tensor,
    block_days: int,
) -> torch.Tensor:
    """The gain of ``diffused`` over ``prediction`` in squared error, per block of ``block_days`` consecutive
    days.

    ``d = (prediction − target)² − (diffused − target)²`` for every entry of ``mask`` (positive: diffusion
    helped); the entries of one target day are averaged (they share the day's shocks), and consecutive
    days are averaged in blocks of ``block_days`` (forecasts of horizons ``1…H`` from neighbouring origins
    overlap, so their errors are correlated over up to ``H`` days; blocks of ``H`` days are close to
    independent — batch means). A last, incomplete block is dropped.

    Args:
        prediction, diffused, targets: ``(S, N, H)``.
        mask: ``(S, N, H)`` booleans, the entries that count.
        target_steps: ``(S, H)`` the day each (origin, horizon) forecasts.
        block_days: days per block.

    Returns:
        ``(m,)`` block means, in the order of the days.

    Examples:
        >>> p, d = torch.zeros(4, 1, 1), torch.ones(4, 1, 1)
        >>> y = torch.tensor([2.0, 2.0, 0.0, 0.0]).view(4, 1, 1)
        >>> mask = torch.ones(4, 1, 1, dtype=torch.bool)
        >>> block_gains(p, d, y, mask, torch.arange(4).view(4, 1), 2).tolist()
        [3.0, -1.0]
    """
    gains = (prediction - targets).square() - (diffused - targets).square()
    days = target_steps[:, None, :].expand_as(gains)[mask]
    values = gains[mask]
    distinct, position = torch.unique(days, return_inverse=True)
    per_day = values.new_zeros(len(distinct)).index_add_(0, position, values)
    per_day = per_day / torch.bincount(position, minlength=len(distinct)).to(values.dtype)
    blocks = len(per_day) // block_days
    return per_day[: blocks * block_days].reshape(blocks, block_days).mean(1)


def choose_diffusion(
    prediction: torch.Tensor,
    targets: torch.Tensor,
    graphs: SliceGraphs,
    target_steps: torch.Tensor,
    selection: torch.Tensor,
    step_sizes: Sequence[float],
    num_steps: Sequence[int],
    *,
    confidence: float = SELECTION_CONFIDENCE,
    min_blocks: int = MIN_SELECTION_BLOCKS,
) -> DiffusionChoice:
    """COIN over any model: diffusion only where the selection days show a gain larger than their noise.

    For each ``(γ, r)`` of the grid the gain over the model is measured in blocks of ``H`` selection days
    (:func:`block_gains`); with ``m`` blocks of mean ``ḡ`` and standard deviation ``s``, its one-sided lower
    confidence bound is ``ḡ − t_{confidence, m−1} s/√m`` (Student's t: the blocks are close to
    independent). The candidate with the highest bound is taken if that bound is positive; otherwise, and
    whenever the selection days hold fewer than ``min_blocks`` blocks, the model is kept (``γ = 0``). A
    validation set too small to tell a gain from luck — one snapshot of 15 regions — therefore cannot
    make COIN worse than its model; a gain that holds on every block is taken. (The highest of several
    correlated bounds is a little optimistic: the candidates are nested strengths of one diffusion, so
    the effective number of comparisons is small.)

    Args:
        prediction: ``(S, N, H)`` forecasts of a model.
        targets: ``(S, N, H)`` the truth in the same units.
        graphs: the origins' graphs of :func:`diffuse_forecasts`.
        target_steps: ``(S, H)`` the day of each target (the blocks are of ``H`` consecutive days).
        selection: ``(S, N, H)`` the entries to select on, e.g. the validation targets. Forecasts that saw no
            target (the last value, the mean of the lags) can select on every target before the test period.
        step_sizes: the ``γ`` to try (``0`` is the model itself).
        num_steps: the ``r`` to try.
        confidence: of the lower bound (default 0.95).
        min_blocks: the fewest blocks judged (default 5).

    Returns:
        :class:`DiffusionChoice`.
    """
    from scipy.stats import t as student

    mask = selection
    block_days = targets.shape[-1]
    # the blocks of the selection days (the same for every candidate): a kept model says how many it judged
    judged = len(block_gains(prediction, prediction, targets, mask, target_steps, block_days))
    kept = DiffusionChoice(0.0, 0, 0.0, 0.0, judged, masked_mse(prediction, targets, mask).item(), prediction)
    best = kept
    for step_size in sorted(set(step_sizes) - {0.0}):
        operator, out = SliceDiffusion(graphs, step_size), prediction
        for steps in range(1, max(num_steps) + 1):
            out = operator.apply(out, 1)
            if steps not in num_steps:
                continue
            gains = block_gains(prediction, out, targets, mask, target_steps, block_days)
            if len(gains) < min_blocks:
                continue
            mean, spread = float(gains.mean()), float(gains.std())
            bound = mean - float(student.ppf(confidence, len(gains) - 1)) * spread / math.sqrt(len(gains))
            if bound > best.lower_bound:
                best = DiffusionChoice(
                    step_size, steps, mean, bound, len(gains), masked_mse(out, targets, mask).item(), out
                )
    return best
