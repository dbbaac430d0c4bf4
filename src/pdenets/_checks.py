"""Input validation shared by operators, layers, loaders and tasks.

Every public entry point checks its inputs here so that bad input fails early with a
message that names the argument, what was expected and what was received.

Dtype policy (every public function and layer): **features and points are float32 or
float64**. Integer, boolean and complex tensors are refused by name (convert with
``.float()``); float16 and bfloat16 are refused by name too, because the sparse products,
neighbour search and stability bounds are not implemented or not accurate in half
precision (``.float()`` first, or run the model under autocast: there a layer made of convolutions,
:class:`~pdenets.nn.HamiltonianBlock`, takes autocast's dtype, and a nonlocal block computes in float32).
Graph weights are the one documented promotion: integer or boolean adjacency matrices become the
default floating dtype (:func:`pdenets.operators.as_weight_matrix`), and a diffusion
applies ``W`` in the dtype of the features it diffuses.
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
import re
from typing import Literal, Optional, Sequence, TypeVar, Union, overload

import numpy as np
import torch

_T = TypeVar("_T")

__all__ = [
    "NonFiniteError",
    "UnknownNameError",
    "unknown_name",
    "nearest_hint",
    "FLOATING_DTYPES",
    "check_points",
    "check_features",
    "check_floating",
    "check_dense",
    "check_finite",
    "check_positive",
    "check_positive_int",
    "check_probability",
    "check_num_neighbors",
    "check_square",
    "check_index_tensor",
    "check_labels",
    "check_choice",
    "environment_number",
    "check_num_nodes",
    "check_scalar_entries",
    "MAX_INDEX",
]

#: The largest node id / matrix side the sparse kernels take: their 32-bit index arrays hold at most 2^31 − 1.
MAX_INDEX = 2**31 - 1

#: The floating dtypes every public function and layer accepts.
FLOATING_DTYPES = (torch.float32, torch.float64)


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


def under_autocast(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is in half precision because autocast is on for its device (mixed precision)."""
    return tensor.dtype in (torch.float16, torch.bfloat16) and torch.is_autocast_enabled(tensor.device.type)


def check_floating(tensor: torch.Tensor, name: str, *, autocast_ok: bool = False) -> torch.Tensor:
    """Refuse anything but a float32/float64 tensor, naming the dtype and the fix; with ``autocast_ok``, a
    half-precision tensor made under autocast (:func:`under_autocast`) is accepted (a layer whose every
    operation autocast handles, such as convolutions)."""
    if not isinstance(tensor, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(tensor).__name__}")
    if autocast_ok and under_autocast(tensor):
        return tensor
    if tensor.dtype in (torch.float16, torch.bfloat16):
        raise TypeError(
            f"{name} has dtype {tensor.dtype}: half precision is not supported (the sparse products, "
            "neighbour search and stability bounds need float32 or float64); convert with .float()"
        )
    if tensor.dtype not in FLOATING_DTYPES:
        raise TypeError(f"{name} must be float32 or float64, got {tensor.dtype}; convert with .float()")
    return tensor


def check_features(features: torch.Tensor, name: str = "features", *, min_dim: int = 1) -> torch.Tensor:
    """Features of ``N`` samples, shape ``(N, *)``: float32/float64, at least ``min_dim`` dims, finite."""
    check_floating(features, name)
    if features.dim() < min_dim:
        raise ValueError(
            f"{name} must have at least {min_dim} dimension(s) (N, ...), got shape {tuple(features.shape)}"
        )
    check_finite(features, name)
    return features


def check_dense(tensor: torch.Tensor, name: str, user: str) -> torch.Tensor:
    """Refuse a sparse tensor where ``user`` needs dense features (naming the fix, ``x.to_dense()``)."""
    if isinstance(tensor, torch.Tensor) and tensor.layout != torch.strided:
        raise TypeError(
            f"{name} is a sparse tensor ({tensor.layout}): {user} needs dense features: pass x.to_dense()"
        )
    return tensor


def check_points(points: torch.Tensor, name: str = "points") -> torch.Tensor:
    """Check a point cloud of shape ``(N, D)``: float32/float64, at least one row and column, finite."""
    if not isinstance(points, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (N, D), got {type(points).__name__}")
    if points.dim() != 2:
        raise ValueError(f"{name} must have shape (N, D), got shape {tuple(points.shape)}")
    if points.shape[0] == 0:
        raise ValueError(f"{name} is empty (N = 0)")
    if points.shape[1] == 0:
        raise ValueError(f"{name} has no coordinates (D = 0)")
    check_floating(points, name)
    check_finite(points, name)
    return points


def check_positive(value: float, name: str, *, allow_zero: bool = False) -> float:
    """Check a real scalar is finite and > 0 (or >= 0 with ``allow_zero``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    if value < 0 or (value == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be {bound}, got {value}")
    return value


def check_positive_int(value, name: str, *, minimum: int = 1) -> int:
    """An integer ``>= minimum``; Python and NumPy integers pass, ``bool`` and floats do not.

    Examples:
        >>> check_positive_int(np.int64(3), "num_classes")
        3
        >>> check_positive_int(0, "num_classes")
        Traceback (most recent call last):
        ...
        ValueError: num_classes must be an integer >= 1, got 0
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__} {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
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
    k = check_positive_int(k, name)
    available = num_points if include_self else num_points - 1
    if k > available:
        what = "points" if include_self else "other points"
        raise ValueError(
            f"{name}={k} neighbours requested but only {available} {what} exist (N={num_points}); "
            f"use {name} <= {max(available, 0)}"
        )
    return k


def check_num_nodes(count: int, name: str, *, hint: str = "") -> int:
    """Refuse more than :data:`MAX_INDEX` (2^31 − 1) nodes, the most the sparse kernels index.

    ``name`` opens the message (what holds the count); ``hint`` (what to do) ends it.

    Examples:
        >>> check_num_nodes(2**40, "weight matrix of shape (1099511627776, 1099511627776)")
        ... # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: weight matrix of shape (...): more than 2^31 − 1 nodes is not supported
    """
    if count > MAX_INDEX:
        raise ValueError(f"{name}: more than 2^31 − 1 nodes is not supported" + (f"; {hint}" if hint else ""))
    return count


def check_scalar_entries(matrix: torch.Tensor, name: str) -> torch.Tensor:
    """Refuse a hybrid sparse tensor (dense values per entry, or fewer than two sparse dimensions) as a
    matrix.

    A sparse ``(N, N)`` matrix holds one scalar per stored entry: ``sparse_dim() == 2`` and ``dense_dim() ==
    0``. Dense tensors pass unchanged.
    """
    if matrix.layout != torch.strided and (matrix.sparse_dim() != 2 or matrix.dense_dim() != 0):
        raise ValueError(
            f"{name} is a hybrid sparse tensor (sparse_dim={matrix.sparse_dim()}, "
            f"dense_dim={matrix.dense_dim()}, shape {tuple(matrix.shape)}): give one scalar per entry, "
            "a sparse (N, N) matrix with sparse_dim=2 and dense_dim=0"
        )
    return matrix


def check_square(matrix: torch.Tensor, name: str) -> int:
    """Check a (dense or sparse) matrix is square and return its size."""
    if matrix.dim() != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"{name} must be a square (N, N) matrix, got shape {tuple(matrix.shape)}")
    return int(matrix.shape[0])


def check_index_tensor(
    index,
    name: str,
    *,
    size: Optional[int] = None,
    shape: Optional[Sequence] = None,
    allow_negative: bool = False,
) -> torch.Tensor:
    """An integer index tensor (int32/int64), entries in ``[0, size)``; returned as int64.

    A float tensor is refused even when its values are whole numbers: a float index is
    almost always a bug upstream (and large ids do not survive a float32 round trip).
    ``shape`` entries of ``None`` match any length.
    """
    if isinstance(index, np.ndarray):
        index = torch.from_numpy(index)
    if not isinstance(index, torch.Tensor):
        raise TypeError(f"{name} must be an integer tensor, got {type(index).__name__}")
    if index.dtype not in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8):
        raise TypeError(f"{name} must hold integers (int64), got {index.dtype}; indices are never rounded")
    if shape is not None and (
        index.dim() != len(shape)
        or any(want is not None and got != want for got, want in zip(index.shape, shape))
    ):
        expected = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {expected}, got {tuple(index.shape)}")
    index = index.long()
    if index.numel():
        low, high = int(index.min()), int(index.max())
        if low < 0 and not allow_negative:
            raise ValueError(f"{name} holds negative entries (smallest {low}); indices start at 0")
        if size is not None and high >= size:
            raise ValueError(f"{name} refers to {high}, outside [0, {size}) ({size} entries)")
    return index


def check_labels(labels, name: str = "labels", *, allow_unlabelled: bool = False) -> torch.Tensor:
    """Class ids ``0 … C−1`` with every class present (``-1`` = unlabelled if allowed); int64 tensor.

    Gaps (``{0, 2, 5}``) and negative ids are refused with the classes found: relabel with
    ``numpy.unique(labels, return_inverse=True)``.
    """
    labels = check_index_tensor(labels, name, allow_negative=True)
    if labels.dim() != 1:
        raise ValueError(f"{name} must be a 1-D vector of class ids, got shape {tuple(labels.shape)}")
    labelled = labels[labels >= 0] if allow_unlabelled else labels
    smallest = int(labels.min()) if labels.numel() else 0
    if smallest < (-1 if allow_unlabelled else 0):
        allowed = "class ids >= 0 (-1 for unlabelled samples)" if allow_unlabelled else "class ids >= 0"
        raise ValueError(f"{name} holds {smallest}; expected {allowed}")
    if labelled.numel() == 0:
        raise ValueError(f"{name} has no labelled sample")
    present = torch.unique(labelled)
    if int(present.max()) + 1 != present.numel():
        shown = present.tolist() if present.numel() <= 12 else present[:12].tolist() + ["..."]
        raise ValueError(
            f"{name} must be 0..C-1 with every class present; found classes {shown} "
            f"({present.numel()} classes, largest id {int(present.max())}): relabel them, e.g. "
            "numpy.unique(labels, return_inverse=True)"
        )
    return labels


def nearest_hint(value, choices: Sequence) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a mistyped string ``value``, else ``""``.

    The closest choice by spelling, else the one choice that an abbreviation ``value`` begins
    (``w`` for ``weight``).

    Examples:
        >>> nearest_hint("symetric", ("symmetric", "row", "none"))
        " (did you mean 'symmetric'?)"
        >>> nearest_hint("w", ("source", "target", "weight"))
        " (did you mean 'weight'?)"
        >>> nearest_hint(3, (1, 2))
        ''
    """
    if not isinstance(value, str):
        return ""
    names = [c for c in choices if isinstance(c, str)]
    close = difflib.get_close_matches(value, names, n=1)
    if not close and value:
        close = [name for name in names if name.lower().startswith(value.lower())]
    return f" (did you mean {close[0]!r}?)" if len(close) == 1 else ""


def check_choice(value: _T, name: str, choices: Sequence[object]) -> _T:
    """``value`` must be one of ``choices`` (a mistyped string is told the nearest choice)."""
    if value not in choices:
        raise ValueError(
            f"{name} must be one of {tuple(choices)}, got {value!r}{nearest_hint(value, choices)}"
        )
    return value


class UnknownNameError(KeyError, ValueError):
    """A name that no registry of its family holds (the message lists the valid ones).

    A ``KeyError`` (a lookup by name failed) and a ``ValueError`` (a bad value was given), so that callers
    that catch either see it.
    """

    def __str__(self) -> str:  # KeyError quotes its argument; show the message as written
        return str(self.args[0])


def unknown_name(kind: str, name: str, valid: Sequence[str]) -> UnknownNameError:
    """The error for a name missing from a name table, suggesting the nearest valid name.

    Args:
        kind: what the name names (``"task"``, ``"model"``, ``"dataset"``).
        name: the name given.
        valid: the registered names.

    Examples:
        >>> print(unknown_name("model", "gnc", ["gcn", "gat"]))
        unknown model 'gnc' (did you mean 'gcn'?); valid: gat, gcn
    """
    return UnknownNameError(
        f"unknown {kind} {name!r}{nearest_hint(name, valid)}; valid: {', '.join(sorted(valid))}"
    )


#: the words a boolean environment variable may hold (any case), and what they mean
_FLAG_WORDS = {
    "1": True,
    "true": True,
    "on": True,
    "yes": True,
    "0": False,
    "false": False,
    "off": False,
    "no": False,
}


def environment_flag(name: str, default: bool) -> bool:
    """The boolean environment variable ``$name``: ``1``/``true``/``on``/``yes`` or ``0``/``false``/``off``/
    ``no`` in any case; unset or blank gives ``default``; anything else is refused naming the variable.

    Examples:
        >>> os.environ["DEMO_SWITCH"] = "Off"
        >>> environment_flag("DEMO_SWITCH", True)
        False
        >>> os.environ["DEMO_SWITCH"] = "maybe"
        >>> environment_flag("DEMO_SWITCH", True)
        Traceback (most recent call last):
        ...
        ValueError: $DEMO_SWITCH='maybe' is not valid: expected 1/true/on/yes or 0/false/off/no
        >>> del os.environ["DEMO_SWITCH"]
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    value = _FLAG_WORDS.get(text.lower())
    if value is None:
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ValueError(f"${name}={shown!r} is not valid: expected 1/true/on/yes or 0/false/off/no")
    return value


@overload
def environment_number(
    name: str,
    default: float,
    *,
    minimum_exclusive: float = ...,
    integer: Literal[False] = ...,
    maximum: Optional[float] = ...,
) -> float: ...
@overload
def environment_number(
    name: str,
    default: None,
    *,
    minimum_exclusive: float = ...,
    integer: Literal[True],
    maximum: Optional[float] = ...,
) -> Optional[int]: ...
@overload
def environment_number(
    name: str,
    default: Optional[float],
    *,
    minimum_exclusive: float = ...,
    integer: bool = ...,
    maximum: Optional[float] = ...,
) -> Union[int, float, None]: ...


def environment_number(
    name: str,
    default: Optional[float],
    *,
    minimum_exclusive: float = 0,
    integer: bool = False,
    maximum: Optional[float] = None,
) -> Optional[float]:
    """The number in the environment variable ``$name`` (``default`` when it is unset or empty).

    Integers are decimal digits with an optional sign (``1_0``, ``0x10`` and ``1e3`` are refused); other
    numbers are decimal with an optional fraction and exponent (``1.5``, ``2e1``); ``inf``, ``nan`` and a
    unit such as ``5G`` are refused. The value must exceed ``minimum_exclusive`` and, if given, not exceed
    ``maximum``.

    Args:
        name: the variable's name, without the ``$``.
        default: the value when the variable is unset or blank (returned as is, unchecked).
        minimum_exclusive: the value must be greater than this (default: ``0``).
        integer: read an ``int`` instead of a ``float`` (default: ``False``).
        maximum: the largest value allowed (default: ``None``, no bound).

    Returns:
        The number, or ``default``.

    Raises:
        ValueError: one line naming ``$name``, its value and what is expected.

    Examples:
        >>> os.environ["DEMO_TIMEOUT"] = "2.5"
        >>> environment_number("DEMO_TIMEOUT", 10.0)
        2.5
        >>> os.environ["DEMO_TIMEOUT"] = "-5G"
        >>> environment_number("DEMO_TIMEOUT", 10.0)
        Traceback (most recent call last):
        ...
        ValueError: $DEMO_TIMEOUT='-5G' is not valid: expected a finite number > 0
        >>> del os.environ["DEMO_TIMEOUT"]
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    if integer:
        low = math.floor(minimum_exclusive) + 1
        expected = f"an integer >= {low}" + (f" and <= {_plain(maximum)}" if maximum is not None else "")
        pattern = r"[-+]?[0-9]+"
    else:
        expected = f"a finite number > {_plain(minimum_exclusive)}" + (
            f" and <= {_plain(maximum)}" if maximum is not None else ""
        )
        pattern = r"[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?"
    value = None
    if re.fullmatch(pattern, text) and len(text) <= 400:
        value = int(text) if integer else float(text)
    if (
        value is None
        or (not integer and not math.isfinite(value))
        or value <= minimum_exclusive
        or (maximum is not None and value > maximum)
    ):
        raise ValueError(f"${name}={text!r} is not valid: expected {expected}")
    return value


def _plain(number: float) -> str:
    """``10000000`` for ``1e7``, ``0.5`` for ``0.5``: a bound as a person writes it."""
    return str(int(number)) if float(number).is_integer() else f"{number:g}"
