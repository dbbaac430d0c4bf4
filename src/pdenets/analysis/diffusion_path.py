"""The distance–diameter ratio along pure explicit diffusion ("Diffusion Mechanism in Residual Neural Network:
Theory and Applications", Proposition 1 and Fig. 3).

:func:`diffusion_path` diffuses grouped points one step at a time and measures ``L`` and ``D``
(:func:`~pdenets.analysis.ratio.distance_diameter`) after every step; :func:`ratio_path` turns them
into ``L/D`` and :func:`path_statistics` summarizes several paths (e.g. one per data seed) at chosen
steps. :func:`edges_between_groups` counts the graph edges that join two groups, which Proposition 1
assumes absent (each group a connected component of the graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np
import torch

from ..operators.diffusion import DiffusionOperator
from .ratio import distance_diameter

__all__ = ["DiffusionPath", "diffusion_path", "ratio_path", "path_statistics", "edges_between_groups"]


@dataclass
class DiffusionPath:
    """Result of :func:`diffusion_path`: ``L`` and ``D`` after ``0, 1, …, steps`` steps, and points kept on
    the way.

    Args:
        distance: the smallest distance ``L`` between groups after each step (entry 0: the raw points).
        diameter: the largest group diameter ``D`` after each step.
        positions: step → the points ``(N, d)`` after that many steps, for step 0 and the steps kept.

    Examples:
        >>> path = DiffusionPath([0.5, 0.5], [1.5, 0.75])
        >>> [round(L / D, 3) for L, D in zip(path.distance, path.diameter)]
        [0.333, 0.667]
    """

    distance: List[float] = field(default_factory=list)
    diameter: List[float] = field(default_factory=list)
    positions: Dict[int, np.ndarray] = field(default_factory=dict)


def diffusion_path(
    points: torch.Tensor,
    groups: torch.Tensor,
    weights: torch.Tensor,
    step_size: float,
    steps: int,
    *,
    keep: Sequence[int] = (),
) -> DiffusionPath:
    """Diffuse ``points`` for ``steps`` explicit steps on ``weights``, measuring ``L`` and ``D`` after every
    step.

    One step is ``X ← (I − γL) X`` with ``L = Λ − W``
    (:class:`~pdenets.operators.diffusion.DiffusionOperator`).

    Args:
        points: ``(N, d)`` floating-point coordinates (the measurement keeps their dtype).
        groups: ``(N,)`` integer group ids (moved to the device of ``points``).
        weights: ``(N, N)`` graph weights ``W`` of the points (dense or sparse), e.g. a kNN Gaussian graph.
        step_size: the step size ``γ > 0``.
        steps: the number of steps ``r >= 0``.
        keep: the steps whose points are kept in :attr:`DiffusionPath.positions` (besides step 0)
            (default: ``()``, only the raw points).

    Returns:
        ``L`` and ``D`` after ``0 … steps`` steps (``steps + 1`` entries each) and the points kept.

    Examples:
        >>> import torch
        >>> weights = torch.tensor([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]], dtype=torch.float64)
        >>> points = torch.tensor([[0.0, 0.0], [1.0, 0.0], [3.0, 0.0]], dtype=torch.float64)
        >>> path = diffusion_path(points, torch.tensor([0, 0, 1]), weights.to_sparse(), 1.0, 1, keep=[1])
        >>> path.diameter, path.distance, path.positions[1][:, 0].tolist()
        ([1.0, 0.0], [2.0, 2.5], [0.5, 0.5, 3.0])
    """
    operator = DiffusionOperator(weights, step_size)
    groups = torch.as_tensor(groups, device=points.device)
    path = DiffusionPath(positions={0: points.cpu().numpy()})
    current = points
    for step in range(steps + 1):
        if step > 0:
            current = operator.apply(current, 1)
        if step in keep:
            path.positions[step] = current.cpu().numpy()
        measured = distance_diameter(current, groups)
        path.distance.append(measured.distance)
        path.diameter.append(measured.diameter)
    return path


def ratio_path(distance: Sequence[float], diameter: Sequence[float]) -> np.ndarray:
    """``L/D`` after every step of a path; a diameter of 0 counts as ``1e-300`` (a huge, finite ratio).

    Args:
        distance: ``L`` after each step (:attr:`DiffusionPath.distance`).
        diameter: ``D`` after each step (:attr:`DiffusionPath.diameter`).

    Returns:
        A float array of ``L/D``, one entry per step.

    Examples:
        >>> ratios = ratio_path([0.5, 0.5], [1.5, 0.0])
        >>> round(float(ratios[0]), 4), bool(ratios[1] > 1e299)
        (0.3333, True)
    """
    return np.asarray(distance) / np.maximum(diameter, 1e-300)


def path_statistics(
    paths: Mapping[Any, Tuple[Sequence[float], Sequence[float]]], steps: Sequence[int]
) -> Dict[str, Dict[str, Any]]:
    """Medians over several paths of ``L/D``, ``D`` and ``L`` at chosen steps, and each path's ``L/D`` there.

    Args:
        paths: name (e.g. the data seed) → ``(distance, diameter)`` of one path, as in :class:`DiffusionPath`.
        steps: the steps summarized.

    Returns:
        ``L_over_D_median``, ``D_median`` and ``L_median`` (``"step_<s>"`` → the median over paths)
        and ``L_over_D_per_seed`` (``str(name)`` → ``"step_<s>"`` → that path's ``L/D``).

    Examples:
        >>> paths = {0: ([1.0, 1.0], [2.0, 1.0]), 1: ([1.0, 2.0], [2.0, 0.5])}
        >>> statistics = path_statistics(paths, [1])
        >>> statistics["L_over_D_median"], statistics["L_over_D_per_seed"]["1"], statistics["D_median"]
        ({'step_1': 2.5}, {'step_1': 4.0}, {'step_1': 0.75})
    """
    ratios = {name: ratio_path(distance, diameter) for name, (distance, diameter) in paths.items()}
    return {
        "L_over_D_median": {f"step_{s}": float(np.median([ratios[k][s] for k in ratios])) for s in steps},
        "L_over_D_per_seed": {str(k): {f"step_{s}": float(v[s]) for s in steps} for k, v in ratios.items()},
        "D_median": {f"step_{s}": float(np.median([path[1][s] for path in paths.values()])) for s in steps},
        "L_median": {f"step_{s}": float(np.median([path[0][s] for path in paths.values()])) for s in steps},
    }


def edges_between_groups(weights: torch.Tensor, groups: torch.Tensor) -> int:
    """The number of stored entries ``W[i, j]`` of a sparse weight matrix that join two different groups.

    Args:
        weights: ``(N, N)`` sparse weights (each undirected edge counts once per direction stored).
        groups: ``(N,)`` integer group ids on the device of ``weights``.

    Returns:
        How many stored entries have ``groups[i] != groups[j]``.

    Examples:
        >>> import torch
        >>> weights = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0], [0.0, 1.0, 1.0]]).to_sparse()
        >>> edges_between_groups(weights, torch.tensor([0, 0, 1]))
        2
    """
    row, col = weights.coalesce().indices()
    return int((groups[row] != groups[col]).sum())
