r"""K-means of a point cloud, and how typical each point is of its cluster: what the ``typical`` criterion of
:mod:`.label_selection` reads from a model's representation of the items.

:func:`kmeans` minimises the within-cluster sum of squares

$$J(c, \mu) = \sum_i \lVert z_i - \mu_{c_i} \rVert^2$$

by Lloyd's iterations (assign each point to its nearest centre, move each centre to the mean of its points)
from ``k-means++`` starts (each next centre drawn with probability proportional to the squared distance to
the nearest centre so far), seeded; the best of ``restarts`` runs is kept. Distances are computed in blocks
of rows, so memory stays ``O(block · k)`` beside the points: no ``N × N`` object, ``O(N k d)`` work an
iteration.

:func:`typicality` is the inverse of a point's mean Euclidean distance to its ``n_top`` nearest points of
the same cluster, ``t_i = 1 / \operatorname{mean}_{j \in \mathrm{kNN}(i)} \lVert z_i - z_j \rVert`` (the
density estimate of TypiClust, Hacohen, Dekel and Weinshall, "Active Learning on a Budget", ICML 2022):
large at the centre of a dense cluster, small for an outlier.

Examples:
    >>> import torch
    >>> points = torch.tensor([[0.0], [0.1], [0.2], [5.0], [5.4]], dtype=torch.float64)
    >>> assignments, centres = kmeans(points, 2, seed=0)
    >>> len(set(assignments[:3].tolist())), bool(assignments[3] == assignments[4] != assignments[0])
    (1, True)
    >>> typicality(points, assignments, n_top=2).argmax().item()  # the middle point of the first cluster
    1
"""

from __future__ import annotations

from typing import Tuple

import torch

from ..operators.knn import knn_search

__all__ = ["kmeans", "typicality"]

#: rows of the ``(rows, k)`` distance blocks
_BLOCK = 4096


def _nearest(points: torch.Tensor, centres: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
    """``(N,)`` the nearest centre of every point and ``(N,)`` its squared distance, in row blocks."""
    centre_norms = (centres * centres).sum(1)
    labels, distances = [], []
    for start in range(0, points.shape[0], _BLOCK):
        block = points[start : start + _BLOCK]
        squared = (block * block).sum(1, keepdim=True) - 2.0 * block @ centres.T + centre_norms
        value, index = squared.min(1)
        labels.append(index)
        distances.append(value.clamp_min(0.0))
    return torch.cat(labels), torch.cat(distances)


def _plus_plus(points: torch.Tensor, num_clusters: int, generator: torch.Generator) -> torch.Tensor:
    """``k-means++`` starting centres (module docstring); once every point is a centre's copy, the next
    ones are drawn uniformly."""
    count = points.shape[0]
    first = int(torch.randint(count, (1,), generator=generator, device="cpu"))
    chosen = [first]
    nearest = ((points - points[first]) ** 2).sum(1)
    for _ in range(1, num_clusters):
        total = float(nearest.sum())
        if total > 0.0:
            weights = nearest / total
        else:
            weights = torch.ones(count, dtype=points.dtype, device=points.device)
            weights[chosen] = 0.0
        pick = int(torch.multinomial(weights.cpu(), 1, generator=generator))
        chosen.append(pick)
        nearest = torch.minimum(nearest, ((points - points[pick]) ** 2).sum(1))
    return points[chosen].clone()


def kmeans(
    points: torch.Tensor,
    num_clusters: int,
    *,
    seed: int = 0,
    restarts: int = 3,
    max_iterations: int = 100,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """K-means of ``points`` (module docstring), seeded.

    Args:
        points: ``(N, d)`` finite floating points.
        num_clusters: ``k``, in ``[1, N]``.
        seed: the seed of the ``k-means++`` draws.
        restarts: runs from different starts; the one of least ``J`` is kept (≥ 1).
        max_iterations: Lloyd iterations a run at most; a run stops once no assignment changes.

    Returns:
        ``(N,)`` long, each point's cluster in ``[0, k)``, and ``(k, d)`` the centres (a cluster left
        empty keeps its last centre).

    Raises:
        ValueError: points that are not a finite ``(N, d)`` floating matrix, ``k`` out of range,
            ``restarts`` or ``max_iterations`` below 1.
    """
    if points.dim() != 2 or not points.is_floating_point():
        raise ValueError(
            f"points must be an (N, d) floating matrix, got {points.dtype} {tuple(points.shape)}"
        )
    if not bool(torch.isfinite(points).all()):
        raise ValueError("points hold NaN or infinite values")
    count = points.shape[0]
    if isinstance(num_clusters, bool) or not isinstance(num_clusters, int) or not 1 <= num_clusters <= count:
        raise ValueError(f"num_clusters must be a whole number in [1, {count:,}], got {num_clusters!r}")
    if restarts < 1 or max_iterations < 1:
        raise ValueError(f"restarts and max_iterations must be ≥ 1, got {restarts} and {max_iterations}")
    generator = torch.Generator().manual_seed(int(seed))
    best = None
    for _ in range(restarts):
        centres = _plus_plus(points, num_clusters, generator)
        labels, distances = _nearest(points, centres)
        for _ in range(max_iterations):
            sums = torch.zeros_like(centres).index_add_(0, labels, points)
            sizes = torch.bincount(labels, minlength=num_clusters).to(points.dtype)
            filled = sizes > 0
            centres[filled] = sums[filled] / sizes[filled].unsqueeze(1)
            moved, distances = _nearest(points, centres)
            if bool((moved == labels).all()):
                break
            labels = moved
        objective = float(distances.sum())
        if best is None or objective < best[0]:
            best = (objective, labels, centres)
    assert best is not None
    return best[1], best[2]


def typicality(points: torch.Tensor, assignments: torch.Tensor, *, n_top: int = 10) -> torch.Tensor:
    """``(N,)`` float64, each point's typicality in its cluster (module docstring): the inverse mean
    distance to its ``min(n_top, m − 1)`` nearest points of its cluster of ``m``: 0 for the point of a
    cluster of one (nothing lies around it), ``1 / tiny`` (finite, the largest) for copies of one point.

    Args:
        points: ``(N, d)`` floating points.
        assignments: ``(N,)`` each point's cluster.
        n_top: the neighbours a point's density is read from (≥ 1).

    Raises:
        ValueError: ``assignments`` not ``(N,)``, ``n_top`` below 1.
    """
    if assignments.shape != points.shape[:1]:
        raise ValueError(f"assignments must be ({points.shape[0]},), got {tuple(assignments.shape)}")
    if isinstance(n_top, bool) or not isinstance(n_top, int) or n_top < 1:
        raise ValueError(f"n_top must be a whole number ≥ 1, got {n_top!r}")
    result = torch.zeros(points.shape[0], dtype=torch.float64, device=points.device)
    for cluster in torch.unique(assignments).tolist():
        members = torch.nonzero(assignments == cluster).flatten()
        if len(members) < 2:
            continue
        neighbours = knn_search(points[members], min(n_top, len(members) - 1))
        mean = neighbours.sq_distances.double().clamp_min(0.0).sqrt().mean(1)
        result[members] = 1.0 / mean.clamp_min(torch.finfo(torch.float64).tiny)
    return result
