"""Input validation shared by operators, layers and tasks.

Every public entry point checks its inputs here so that bad input fails early with a
message that names the argument, what was expected and what was received.
"""

from __future__ import annotations

import math
from numbers import Real

import torch

__all__ = [
    "NonFiniteError",
    "check_points",
    "check_finite",
    "check_positive",
    "check_probability",
    "check_num_neighbors",
    "check_square",
]


class NonFiniteError(ValueError):
    """A tensor holds NaN or infinite values (bad input, or a diverged training run)."""


def check_finite(tensor: torch.Tensor, name: str) -> None:
    """Raise :class:`NonFiniteError` (a ``ValueError``) if ``tensor`` holds NaN or inf."""
    if tensor.is_sparse or tensor.layout != torch.strided:
        values = tensor.coalesce().values() if tensor.layout == torch.sparse_coo else tensor.values()
    else:
        values = tensor
    if not values.is_floating_point() or not values.numel():
        return
    # One reduction pass: a NaN or inf anywhere makes the sum non-finite. Only when the sum
    # is not finite (which also happens when finite values overflow) look entry by entry.
    if bool(torch.isfinite(values.sum())):
        return
    bad = int((~torch.isfinite(values)).sum())
    if bad:
        raise NonFiniteError(f"{name} contains {bad} NaN/inf value(s); clean or impute the input first")


def check_points(points: torch.Tensor, name: str = "points") -> torch.Tensor:
    """Check a point cloud of shape ``(N, D)``: a floating tensor, at least one row, finite."""
    if not isinstance(points, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (N, D), got {type(points).__name__}")
    if points.dim() != 2:
        raise ValueError(f"{name} must have shape (N, D), got shape {tuple(points.shape)}")
    if points.shape[0] == 0:
        raise ValueError(f"{name} is empty (N = 0)")
    if not points.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got dtype {points.dtype}")
    check_finite(points, name)
    return points


def check_positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    """Check a real scalar is finite and > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_probability(value: float, name: str) -> float:
    """Check ``0 <= value < 1`` (dropout rates and the like)."""
    value = check_positive(value, name, allow_zero=True)
    if value >= 1:
        raise ValueError(f"{name} must be in [0, 1), got {value}")
    return value


def check_num_neighbors(k: int, num_points: int, *, include_self: bool, name: str = "n_top") -> int:
    """Check a neighbour count against the number of points available.

    With ``include_self`` the point itself is one of the ``k`` neighbours, so ``k <= N``;
    otherwise ``k`` other points are needed, so ``k <= N - 1``.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"{name} must be an int, got {type(k).__name__}")
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}")
    available = num_points if include_self else num_points - 1
    if k > available:
        what = "points" if include_self else "other points"
        raise ValueError(
            f"{name}={k} neighbours requested but only {available} {what} exist (N={num_points}); "
            f"use {name} <= {max(available, 0)}"
        )
    return k


def check_square(matrix: torch.Tensor, name: str) -> int:
    """Check a (dense or sparse) matrix is square and return its size."""
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {tuple(matrix.shape)}")
    return int(matrix.shape[0])
