r"""Distance–diameter ratio ``L/D`` of grouped points (paper 000, §4.1–4.2).

.. math::

    D = \max_m \operatorname{diam}(S_m) = \max_m \max_{x, y \in S_m} \|x - y\|, \qquad
    L = \min_{m \ne m'} \min_{x \in S_m,\, y \in S_{m'}} \|x - y\| .

Proposition 1: explicit diffusion on a graph whose connected components are the groups
shrinks ``D`` exponentially while ``L`` does not decrease, so ``L/D → ∞``. Distances are
Euclidean (not squared), the convention of the paper's XOR example (``D = 1.5``,
``L = 0.5`` initially). Computed in row blocks: memory ``O(block · N)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .._checks import check_points

__all__ = ["DistanceDiameter", "distance_diameter"]


@dataclass(frozen=True)
class DistanceDiameter:
    """``distance`` = L, ``diameter`` = D, ``ratio`` = L / D (inf when D = 0)."""

    distance: float
    diameter: float

    @property
    def ratio(self) -> float:
        if self.diameter == 0:
            return math.inf
        return self.distance / self.diameter


def distance_diameter(points: torch.Tensor, groups: torch.Tensor, *, chunk_size: int = 2048) -> DistanceDiameter:
    """Smallest distance between groups ``L`` and largest group diameter ``D``.

    Args:
        points: ``(N, D)`` positions (e.g. features after some diffusion steps).
        groups: ``(N,)`` integer group (subclass) ids; at least two groups.

    Example:
        >>> import torch
        >>> x = torch.tensor([[0.], [1.], [5.], [6.]])
        >>> r = distance_diameter(x, torch.tensor([0, 0, 1, 1]))
        >>> (r.distance, r.diameter, r.ratio)
        (4.0, 1.0, 4.0)
    """
    check_points(points, "points")
    groups = torch.as_tensor(groups, device=points.device)
    if groups.shape != (points.shape[0],):
        raise ValueError(f"groups must have shape ({points.shape[0]},), got {tuple(groups.shape)}")
    if groups.unique().numel() < 2:
        raise ValueError("distance_diameter needs at least two groups")
    points = points.detach()
    smallest, largest = math.inf, 0.0
    for start in range(0, points.shape[0], chunk_size):
        block = points[start:start + chunk_size]
        distances = torch.cdist(block, points, compute_mode="donot_use_mm_for_euclid_dist")
        same = groups[start:start + chunk_size, None] == groups[None, :]
        largest = max(largest, float(distances.masked_fill(~same, 0.0).max()))
        smallest = min(smallest, float(distances.masked_fill(same, math.inf).min()))
    return DistanceDiameter(distance=smallest, diameter=largest)
