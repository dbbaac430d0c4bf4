r"""Laplacian-regularized label assignment (LaplacianShot, Ziko et al., ICML 2020), batched over tasks.

The "Diffusion" method of the Diff-ResNet ablation: no network, label propagation only.
With unary costs ``a_{ic} = ‖x_i − m_c‖`` of query ``i`` and prototype ``c`` and query
affinities ``w_{ij}``, LaplacianShot minimises over soft assignments ``y_i`` in the simplex

.. math::

    E(Y) = \sum_i y_i^\top a_i - \frac{\lambda}{2} \sum_{i,j} w_{ij}\, y_i^\top y_j
           + \sum_i y_i^\top \log y_i

by bound optimisation: linearising the (for positive semi-definite ``W``) concave pairwise
term at the current ``Y`` gives a separable upper bound whose minimiser is

.. math::

    y_i \leftarrow \operatorname{softmax}\Big(-a_i + \lambda \sum_j w_{ij} y_j\Big),

so every iteration lowers ``E`` when ``W`` is PSD. Iterations stop when the relative change
of ``E`` falls below ``tolerance`` or after ``max_iterations``. The affinity of the
Diff-ResNet ablation is binary: each query's ``knn − 1`` nearest other queries
(:func:`knn_affinity`).

Shapes: unary ``(T, Q, C)``, affinity ``(T, Q, Q)`` → assignments ``(T, Q, C)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

import torch

__all__ = ["laplacian_shot", "laplacian_energy", "knn_affinity", "LaplacianShotResult"]


def knn_affinity(points: torch.Tensor, knn: int) -> torch.Tensor:
    """Binary ``(T, Q, Q)`` affinity: 1 for each query's ``knn − 1`` nearest other queries (not symmetrized)."""
    distances = torch.cdist(points, points, compute_mode="donot_use_mm_for_euclid_dist")
    eye = torch.eye(points.shape[1], dtype=torch.bool, device=points.device)
    distances = distances.masked_fill(eye, float("inf"))
    count = max(0, min(knn - 1, points.shape[1] - 1))
    nearest = torch.topk(distances, count, dim=2, largest=False).indices
    affinity = torch.zeros_like(distances)
    return affinity.scatter_(2, nearest, 1.0)


def laplacian_energy(assignments: torch.Tensor, unary: torch.Tensor, affinity: torch.Tensor,
                     lam: float) -> torch.Tensor:
    """``E(Y)`` of the module docstring, one value per task ``(T,)``."""
    pairwise = (assignments * torch.bmm(affinity, assignments)).sum((1, 2))
    entropy = (assignments * torch.log(assignments.clamp_min(1e-300))).sum((1, 2))
    return (assignments * unary).sum((1, 2)) - lam / 2 * pairwise + entropy


@dataclass
class LaplacianShotResult:
    assignments: torch.Tensor
    iterations: int
    energies: List[torch.Tensor] = field(default_factory=list)


def laplacian_shot(unary: torch.Tensor, affinity: torch.Tensor, *, lam: float = 0.5, max_iterations: int = 20,
                   tolerance: float = 1e-6) -> LaplacianShotResult:
    """Bound-optimisation iterations from ``Y = softmax(−a)``; all tasks step together until each has converged."""
    assignments = torch.softmax(-unary, dim=2)
    energies = [laplacian_energy(assignments, unary, affinity, lam)]
    active = torch.ones(unary.shape[0], dtype=torch.bool, device=unary.device)
    iterations = 0
    for iterations in range(1, max_iterations + 1):
        updated = torch.softmax(-unary + lam * torch.bmm(affinity, assignments), dim=2)
        assignments = torch.where(active[:, None, None], updated, assignments)
        energy = laplacian_energy(assignments, unary, affinity, lam)
        change = (energy - energies[-1]).abs() / energies[-1].abs().clamp_min(1e-300)
        energies.append(energy)
        active = active & (change >= tolerance)
        if not bool(active.any()):
            break
    return LaplacianShotResult(assignments, iterations, energies)
