r"""A network as a transport of the data: line-shape and optimal-transport scores ("A Mathematical Principle
of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space", §5).

A *track* is the sequence of representations of one data point through ``n`` blocks of equal width,
``x^{(0)} → x^{(1)} → … → x^{(n)}``; here an array ``(m, n + 1, d)`` of ``m`` tracks.

* **LSR** (eq. 42): ``Σ_l ‖x^{(l+1)} − x^{(l)}‖ / ‖x^{(n)} − x^{(0)}‖`` — length over displacement, ``≥ 1``.
* **LSS** (eqs. 43–44): the same after every segment is scaled to unit length,
  ``x̃^{(l)} = x̃^{(l−1)} + (x^{(l)} − x^{(l−1)}) / ‖x^{(l)} − x^{(l−1)}‖``, ``LSS = n / ‖x̃^{(n)} −
  x̃^{(0)}‖`` — ``1`` exactly on a straight track, insensitive to one dominating segment.
* **OTS** (eqs. 45–47): the exact optimal assignment ``σ`` between the inputs ``x_i`` and the outputs
  ``ỹ_j = f(x_j)`` for the cost ``‖x_i − ỹ_j‖²``; ``OTS = #{i : σ(i) = i} / m``, the fraction of points the
  network sends where the optimal transport map does. ``W₂²`` of the two empirical measures is the
  optimal mean cost (eq. 45).
* **Track distance** (eq. 35): ``min_l ‖x_s^{(l)} − x_t^{(l)}‖``; **Theorem 1** (eq. 36): for an optimal
  transport map ``T`` and the straight tracks ``x^{(t)} = (1 − t) x + t T(x)``, the distance of two tracks is
  at least ``‖x_p − x_q‖ ‖T x_p − T x_q‖ / √(‖x_p − x_q‖² + ‖T x_p − T x_q‖²)``.

Degenerate tracks follow documented conventions and never give NaN: a track of total length 0 (every
point equal) is a straight line (LSR = LSS = 1); zero-length segments are left out of LSS's unit steps
(and of ``n``); a track that returns to its start with positive length has LSR = LSS = ``inf``.
Assignments, all exact: ``lap.lapjv`` (Jonker–Volgenant, the paper's algorithm; a dependency of pdenets),
``scipy.optimize.linear_sum_assignment`` and POT's ``ot.emd`` (network simplex; ``pip install pot``).
``solver="auto"`` (default) takes ``lapjv`` — measured fastest in ``benchmarks/ots.py`` (1.3–2.3× scipy,
POT 0.4–0.5×) — and scipy where ``lap`` is missing.
"""

from __future__ import annotations

import math
from typing import Tuple

import numpy as np
import torch

from ..operators.knn import centred, pairwise_sq_distances

__all__ = [
    "segment_lengths",
    "line_shape_ratio",
    "line_shape_score",
    "segment_proportions",
    "optimal_assignment",
    "optimal_transport_score",
    "wasserstein2_squared",
    "track_distance",
    "theorem1_lower_bound",
    "ASSIGNMENT_SOLVERS",
    "squared_distances",
]

ASSIGNMENT_SOLVERS = ("auto", "scipy", "pot", "lapjv")


def _tracks(track, name: str = "tracks") -> torch.Tensor:
    tensor = torch.as_tensor(track)
    if not tensor.is_floating_point():
        tensor = tensor.to(torch.float64)
    if tensor.dim() == 2:
        tensor = tensor.unsqueeze(0)
    if tensor.dim() != 3 or tensor.shape[1] < 2 or tensor.shape[0] < 1:
        raise ValueError(
            f"{name} must have shape (m, n + 1, d) with n >= 1 (at least two points per track), got "
            f"{tuple(tensor.shape)}"
        )
    if not torch.isfinite(tensor).all():
        raise ValueError(f"{name} contain NaN or infinite values")
    return tensor.to(torch.float64)


def segment_lengths(track) -> torch.Tensor:
    """``‖x^{(l+1)} − x^{(l)}‖`` for every track and segment: ``(m, n)``.

    ``x^{(l)}`` is the ``l``-th point of a track and ``‖·‖`` the Euclidean norm; the segment lengths are the
    building blocks of the line-shape ratio (:func:`line_shape_ratio`).

    Args:
        track (torch.Tensor): ``(m, n + 1, d)`` tracks of ``m`` points through ``n`` blocks, or one track
            ``(n + 1, d)``; anything ``torch.as_tensor`` accepts, finite, with ``n ≥ 1``.

    Returns:
        ``(m, n)`` ``float64`` tensor of segment lengths.

    Raises:
        ValueError: if ``track`` does not have shape ``(m, n + 1, d)`` (or ``(n + 1, d)``) with ``n ≥ 1``, or
            holds NaN or infinite values.

    Examples:
        >>> import torch
        >>> segment_lengths(torch.tensor([[0., 0.], [3., 4.], [3., 5.]]))
        tensor([[5., 1.]], dtype=torch.float64)
    """
    tensor = _tracks(track)
    return (tensor[:, 1:] - tensor[:, :-1]).norm(dim=-1)


def line_shape_ratio(track) -> torch.Tensor:
    """LSR (eq. 42) of every track, ``(m,)``; 1 for a zero-length track, ``inf`` for a closed one.

    ``LSR = Σ_{l=0}^{n−1} ‖x^{(l+1)} − x^{(l)}‖ / ‖x^{(n)} − x^{(0)}‖``

    the length of the track over its displacement, ``≥ 1`` and ``= 1`` exactly on a straight monotone
    track; the line-shape ratio of "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the
    Wasserstein Space".

    Args:
        track (torch.Tensor): ``(m, n + 1, d)`` tracks of ``m`` points through ``n`` blocks, or one track
            ``(n + 1, d)``; anything ``torch.as_tensor`` accepts, finite, with ``n ≥ 1``.

    Returns:
        ``(m,)`` ``float64`` tensor of ratios in ``[1, ∞]``.

    Raises:
        ValueError: if ``track`` does not have shape ``(m, n + 1, d)`` (or ``(n + 1, d)``) with ``n ≥ 1``, or
            holds NaN or infinite values.

    Examples:
        >>> import torch
        >>> line_shape_ratio(torch.tensor([[[0., 0.], [1., 0.], [2., 0.]], [[0., 0.], [1., 1.], [2., 0.]]]))
        tensor([1.0000, 1.4142], dtype=torch.float64)
    """
    tensor = _tracks(track)
    length = segment_lengths(tensor).sum(1)
    displacement = (tensor[:, -1] - tensor[:, 0]).norm(dim=-1)
    return _ratio(length, displacement)


def _ratio(length: torch.Tensor, displacement: torch.Tensor) -> torch.Tensor:
    scale = length.clamp_min(1e-300)
    straight = length <= 1e-12 * torch.ones_like(length)
    closed = ~straight & (displacement <= 1e-12 * scale)
    out = length / torch.where(closed | straight, torch.ones_like(displacement), displacement)
    out = torch.where(straight, torch.ones_like(out), out)
    return torch.where(closed, torch.full_like(out, math.inf), out)


def line_shape_score(track) -> torch.Tensor:
    """LSS (eqs. 43–44) of every track, ``(m,)``: ``n / ‖Σ_l unit(x^{(l)} − x^{(l−1)})‖``.

    ``unit(v) = v / ‖v‖``: every segment is scaled to unit length, so the score is ``1`` exactly on a straight
    track and insensitive to one dominating segment; the line-shape score of "A Mathematical Principle of Deep
    Learning: Learn the Geodesic Curve in the Wasserstein Space". Zero-length segments are skipped (they have
    no direction) and do not count in ``n``; a track that returns to its start scores ``inf``.

    Args:
        track (torch.Tensor): ``(m, n + 1, d)`` tracks of ``m`` points through ``n`` blocks, or one track
            ``(n + 1, d)``; anything ``torch.as_tensor`` accepts, finite, with ``n ≥ 1``.

    Returns:
        ``(m,)`` ``float64`` tensor of scores in ``[1, ∞]``.

    Raises:
        ValueError: if ``track`` does not have shape ``(m, n + 1, d)`` (or ``(n + 1, d)``) with ``n ≥ 1``, or
            holds NaN or infinite values.

    Examples:
        >>> import torch
        >>> zigzag = torch.tensor([[0., 0.], [1., 1.], [2., 0.], [3., 1.]])
        >>> line_shape_score(zigzag)        # 3 / ‖(3/√2, 1/√2)‖ = 3 / √5
        tensor([1.3416], dtype=torch.float64)
    """
    tensor = _tracks(track)
    steps = tensor[:, 1:] - tensor[:, :-1]
    lengths = steps.norm(dim=-1, keepdim=True)
    scale = tensor.abs().amax(dim=(1, 2), keepdim=True).clamp_min(1.0)
    moving = lengths > 1e-12 * scale
    units = torch.where(
        moving, steps / torch.where(moving, lengths, torch.ones_like(lengths)), torch.zeros_like(steps)
    )
    count = moving.squeeze(-1).sum(1).to(torch.float64)
    displacement = units.sum(1).norm(dim=-1)
    return _ratio(count, displacement)


def segment_proportions(track) -> torch.Tensor:
    """Mean share of each segment in its track's length, ``(n,)`` (Tables 2–3); zero-length tracks left out.

    ``p_l = (1/m') Σ_i ‖x_i^{(l+1)} − x_i^{(l)}‖ / Σ_k ‖x_i^{(k+1)} − x_i^{(k)}‖``

    averaged over the ``m'`` tracks of positive length, as in the segment tables (Tables 2–3) of
    "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space".

    Args:
        track (torch.Tensor): ``(m, n + 1, d)`` tracks of ``m`` points through ``n`` blocks, or one track
            ``(n + 1, d)``; anything ``torch.as_tensor`` accepts, finite, with ``n ≥ 1``.

    Returns:
        ``(n,)`` ``float64`` tensor summing to ``1`` (all zeros when every track has length ``0``).

    Raises:
        ValueError: if ``track`` does not have shape ``(m, n + 1, d)`` (or ``(n + 1, d)``) with ``n ≥ 1``, or
            holds NaN or infinite values.

    Examples:
        >>> import torch
        >>> segment_proportions(torch.tensor([[0., 0.], [3., 4.], [3., 5.]])).round(decimals=4)
        tensor([0.8333, 0.1667], dtype=torch.float64)
    """
    lengths = segment_lengths(track)
    total = lengths.sum(1, keepdim=True)
    keep = total.squeeze(1) > 0
    if not bool(keep.any()):
        return torch.zeros(lengths.shape[1], dtype=torch.float64)
    return (lengths[keep] / total[keep]).mean(0)


def squared_distances(inputs: torch.Tensor, outputs: torch.Tensor) -> torch.Tensor:
    """``‖x_i − y_j‖²`` as an ``(m, m)`` float64 matrix, computed on centred points (no shared offset to
    cancel).

    Entry ``(i, j)`` is the squared Euclidean distance between input ``x_i`` and output ``y_j``: the cost
    matrix of the optimal assignment behind :func:`optimal_transport_score` and :func:`wasserstein2_squared`.

    Args:
        inputs: ``(m, d)`` points ``x_i``.
        outputs: ``(m', d)`` points ``y_j`` (``m' = m`` for an assignment).

    Returns:
        ``(m, m')`` ``float64`` tensor of squared distances.

    Examples:
        >>> import torch
        >>> squared_distances(torch.tensor([[0.], [1.]]), torch.tensor([[3.], [2.]]))
        tensor([[9., 4.],
                [4., 1.]], dtype=torch.float64)
    """
    points, queries = centred(outputs.to(torch.float64), inputs.to(torch.float64))
    return pairwise_sq_distances(queries, points)


def optimal_assignment(cost, solver: str = "auto") -> np.ndarray:
    """``σ`` minimizing ``Σ_i cost[i, σ(i)]`` over permutations (square ``cost``), exactly.

    ``σ`` is a permutation of ``0 … m − 1`` and ``cost[i, j]`` the cost of sending point ``i`` to point ``j``.
    The solvers, all exact: ``"lapjv"`` (Jonker–Volgenant, ``lap.lapjv``), ``"scipy"``
    (``scipy.optimize.linear_sum_assignment``) and ``"pot"`` (POT's network simplex ``ot.emd``); ``"auto"``
    takes ``lapjv`` and falls back to scipy where ``lap`` is missing.

    Args:
        cost (np.ndarray): ``(m, m)`` finite cost matrix, ``m ≥ 1`` (anything ``np.asarray`` accepts).
        solver: ``"auto"``, ``"lapjv"``, ``"scipy"`` or ``"pot"`` (default: ``"auto"``).

    Returns:
        ``(m,)`` ``int64`` array ``σ``: ``σ[i]`` is the column assigned to row ``i``.

    Raises:
        ValueError: if ``cost`` is not a non-empty square matrix, holds NaN or infinite values, or
            ``solver`` is unknown.
        ImportError: if ``solver="lapjv"`` or ``"pot"`` and its package is missing.

    Examples:
        >>> import numpy as np
        >>> optimal_assignment(np.array([[4.0, 1.0], [2.0, 8.0]])).tolist()
        [1, 0]
    """
    matrix = np.ascontiguousarray(np.asarray(cost, dtype=np.float64))
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1] or matrix.shape[0] == 0:
        raise ValueError(f"the cost must be a non-empty square matrix, got shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError("the cost matrix contains NaN or infinite values")
    if solver == "auto":
        try:
            import lap  # noqa: F401

            solver = "lapjv"
        except ImportError:
            solver = "scipy"
    if solver == "scipy":
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(matrix)
        out = np.empty(len(rows), dtype=np.int64)
        out[rows] = cols
        return out
    if solver == "pot":
        try:
            import ot
        except ImportError:
            raise ImportError("solver='pot' needs POT: pip install pot") from None
        size = matrix.shape[0]
        weights = np.full(size, 1.0 / size)
        plan = ot.emd(weights, weights, matrix, numItermax=max(100_000, 50 * size * size))
        return plan.argmax(1).astype(np.int64)
    if solver == "lapjv":
        try:
            import lap
        except ImportError:
            raise ImportError("solver='lapjv' needs lap: pip install lap") from None
        _, assignment, _ = lap.lapjv(matrix, extend_cost=False)
        return np.asarray(assignment, dtype=np.int64)
    raise ValueError(f"solver must be one of {ASSIGNMENT_SOLVERS}, got {solver!r}")


def _pair(inputs, outputs) -> Tuple[torch.Tensor, torch.Tensor]:
    x, y = torch.as_tensor(inputs), torch.as_tensor(outputs)
    x = x.reshape(x.shape[0], -1) if x.dim() > 1 else x[:, None]
    y = y.reshape(y.shape[0], -1) if y.dim() > 1 else y[:, None]
    if x.shape != y.shape:
        raise ValueError(
            f"inputs and outputs must have the same shape (m, d) — one stage of equal width — got "
            f"{tuple(x.shape)} and {tuple(y.shape)}"
        )
    if x.shape[0] < 2:
        raise ValueError(f"an assignment score needs at least 2 points, got {x.shape[0]}")
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("inputs or outputs contain NaN or infinite values")
    from ..data.limits import MEMORY_BUDGET_ENV_VAR, format_bytes, memory_budget

    needed = 2 * 8 * x.shape[0] ** 2  # the m × m float64 cost matrix and the solver's copy of it
    if needed > memory_budget():
        raise ValueError(
            f"an exact assignment of {x.shape[0]} points needs {format_bytes(needed)} for its m × m cost "
            f"matrices, more than the memory budget {format_bytes(memory_budget())}: subsample the "
            f"points (record_tracks(..., max_points=...)) or raise ${MEMORY_BUDGET_ENV_VAR}"
        )
    return x, y


def optimal_transport_score(inputs, outputs, *, solver: str = "auto", return_assignment: bool = False):
    """OTS (eq. 47): the fraction of ``i`` with ``σ(i) = i`` for the optimal assignment of eq. 46.

    ``OTS = #{i : σ(i) = i} / m`` with ``σ = argmin_σ Σ_i ‖x_i − ỹ_{σ(i)}‖²`` over permutations: the fraction
    of points the network sends where the optimal transport map does, the optimal transport score of "A
    Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein Space".
    ``inputs[i]`` is mapped by the network to ``outputs[i]``. Exact ties in the cost (repeated points) make
    ``σ`` non-unique; the score then depends on the solver's choice.

    Args:
        inputs (torch.Tensor): ``(m, d)`` points ``x_i`` (or ``(m, ...)``, flattened), at least two.
        outputs (torch.Tensor): ``(m, d)`` images ``ỹ_i = f(x_i)`` of the same shape, row ``i`` the image of
            ``inputs[i]``.
        solver: the exact assignment solver: ``"auto"``, ``"lapjv"``, ``"scipy"`` or ``"pot"`` (see
            :func:`optimal_assignment`) (default: ``"auto"``).
        return_assignment: also return ``σ`` (default: ``False``).

    Returns:
        (float | tuple[float, np.ndarray]): The score in ``[0, 1]``, or ``(score, σ)`` with ``σ`` the
            ``(m,)`` ``int64`` optimal assignment when ``return_assignment`` is ``True``.

    Raises:
        ValueError: if ``inputs`` and ``outputs`` differ in shape, hold fewer than two points or non-finite
            values, or the ``m × m`` cost matrices exceed the memory budget; also as
            :func:`optimal_assignment`.
        ImportError: if the chosen solver's package is missing.

    Examples:
        >>> import torch
        >>> x = torch.randn(50, 1)
        >>> optimal_transport_score(x, 3 * x + 1)        # a monotone map in 1-D is optimal
        1.0
    """
    x, y = _pair(inputs, outputs)
    assignment = optimal_assignment(squared_distances(x, y).numpy(), solver)
    score = float(np.mean(assignment == np.arange(len(assignment))))
    return (score, assignment) if return_assignment else score


def wasserstein2_squared(inputs, outputs, *, solver: str = "auto") -> float:
    """``W₂²`` between the empirical measures of equally many points (eq. 45): the optimal mean squared cost.

    ``W₂²(μ, ν) = min_σ (1/m) Σ_i ‖x_i − ỹ_{σ(i)}‖²`` over permutations ``σ``, for ``μ`` and ``ν`` the uniform
    measures on the ``m`` inputs and outputs (eq. 45 of "A Mathematical Principle of Deep Learning: Learn
    the Geodesic Curve in the Wasserstein Space").

    Args:
        inputs (torch.Tensor): ``(m, d)`` points ``x_i`` (or ``(m, ...)``, flattened), at least two.
        outputs (torch.Tensor): ``(m, d)`` images ``ỹ_i = f(x_i)`` of the same shape, row ``i`` the image of
            ``inputs[i]``.
        solver: the exact assignment solver: ``"auto"``, ``"lapjv"``, ``"scipy"`` or ``"pot"`` (see
            :func:`optimal_assignment`) (default: ``"auto"``).

    Returns:
        The squared 2-Wasserstein distance ``W₂² ≥ 0``.

    Raises:
        ValueError: if ``inputs`` and ``outputs`` differ in shape, hold fewer than two points or non-finite
            values, or the ``m × m`` cost matrices exceed the memory budget; also as
            :func:`optimal_assignment`.
        ImportError: if the chosen solver's package is missing.

    Examples:
        >>> import torch
        >>> wasserstein2_squared(torch.tensor([[0.], [1.]]), torch.tensor([[3.], [2.]]))
        4.0
    """
    x, y = _pair(inputs, outputs)
    cost = squared_distances(x, y).numpy()
    assignment = optimal_assignment(cost, solver)
    return float(cost[np.arange(len(assignment)), assignment].mean())


def track_distance(track_s, track_t) -> float:
    """Eq. 35: ``min_l ‖x_s^{(l)} − x_t^{(l)}‖`` of two tracks ``(n + 1, d)``.

    The track distance of "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the
    Wasserstein Space": the closest approach of two points ``s`` and ``t`` taken at the same depth ``l``;
    compare with :func:`theorem1_lower_bound`.

    Args:
        track_s (torch.Tensor): ``(n + 1, d)`` track of point ``s``.
        track_t (torch.Tensor): ``(n + 1, d)`` track of point ``t``, of the same shape.

    Returns:
        The distance ``≥ 0``.

    Raises:
        ValueError: if a track is not ``(n + 1, d)`` with ``n ≥ 1``, holds NaN or infinite values, or the
            two shapes differ.

    Examples:
        >>> import torch
        >>> s = torch.tensor([[0., 0.], [1., 0.], [2., 0.]])
        >>> t = torch.tensor([[0., 2.], [1., 1.], [2., 3.]])
        >>> track_distance(s, t)
        1.0
    """
    s, t = _tracks(track_s, "track_s")[0], _tracks(track_t, "track_t")[0]
    if s.shape != t.shape:
        raise ValueError(
            f"the two tracks must have the same shape, got {tuple(s.shape)} and {tuple(t.shape)}"
        )
    return float((s - t).norm(dim=-1).min())


def theorem1_lower_bound(x_p, x_q, image_p, image_q) -> float:
    """Eq. 36: ``‖x_p − x_q‖ ‖T x_p − T x_q‖ / √(‖x_p − x_q‖² + ‖T x_p − T x_q‖²)`` (0 when both vanish).

    Theorem 1 of "A Mathematical Principle of Deep Learning: Learn the Geodesic Curve in the Wasserstein
    Space": for an optimal transport map ``T`` and the straight tracks ``x^{(t)} = (1 − t) x + t T(x)``,
    ``t ∈ [0, 1]``, the distance of the tracks of ``x_p`` and ``x_q`` is at least this bound (compare with
    :func:`track_distance`).

    Args:
        x_p (torch.Tensor): the point ``x_p``, any shape.
        x_q (torch.Tensor): the point ``x_q``, of the shape of ``x_p``.
        image_p (torch.Tensor): its image ``T x_p``.
        image_q (torch.Tensor): the image ``T x_q``, of the shape of ``image_p``.

    Returns:
        The lower bound ``≥ 0``.

    Raises:
        ValueError: if ``x_p`` and ``x_q`` (or ``image_p`` and ``image_q``) differ in shape, or a value is
            NaN or infinite.

    Examples:
        >>> theorem1_lower_bound([0., 0.], [3., 0.], [0., 0.], [0., 4.])   # 3 · 4 / 5
        2.4
    """
    points = {
        name: torch.as_tensor(value, dtype=torch.float64)
        for name, value in (("x_p", x_p), ("x_q", x_q), ("image_p", image_p), ("image_q", image_q))
    }
    for first, second in (("x_p", "x_q"), ("image_p", "image_q")):
        if points[first].shape != points[second].shape:
            raise ValueError(
                f"{first} and {second} must have the same shape, got {tuple(points[first].shape)} and "
                f"{tuple(points[second].shape)}"
            )
    bad = [name for name, value in points.items() if not bool(torch.isfinite(value).all())]
    if bad:
        raise ValueError(f"{', '.join(bad)} hold NaN or infinite values")
    before = float((points["x_p"] - points["x_q"]).norm())
    after = float((points["image_p"] - points["image_q"]).norm())
    denominator = math.hypot(before, after)
    return 0.0 if denominator == 0 else before * after / denominator
