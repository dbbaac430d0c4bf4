r"""Distance–diameter ratio ``L/D`` of grouped points ("Diffusion Mechanism in Residual Neural Network: Theory
and Applications", §4.1–4.2).

$$
    D = \max_m \operatorname{diam}(S_m) = \max_m \max_{x, y \in S_m} \|x - y\|, \qquad
    L = \min_{m \ne m'} \min_{x \in S_m,\, y \in S_{m'}} \|x - y\| .
$$

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
    """Result of :func:`distance_diameter`: ``distance`` = L, ``diameter`` = D, ``ratio`` = L / D (inf when D
    = 0).

    ``D = max_m max_{x, y ∈ S_m} ‖x − y‖`` is the largest diameter of a group ``S_m`` and
    ``L = min_{m ≠ m'} min_{x ∈ S_m, y ∈ S_{m'}} ‖x − y‖`` the smallest distance between two groups, as in
    "Diffusion Mechanism in Residual Neural Network: Theory and Applications" (§4.1–4.2); a large ratio
    ``L/D`` means well separated, compact groups.

    Args:
        distance: the smallest distance ``L ≥ 0`` between points of different groups.
        diameter: the largest group diameter ``D ≥ 0``.

    Examples:
        >>> r = DistanceDiameter(distance=0.5, diameter=1.5)
        >>> round(r.ratio, 4), DistanceDiameter(1.0, 0.0).ratio
        (0.3333, inf)
    """

    distance: float
    diameter: float

    @property
    def ratio(self) -> float:
        if self.diameter == 0:
            return math.inf
        return self.distance / self.diameter


def distance_diameter(
    points: torch.Tensor, groups: torch.Tensor, *, chunk_size: int = 2048
) -> DistanceDiameter:
    """Smallest distance between groups ``L`` and largest group diameter ``D``.

    ``D = max_m max_{x, y ∈ S_m} ‖x − y‖`` and ``L = min_{m ≠ m'} min_{x ∈ S_m, y ∈ S_{m'}} ‖x − y‖``,
    with ``S_m`` the points of group ``m`` and ``‖·‖`` the Euclidean distance ("Diffusion Mechanism in
    Residual Neural Network: Theory and Applications", §4.1–4.2: diffusion on a graph whose components are the
    groups drives ``L/D → ∞``). Distances are computed ``chunk_size`` rows at a time: memory
    ``O(chunk_size · N)``.

    Args:
        points: ``(N, D)`` positions (e.g. features after some diffusion steps).
        groups: ``(N,)`` integer group (subclass) ids; at least two groups.
        chunk_size: number of rows whose distances to all points are computed at once (default: ``2048``).

    Returns:
        A :class:`DistanceDiameter` with ``distance`` ``L``, ``diameter`` ``D`` and ``ratio`` ``L/D``.

    Raises:
        TypeError: if ``points`` is not a tensor.
        ValueError: if ``points`` is not a finite floating ``(N, D)`` tensor, ``groups`` is not ``(N,)``, or
            there are fewer than two groups.

    Examples:
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
        block = points[start : start + chunk_size]
        distances = torch.cdist(block, points, compute_mode="donot_use_mm_for_euclid_dist")
        same = groups[start : start + chunk_size, None] == groups[None, :]
        largest = max(largest, float(distances.masked_fill(~same, 0.0).max()))
        smallest = min(smallest, float(distances.masked_fill(same, math.inf).min()))
    return DistanceDiameter(distance=smallest, diameter=largest)
