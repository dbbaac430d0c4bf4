"""The synthetic sets of Wang, Dou, Bao, Shi, *Diffusion Mechanism in Residual Neural Network: Theory and
Applications* (Diff-ResNet), Appendix E.1: XOR, moon, circle, spiral.

Each generator is seeded and returns float64 points, integer class labels and integer
group ids (subclasses for XOR, classes otherwise). Curve parameters are drawn uniformly
at random (``grid=False``, default) so that a second seed gives a genuinely held-out
sample of the same distribution, or evenly spaced (``grid=True``), the layout of the
paper's own scripts. Noise is drawn as all x-offsets, then all y-offsets, so that
``grid=True`` with ``seed=numpy.random.RandomState(seed)`` gives exactly the points of the
paper's scripts seeded with ``numpy.random.seed(seed)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, Union

import numpy as np
import torch

from .._checks import nearest_hint
from .._deprecation import renamed_arguments

__all__ = [
    "SyntheticSet",
    "make_xor",
    "make_moons",
    "make_circles",
    "make_spirals",
    "SYNTHETIC_SETS",
    "make_synthetic",
]


@dataclass
class SyntheticSet:
    """Points ``(N, 2)`` float64, labels ``(N,)`` int64 in ``{0, 1}``, groups ``(N,)`` int64.

    The result of every generator of this module (:func:`make_xor`, :func:`make_moons`,
    :func:`make_circles`, :func:`make_spirals`, :func:`make_synthetic`); ``len(dataset)`` is
    the number of points ``N``.

    Args:
        points: ``(N, 2)`` float64 coordinates.
        labels: ``(N,)`` int64 class labels in ``{0, 1}``.
        groups: ``(N,)`` int64 group ids: the four discs of XOR (its subclasses), the class
            label for the other sets.
        name: the set's name (``"xor"``, ``"moon"``, ``"circle"`` or ``"spiral"``).

    Examples:
        >>> import torch
        >>> data = SyntheticSet(torch.zeros(3, 2, dtype=torch.float64), torch.tensor([0, 1, 1]),
        ...                     torch.tensor([0, 1, 1]), "demo")
        >>> len(data), data.name
        (3, 'demo')
    """

    points: torch.Tensor
    labels: torch.Tensor
    groups: torch.Tensor
    name: str

    def __len__(self) -> int:
        return int(self.points.shape[0])


def _check_count(count: int, name: str) -> int:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"{name} must be a positive int, got {count!r}")
    return count


#: what a generator's ``seed`` may be: an int (of a ``numpy.random.default_rng``) or a NumPy generator
Seed = Union[int, np.random.Generator, np.random.RandomState]


def _rng(seed: Seed) -> Union[np.random.Generator, np.random.RandomState]:
    if isinstance(seed, (np.random.Generator, np.random.RandomState)):
        return seed
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an int or a NumPy generator, got {seed!r}")
    return np.random.default_rng(seed)


def _noise(rng, scale: float, count: int) -> np.ndarray:
    """``count`` 2-D Gaussian offsets: all x first, then all y (the paper scripts' order)."""
    return scale * rng.standard_normal((2, count)).T


def _parameters(
    rng: Union[np.random.Generator, np.random.RandomState], count: int, low: float, high: float, grid: bool
) -> np.ndarray:
    return np.linspace(low, high, count) if grid else rng.uniform(low, high, count)


def _finish(points: np.ndarray, labels: np.ndarray, groups: np.ndarray, name: str) -> SyntheticSet:
    return SyntheticSet(
        torch.from_numpy(points.astype(np.float64)),
        torch.from_numpy(labels.astype(np.int64)),
        torch.from_numpy(groups.astype(np.int64)),
        name,
    )


@renamed_arguments(rng="seed")
def make_xor(points_per_disc: int = 100, *, radius: float = 0.75, seed: Seed = 0) -> SyntheticSet:
    """Four discs of radius 0.75 centred at (0,0), (0,2), (2,0), (2,2), uniform inside each.

    The XOR set of *Diffusion Mechanism in Residual Neural Network: Theory and Applications*
    (Appendix E.1.1: 100 points in each disc). Discs (0,0) and (2,2) are class 0, the other
    two class 1; ``groups`` numbers the discs 0 (0,0), 1 (2,2), 2 (0,2), 3 (2,0) (the four
    subclasses of the structured-data assumption). Points are uniform in area (radius
    ``r·sqrt(u)``, angle uniform). Initial ``D = 2r = 1.5`` and ``L = 2 − 2r = 0.5``.

    Args:
        points_per_disc: points drawn in each disc (default: ``100``).
        radius: radius ``r`` of every disc (default: ``0.75``).
        seed: the seed of a ``numpy.random.default_rng``, or a NumPy generator to draw from
            (``numpy.random.RandomState(seed)`` with ``grid=True`` reproduces the paper scripts' points;
            default: ``0``). Formerly also ``rng=``, now deprecated.

    Returns:
        ``4 · points_per_disc`` points, disc by disc, named ``"xor"``.

    Raises:
        ValueError: ``points_per_disc`` is not a positive int.

    Examples:
        >>> data = make_xor(2)
        >>> len(data), data.labels.tolist(), data.groups.tolist()
        (8, [0, 0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 2, 2, 3, 3])
    """
    _check_count(points_per_disc, "points_per_disc")
    rng = _rng(seed)
    centres = np.array([[0.0, 0.0], [2.0, 2.0], [0.0, 2.0], [2.0, 0.0]])
    labels = np.repeat([0, 0, 1, 1], points_per_disc)
    groups = np.repeat(np.arange(4), points_per_disc)
    total = 4 * points_per_disc
    distance = radius * np.sqrt(rng.uniform(0.0, 1.0, total))  # uniform in area
    angle = rng.uniform(0.0, 2 * np.pi, total)
    points = centres[groups] + np.stack([distance * np.cos(angle), distance * np.sin(angle)], 1)
    return _finish(points, labels, groups, "xor")


@renamed_arguments(rng="seed")
def make_moons(
    points_per_class: int = 500, *, noise: float = 0.05, seed: Seed = 0, grid: bool = False
) -> SyntheticSet:
    """Upper unit half-circle at (0, 0) and lower unit half-circle at (1, 0.5), + N(0, noise²).

    The moon set of *Diffusion Mechanism in Residual Neural Network: Theory and Applications*
    (Appendix E.1.1: 500 points per arc, Gaussian noise of standard deviation 0.05). Class 0
    is the upper arc ``(cos t, sin t)``, class 1 the lower arc ``(1 − cos t, 0.5 − sin t)``,
    ``t ∈ [0, π]``; ``groups`` equals ``labels``.

    Args:
        points_per_class: points on each arc (default: ``500``).
        noise: standard deviation of the Gaussian noise added to each coordinate
            (default: ``0.05``).
        seed: the seed of a ``numpy.random.default_rng``, or a NumPy generator to draw from
            (``numpy.random.RandomState(seed)`` with ``grid=True`` reproduces the paper scripts' points;
            default: ``0``). Formerly also ``rng=``, now deprecated.
        grid: evenly spaced arc parameters ``t`` (the paper scripts' layout) instead of
            uniformly random ones (default: ``False``).

    Returns:
        ``2 · points_per_class`` points, class 0 first, named ``"moon"``.

    Raises:
        ValueError: ``points_per_class`` is not a positive int.

    Examples:
        >>> data = make_moons(3, noise=0.0, grid=True)
        >>> data.points.round(decimals=3).tolist()
        [[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0], [0.0, 0.5], [1.0, -0.5], [2.0, 0.5]]
        >>> data.labels.tolist()
        [0, 0, 0, 1, 1, 1]
    """
    _check_count(points_per_class, "points_per_class")
    rng = _rng(seed)
    t_upper = _parameters(rng, points_per_class, 0.0, np.pi, grid)
    t_lower = _parameters(rng, points_per_class, 0.0, np.pi, grid)
    upper = np.stack([np.cos(t_upper), np.sin(t_upper)], 1)
    lower = np.stack([1.0 - np.cos(t_lower), 0.5 - np.sin(t_lower)], 1)
    points = np.concatenate([upper, lower]) + _noise(rng, noise, 2 * points_per_class)
    labels = np.repeat([0, 1], points_per_class)
    return _finish(points, labels, labels, "moon")


@renamed_arguments(rng="seed")
def make_circles(
    points_per_class: int = 500,
    *,
    noise: float = 0.05,
    radii=(2.0, 1.0),
    seed: Seed = 0,
    grid: bool = False,
) -> SyntheticSet:
    """Two concentric circles (radius 2 = class 0, radius 1 = class 1), + N(0, noise²).

    The circle set of *Diffusion Mechanism in Residual Neural Network: Theory and
    Applications* (Appendix E.1.1). Points lie at angles in ``[0, 2π]`` on circles centred at
    the origin, one circle per class; ``groups`` equals ``labels``.

    Args:
        points_per_class: points on each circle (default: ``500``).
        noise: standard deviation of the Gaussian noise added to each coordinate
            (default: ``0.05``).
        radii (tuple of float): radii of the class-0 and class-1 circles (default: ``(2.0, 1.0)``).
        seed: the seed of a ``numpy.random.default_rng``, or a NumPy generator to draw from
            (``numpy.random.RandomState(seed)`` with ``grid=True`` reproduces the paper scripts' points;
            default: ``0``). Formerly also ``rng=``, now deprecated.
        grid: evenly spaced angles (the paper scripts' layout) instead of uniformly random
            ones (default: ``False``).

    Returns:
        ``len(radii) · points_per_class`` points, circle by circle, named ``"circle"``.

    Raises:
        ValueError: ``points_per_class`` is not a positive int.

    Examples:
        >>> data = make_circles(4, noise=0.0)
        >>> data.points.norm(dim=1).round(decimals=6).tolist()
        [2.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0]
    """
    _check_count(points_per_class, "points_per_class")
    rng = _rng(seed)
    rings = []
    for radius in radii:
        angle = _parameters(rng, points_per_class, 0.0, 2 * np.pi, grid)
        rings.append(radius * np.stack([np.cos(angle), np.sin(angle)], 1))
    points = np.concatenate(rings) + _noise(rng, noise, 2 * points_per_class)
    labels = np.repeat([0, 1], points_per_class)
    return _finish(points, labels, labels, "circle")


@renamed_arguments(rng="seed")
def make_spirals(
    points_per_class: int = 500, *, noise: float = 0.1, seed: Seed = 0, grid: bool = False
) -> SyntheticSet:
    """Two spirals ``r = a + bθ``, θ ∈ [0, 2π], with ``a = b = 1`` and ``a = b = −1``, + N(0, noise²).

    The spiral set of *Diffusion Mechanism in Residual Neural Network: Theory and
    Applications* (Appendix E.1.1). A point is ``(r cos θ, r sin θ)``; class 0 is the arm
    ``a = b = 1``, class 1 the arm ``a = b = −1`` (the first arm turned by π); ``groups``
    equals ``labels``.

    Args:
        points_per_class: points on each arm (default: ``500``).
        noise: standard deviation of the Gaussian noise added to each coordinate
            (default: ``0.1``).
        seed: the seed of a ``numpy.random.default_rng``, or a NumPy generator to draw from
            (``numpy.random.RandomState(seed)`` with ``grid=True`` reproduces the paper scripts' points;
            default: ``0``). Formerly also ``rng=``, now deprecated.
        grid: evenly spaced angles θ (the paper scripts' layout) instead of uniformly random
            ones (default: ``False``).

    Returns:
        ``2 · points_per_class`` points, class 0 first, named ``"spiral"``.

    Raises:
        ValueError: ``points_per_class`` is not a positive int.

    Examples:
        >>> data = make_spirals(3, noise=0.0, grid=True)
        >>> data.points[:, 0].round(decimals=3).tolist()
        [1.0, -4.142, 7.283, -1.0, 4.142, -7.283]
    """
    _check_count(points_per_class, "points_per_class")
    rng = _rng(seed)
    arms = []
    for coefficient in (1.0, -1.0):
        theta = _parameters(rng, points_per_class, 0.0, 2 * np.pi, grid)
        r = coefficient * (1.0 + theta)
        arms.append(np.stack([r * np.cos(theta), r * np.sin(theta)], 1))
    points = np.concatenate(arms) + _noise(rng, noise, 2 * points_per_class)
    labels = np.repeat([0, 1], points_per_class)
    return _finish(points, labels, labels, "spiral")


SYNTHETIC_SETS: Dict[str, Callable[..., SyntheticSet]] = {
    "xor": make_xor,
    "moon": make_moons,
    "circle": make_circles,
    "spiral": make_spirals,
}


@renamed_arguments(rng="seed")
def make_synthetic(name: str, size: int, *, seed: Seed = 0, grid: bool = False) -> SyntheticSet:
    """Build a set by name (``xor``: ``size`` points per disc; others: per class).

    Looks ``name`` up in :data:`SYNTHETIC_SETS` and calls its generator with the default
    noise. ``grid`` does not apply to ``xor`` (its points are always uniform in each disc).

    Args:
        name: ``"xor"``, ``"moon"``, ``"circle"`` or ``"spiral"``.
        size: points per disc (``xor``) or per class (the others).
        seed: the seed of a ``numpy.random.default_rng``, or a NumPy generator to draw from
            (``numpy.random.RandomState(seed)`` with ``grid=True`` reproduces the paper scripts' points;
            default: ``0``). Formerly also ``rng=``, now deprecated.
        grid: evenly spaced curve parameters instead of uniformly random ones; ignored for
            ``xor`` (default: ``False``).

    Returns:
        The generated set (see :func:`make_xor`, :func:`make_moons`, :func:`make_circles`,
        :func:`make_spirals`).

    Raises:
        ValueError: ``name`` is not a known set (the message lists them), or ``size`` is not
            a positive int.

    Examples:
        >>> make_synthetic("circle", 10, seed=1).points.shape
        torch.Size([20, 2])
    """
    if name not in SYNTHETIC_SETS:
        raise ValueError(
            f"unknown synthetic set {name!r}{nearest_hint(name, list(SYNTHETIC_SETS))}; "
            f"choose from {sorted(SYNTHETIC_SETS)}"
        )
    if name == "xor":
        return make_xor(size, seed=seed)
    return SYNTHETIC_SETS[name](size, seed=seed, grid=grid)
