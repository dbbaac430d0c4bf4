r"""Feature transformations of transductive few-shot learning, batched over tasks.

Diff-ResNet (Wang et al., Appendix E.3.1) adopts three tricks of SimpleShot, LaplacianShot and
BD-CSPN, all on tensors of shape ``(T, n, M)`` (``T`` tasks):

* :func:`centre_and_normalize` — ``x ← (x − x̄_base) / ‖x − x̄_base‖₂``;
* :func:`cross_domain_shift` — queries move by ``Δ = mean(support) − mean(query)`` (per task),
  and are not renormalized afterwards (as in the reference code);
* :func:`standardize_scale` — raw features in units of their task's support spread, so that every
  method reads ``c·x`` as it reads ``x`` (L2-normalized features have their scale already);
* :func:`rectified_prototypes` — prototypes re-estimated from support and queries:

    $$
        s_{ic} = T\cos(z_i, m_c),\quad \hat y_i = \arg\max_c s_{ic},\quad
        w_{ic} = \operatorname{softmax}_c(s_{ic}),\quad
        \tilde m_c = \frac{1}{|\{i : \hat y_i = c\}|} \sum_{\hat y_i = c} w_{ic} z_i ,
    $$

  over ``z`` = support ∪ query with temperature ``T = 10``: the form the Diff-ResNet code
  computes (the paper prints a softmax over samples instead). A class that receives no
  point keeps its support prototype.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch.nn import functional as F

__all__ = [
    "centre_and_normalize",
    "cross_domain_shift",
    "prototypes",
    "rectified_prototypes",
    "standardize_scale",
    "RECTIFICATION_TEMPERATURE",
    "MAX_RELATIVE_MAGNITUDE",
]

RECTIFICATION_TEMPERATURE = 10.0
#: the largest |value| a standardized task may hold (2^50): its squares stay far inside float32's range.
MAX_RELATIVE_MAGNITUDE = 2.0**50


def _power_of_two(features: torch.Tensor, dims) -> torch.Tensor:
    """``2^e`` with ``e`` the binary exponent of the largest ``|value|`` over ``dims`` (1 where all are 0).

    Dividing by a power of two is exact in floating point: results do not change in the usual range,
    and values near the ends of the range (``1e20``, ``1e-30`` in float32) no longer overflow or
    underflow when squared."""
    largest = features.abs().amax(dim=dims, keepdim=True)
    _, exponent = torch.frexp(largest)
    scale = torch.ldexp(torch.ones_like(largest), exponent)
    return torch.where(largest > 0, scale, torch.ones_like(largest))


def unit_length(features: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """Every vector along ``dim`` scaled to unit length, at any magnitude: an exact power-of-two rescaling
    first, so that ``1e20``- or ``1e-30``-sized vectors (whose squared norms overflow or underflow in float32)
    give the same unit vectors as ``1``-sized ones; zero vectors stay zero.

    Examples:
        >>> import torch
        >>> unit_length(torch.tensor([[3e20, 4e20], [3e-30, 4e-30]])).tolist()
        [[0.6000000238418579, 0.800000011920929], [0.6000000238418579, 0.800000011920929]]
    """
    return F.normalize(features / _power_of_two(features, dim), dim=dim)


def centre_and_normalize(
    features: torch.Tensor, base_mean: Optional[torch.Tensor] = None, *, normalize: bool = True
) -> torch.Tensor:
    """Subtract the base-class mean (if given) and scale every feature vector to unit length (if asked).

    The length is computed after an exact power-of-two rescaling of each vector, so vectors of any
    magnitude (``1e20``, ``1e-30``) reach unit length; zero vectors stay zero."""
    if base_mean is not None:
        features = features - base_mean.to(features)
    if normalize:
        features = unit_length(features, -1)
    return features


def standardize_scale(support: torch.Tensor, query: torch.Tensor) -> tuple:
    """Both sets of every task divided by the root-mean-square distance of its support points to their mean.

    Shapes ``(T, S, M)`` and ``(T, Q, M)``, returned in the same shapes. The unit depends on the
    support set only, so a query's features never change another query's unit, and ``c·x`` gives
    the same result as ``x`` for any ``c > 0`` (up to round-off). Where the support points all
    coincide their root-mean-square norm is the unit (1 if they are zero).

    Raises:
        ValueError: a query lies more than ``2^50`` units from the origin (its squared distances
            would overflow); such a query is not on the support's scale at all.
    """
    exact = _power_of_two(support, (1, 2))
    support, query = support / exact, query / exact
    spread = (support - support.mean(1, keepdim=True)).square().sum(2).mean(1).sqrt()  # (T,)
    size = support.square().sum(2).mean(1).sqrt()
    unit = torch.where(spread > 0, spread, torch.where(size > 0, size, torch.ones_like(size)))[:, None, None]
    support, query = support / unit, query / unit
    if query.numel() and bool(query.abs().amax() > MAX_RELATIVE_MAGNITUDE):
        worst = int(query.abs().amax((1, 2)).argmax())
        raise ValueError(
            f"task {worst}: a query lies more than 2^50 times the support's spread from the origin; "
            "the features of the queries and the support are not on one scale"
        )
    return support, query


def cross_domain_shift(support: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """Queries shifted by ``mean(support) − mean(query)`` of their own task; shapes ``(T, n, M)``."""
    return query + (support.mean(1, keepdim=True) - query.mean(1, keepdim=True))


def prototypes(support: torch.Tensor, labels: torch.Tensor, ways: int) -> torch.Tensor:
    """Class means of the support set: ``(T, S, M)``, labels ``(T, S)`` → ``(T, C, M)``."""
    onehot = F.one_hot(labels, ways).to(support.dtype)  # (T, S, C)
    counts = onehot.sum(1).clamp_min(1.0)  # (T, C)
    return torch.bmm(onehot.transpose(1, 2), support) / counts[..., None]


def rectified_prototypes(
    support: torch.Tensor,
    labels: torch.Tensor,
    query: torch.Tensor,
    ways: int,
    *,
    temperature: float = RECTIFICATION_TEMPERATURE,
    weighted_mean: bool = False,
) -> torch.Tensor:
    """Prototypes re-estimated from support ∪ query (module docstring); ``(T, C, M)``.

    ``weighted_mean=True`` divides by the sum of the weights ``Σ w_ic`` instead of the count, a
    true weighted mean (BD-CSPN's form): the Diff-ResNet form shrinks each prototype by its
    class's mean weight, which Euclidean distances notice and cosines do not."""
    plain = prototypes(support, labels, ways)
    points = torch.cat([support, query], 1)  # (T, N, M)
    scores = temperature * torch.bmm(unit_length(points), unit_length(plain).transpose(1, 2))
    assigned = F.one_hot(scores.argmax(2), ways).to(points.dtype)  # (T, N, C)
    weighted = assigned * scores.softmax(2)
    counts = assigned.sum(1)  # (T, C)
    norms = weighted.sum(1) if weighted_mean else counts
    floor = 1e-12 if weighted_mean else 1.0
    rectified = torch.bmm(weighted.transpose(1, 2), points) / norms.clamp_min(floor)[..., None]
    return torch.where(counts[..., None] > 0, rectified, plain)
