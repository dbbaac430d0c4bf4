r"""Calibration of class probabilities: is a prediction given with confidence 0.9 right nine times in ten?

A classifier's confidence on item $i$ is its largest class probability $\hat p_i = \max_c p_{ic}$,
its prediction $\hat y_i = \arg\max_c p_{ic}$. Split ``[0, 1]`` into $B$ bins of equal width
$(\tfrac{b-1}{B}, \tfrac{b}{B}]$ (a confidence of 0 in the first); bin $b$ holds the items
$I_b$. The expected calibration error (Guo et al., 2017, eq. 3) is

$$
    \mathrm{ECE} = \sum_{b=1}^{B} \frac{|I_b|}{n}\,
    \Bigl|\tfrac{1}{|I_b|}\textstyle\sum_{i \in I_b} [\hat y_i = y_i]
    - \tfrac{1}{|I_b|}\sum_{i \in I_b} \hat p_i\Bigr|,
$$

the gap between accuracy and confidence, weighted by how many items each bin holds: 0 for a calibrated
classifier, at most 1.

Temperature scaling (Guo et al., §4.2) divides a model's logits $z_i$ by one number $T > 0$ fitted
on held-out labelled items, $p_i = \mathrm{softmax}(z_i / T)$: the predictions stay the same, their
confidences grow sharper ($T < 1$) or softer ($T > 1$). :func:`fit_temperature` minimizes the
held-out negative log-likelihood over $\beta = 1 / T$,

$$
    \mathrm{NLL}(\beta) = \frac{1}{n} \sum_i \Bigl(\log \sum_c e^{\beta z_{ic}} - \beta z_{i y_i}\Bigr),
    \qquad \mathrm{NLL}'(\beta) = \frac{1}{n} \sum_i \bigl(\mathbb{E}_{p_i}[z_i] - z_{i y_i}\bigr),
$$

which is convex in $\beta$ (its second derivative is the mean variance of $z_i$ under
$p_i$), so the root of the derivative is found by bisection, within
``[MIN_TEMPERATURE, MAX_TEMPERATURE]``; a weak prior keeps $\beta$ finite where the held-out items are
few and all right (:func:`fit_temperature`). A model that gives probabilities and no logits is scaled through
their logarithms (the same softmax).

:func:`expected_accuracy` estimates the accuracy on items without a label from calibrated probabilities:
item $i$ is right with probability $\hat p_i$, so the expected share right is the mean
confidence, with the spread of a sum of independent Bernoulli draws. It is only as good as the calibration.

Examples:
    >>> import torch
    >>> probabilities = torch.tensor([[0.95, 0.05], [0.85, 0.15], [0.25, 0.75], [0.65, 0.35]])
    >>> labels = torch.tensor([0, 1, 1, 0])  # right, wrong, right, right; each in a bin of its own
    >>> round(expected_calibration_error(probabilities, labels, num_bins=10), 6)  # (.05+.85+.25+.35)/4
    0.375
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np
import torch

__all__ = [
    "ReliabilityBins",
    "reliability_bins",
    "expected_calibration_error",
    "fit_temperature",
    "class_shift_weights",
    "temperature_scaled",
    "expected_accuracy",
    "held_out_calibration",
    "cross_fitted_calibration",
    "CalibrationSummary",
    "summarize_calibration",
    "DEFAULT_BINS",
    "MIN_TEMPERATURE",
    "MAX_TEMPERATURE",
]

ArrayLike = Union[torch.Tensor, np.ndarray]

#: the number of equal-width confidence bins (Guo et al., 2017)
DEFAULT_BINS = 15
_BIN_KEYS = ("reliability", "calibrated_reliability")
#: the range a fitted temperature is kept in (and a saved model's temperature is checked against)
MIN_TEMPERATURE = 1e-2
MAX_TEMPERATURE = 1e2


def _probabilities_and_labels(
    probabilities: ArrayLike, labels: ArrayLike
) -> Tuple[torch.Tensor, torch.Tensor]:
    p = torch.as_tensor(probabilities).detach().to("cpu", torch.float64)
    y = torch.as_tensor(labels).detach().to("cpu")
    if p.dim() != 2 or p.shape[1] < 2:
        raise ValueError(f"probabilities must be (N, C) with C ≥ 2 classes, got shape {tuple(p.shape)}")
    if y.shape != (p.shape[0],):
        raise ValueError(
            f"labels must be ({p.shape[0]},), one per row of the probabilities, got {tuple(y.shape)}"
        )
    if y.is_floating_point() or y.dtype == torch.bool:
        raise ValueError(f"labels must be whole class numbers, got {y.dtype}")
    if p.shape[0] == 0:
        raise ValueError("no items to measure calibration on")
    if not torch.isfinite(p).all() or (p < 0).any() or (p > 1).any():
        raise ValueError("probabilities must be finite and in [0, 1]")
    if (y < 0).any() or (y >= p.shape[1]).any():
        raise ValueError(f"labels must be class numbers in [0, {p.shape[1] - 1}]")
    return p, y.long()


@dataclass(frozen=True)
class ReliabilityBins:
    """Items per confidence bin, and their mean confidence and accuracy (a reliability diagram's data).

    Args:
        edges: the ``B + 1`` bin edges, ``0, 1/B, …, 1``.
        counts: items per bin.
        confidence_sums: the sum of the items' confidences per bin.
        correct: items predicted right per bin.

    Sums rather than means, so that the bins of several runs add up (:meth:`merged`).
    """

    edges: List[float]
    counts: List[int]
    confidence_sums: List[float]
    correct: List[int]

    @property
    def total(self) -> int:
        return int(sum(self.counts))

    def confidence(self) -> List[float]:
        """Mean confidence per bin (NaN in an empty bin)."""
        return [s / n if n else math.nan for s, n in zip(self.confidence_sums, self.counts)]

    def accuracy(self) -> List[float]:
        """Accuracy per bin (NaN in an empty bin)."""
        return [c / n if n else math.nan for c, n in zip(self.correct, self.counts)]

    def error(self) -> float:
        """The expected calibration error of the items binned (module docstring)."""
        if not self.total:
            return math.nan
        gaps = (abs(c - s) for c, s in zip(self.correct, self.confidence_sums))
        return float(sum(gaps) / self.total)

    def merged(self, other: "ReliabilityBins") -> "ReliabilityBins":
        """The bins of both sets of items (the same edges)."""
        if len(self.edges) != len(other.edges):
            raise ValueError(f"{len(self.edges) - 1} bins and {len(other.edges) - 1} bins cannot be merged")
        return ReliabilityBins(
            self.edges,
            [a + b for a, b in zip(self.counts, other.counts)],
            [a + b for a, b in zip(self.confidence_sums, other.confidence_sums)],
            [a + b for a, b in zip(self.correct, other.correct)],
        )

    def as_json(self) -> dict:
        return {"counts": self.counts, "confidence_sums": self.confidence_sums, "correct": self.correct}

    @classmethod
    def from_json(cls, document: dict) -> "ReliabilityBins":
        """The bins :meth:`as_json` wrote (``ValueError`` for lists of unequal lengths or negative counts)."""
        counts = [int(n) for n in document["counts"]]
        if (
            not counts
            or len(document["confidence_sums"]) != len(counts)
            or len(document["correct"]) != len(counts)
            or min(counts) < 0
        ):
            raise ValueError("reliability bins of unequal lengths or negative counts")
        edges = np.linspace(0.0, 1.0, len(counts) + 1).tolist()
        return cls(
            edges,
            counts,
            [float(s) for s in document["confidence_sums"]],
            [int(c) for c in document["correct"]],
        )


def reliability_bins(
    probabilities: ArrayLike, labels: ArrayLike, num_bins: int = DEFAULT_BINS
) -> ReliabilityBins:
    """Bin items by their confidence into equal bins ``(lo, hi]`` (module docstring) and count, per bin, the
    items, their confidences and the right predictions.

    Args:
        probabilities: ``(N, C)`` class probabilities.
        labels: ``(N,)`` the items' classes.
        num_bins: the bins of ``[0, 1]`` (default 15).

    Returns:
        The :class:`ReliabilityBins`.
    """
    if isinstance(num_bins, bool) or not isinstance(num_bins, int) or num_bins < 1:
        raise ValueError(f"num_bins must be a whole number ≥ 1, got {num_bins!r}")
    p, y = _probabilities_and_labels(probabilities, labels)
    confidence, predicted = p.max(dim=1)
    which = (torch.ceil(confidence * num_bins).long() - 1).clamp(0, num_bins - 1)
    right = (predicted == y).double()
    counts = torch.bincount(which, minlength=num_bins)
    sums = torch.zeros(num_bins, dtype=torch.float64).index_add_(0, which, confidence)
    correct = torch.zeros(num_bins, dtype=torch.float64).index_add_(0, which, right)
    return ReliabilityBins(
        np.linspace(0.0, 1.0, num_bins + 1).tolist(),
        counts.tolist(),
        sums.tolist(),
        [int(round(c)) for c in correct.tolist()],
    )


def expected_calibration_error(
    probabilities: ArrayLike, labels: ArrayLike, num_bins: int = DEFAULT_BINS
) -> float:
    """The expected calibration error (module docstring), in ``[0, 1]``.

    Args:
        probabilities: ``(N, C)`` class probabilities.
        labels: ``(N,)`` the items' classes.
        num_bins: the equal-width confidence bins (default 15).
    """
    return reliability_bins(probabilities, labels, num_bins).error()


def _logits(scores: ArrayLike, *, log_of_probabilities: bool) -> torch.Tensor:
    z = torch.as_tensor(scores).detach().to("cpu", torch.float64)
    if z.dim() != 2 or z.shape[1] < 2:
        raise ValueError(f"logits must be (N, C) with C ≥ 2 classes, got shape {tuple(z.shape)}")
    if log_of_probabilities:
        z = torch.log(z.clamp_min(1e-300))
    if not torch.isfinite(z).all():
        raise ValueError("logits must be finite")
    return z


def fit_temperature(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    probabilities: bool = False,
    prior_weight: float = 1.0,
    weights: Optional[ArrayLike] = None,
    iterations: int = 100,
) -> float:
    r"""The temperature ``T`` that minimizes the negative log-likelihood of ``softmax(logits / T)`` for
    ``labels`` (module docstring), in ``[MIN_TEMPERATURE, MAX_TEMPERATURE]``.

    A few held-out items that are all right would drive $\beta = 1/T$ to infinity (every confidence to
    1); a Gaussian prior on $\beta$ around 1, of the weight of ``prior_weight`` items, keeps it finite:
    the objective is $n\,\mathrm{NLL}(\beta) + \tfrac{\lambda}{2}(\beta - 1)^2$, still convex. With
    hundreds of items the prior is negligible.

    Args:
        logits: ``(N, C)`` scores of held-out labelled items (a model's logits).
        labels: ``(N,)`` their classes.
        probabilities: ``logits`` are probabilities: scaled through their logarithms.
        prior_weight: $\lambda$, the prior's weight in items (0: the plain maximum likelihood).
        weights: ``(N,)`` a weight per item (scaled to a mean of 1), where the held-out items are drawn
            otherwise than the items to be predicted (:func:`class_shift_weights`); default: equal.
        iterations: bisection steps on ``log β`` (100 reach float64's resolution).

    Returns:
        The temperature; 1 leaves the probabilities as they are.

    Examples:
        >>> import torch
        >>> logits = torch.tensor([[2.0, 0.0], [0.0, 2.0], [2.0, 0.0], [2.0, 0.0]])
        >>> labels = torch.tensor([0, 1, 0, 1])  # 3 of 4 right with the same margin: T fits p = 3/4
        >>> temperature = fit_temperature(logits, labels, prior_weight=0.0)
        >>> round(torch.softmax(logits[0] / temperature, 0)[0].item(), 6)
        0.75
    """
    if not (isinstance(prior_weight, (int, float)) and prior_weight >= 0 and math.isfinite(prior_weight)):
        raise ValueError(f"prior_weight must be a finite number ≥ 0, got {prior_weight!r}")
    z = _logits(logits, log_of_probabilities=probabilities)
    _, y = _probabilities_and_labels(torch.softmax(z, dim=1), labels)
    true = z.gather(1, y[:, None]).squeeze(1)
    pull = prior_weight / z.shape[0]
    share = torch.full((z.shape[0],), 1.0 / z.shape[0], dtype=torch.float64)
    if weights is not None:
        given = torch.as_tensor(weights).detach().to("cpu", torch.float64)
        if (
            given.shape != share.shape
            or not torch.isfinite(given).all()
            or (given < 0).any()
            or given.sum() <= 0
        ):
            raise ValueError(f"weights must be {z.shape[0]} finite numbers ≥ 0, not all 0")
        share = given / given.sum()

    def slope(log_beta: float) -> float:  # the objective's derivative in β, over n: increasing in β
        beta = math.exp(log_beta)
        softmax = torch.softmax(beta * z, dim=1)
        return float((share * ((softmax * z).sum(1) - true)).sum()) + pull * (beta - 1.0)

    low, high = math.log(1.0 / MAX_TEMPERATURE), math.log(1.0 / MIN_TEMPERATURE)
    if slope(low) >= 0:
        return MAX_TEMPERATURE
    if slope(high) <= 0:
        return MIN_TEMPERATURE
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if slope(middle) < 0 else (low, middle)
    return float(math.exp(-0.5 * (low + high)))


def class_shift_weights(held_out_labels: ArrayLike, predicted: ArrayLike, num_classes: int) -> torch.Tensor:
    """Weights that make held-out items drawn class by class (the protocol's validation nodes, so many per
    class) stand for the items to be predicted, whose classes follow the data: item ``i`` of class ``c``
    weighs ``(share of c among predicted) / (share of c among the held-out items)``. ``predicted``: the
    model's classes for the items to be predicted (their labels are unknown), an estimate of their shares.

    Examples:
        >>> class_shift_weights(torch.tensor([0, 0, 1, 1]), torch.tensor([0, 0, 0, 1]), 2).tolist()
        [1.5, 1.5, 0.5, 0.5]
    """
    held_out = torch.as_tensor(held_out_labels).detach().to("cpu").long()
    guessed = torch.as_tensor(predicted).detach().to("cpu").long()
    if not held_out.numel() or not guessed.numel():
        return torch.ones(held_out.numel(), dtype=torch.float64)
    target = torch.bincount(guessed, minlength=num_classes).double() / guessed.numel()
    source = torch.bincount(held_out, minlength=num_classes).double() / held_out.numel()
    return (target / source.clamp_min(1e-12))[held_out]


def temperature_scaled(logits: ArrayLike, temperature: float, *, probabilities: bool = False) -> torch.Tensor:
    """``softmax(logits / temperature)``, ``(N, C)`` in float64.

    Args:
        logits: ``(N, C)`` logits.
        temperature: what they are divided by, in ``[MIN_TEMPERATURE, MAX_TEMPERATURE]``.
        probabilities: ``logits`` are probabilities, scaled through their logarithms.
    """
    if not (isinstance(temperature, (int, float)) and MIN_TEMPERATURE <= temperature <= MAX_TEMPERATURE):
        raise ValueError(
            f"temperature must be in [{MIN_TEMPERATURE}, {MAX_TEMPERATURE}], got {temperature!r}"
        )
    return torch.softmax(_logits(logits, log_of_probabilities=probabilities) / temperature, dim=1)


def held_out_calibration(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    fit_on: ArrayLike,
    measure_on: ArrayLike,
    num_bins: int = DEFAULT_BINS,
    probabilities: bool = False,
    fit_weights: Optional[ArrayLike] = None,
) -> Dict[str, Any]:
    """A model's calibration on held-out labelled items, before and after temperature scaling: the temperature
    fitted on the items ``fit_on`` (validation), the error measured on the items ``measure_on`` (test), which
    the fit never saw.

    Args:
        logits: ``(N, C)`` logits of every item.
        labels: ``(N,)`` their classes (read at ``fit_on`` and ``measure_on`` only).
        fit_on, measure_on: item indices.
        num_bins: the confidence bins.
        probabilities: ``logits`` are probabilities (scaled through their logarithms).
        fit_weights: a weight per item of ``fit_on`` (:func:`fit_temperature`).

    Returns:
        ``temperature``, ``ece`` and ``calibrated_ece`` (on ``measure_on``), and both sets of
        :class:`ReliabilityBins` as JSON (``reliability``, ``calibrated_reliability``); the ``temperature``
        alone where ``measure_on`` is empty, nothing where ``fit_on`` is.
    """
    z = _logits(logits, log_of_probabilities=probabilities)
    y = torch.as_tensor(labels).detach().to("cpu")
    fit_on, measure_on = (torch.as_tensor(part).detach().to("cpu").long() for part in (fit_on, measure_on))
    if not fit_on.numel():
        return {}
    temperature = fit_temperature(z[fit_on], y[fit_on], weights=fit_weights)
    if not measure_on.numel():
        return {"temperature": temperature}
    before = reliability_bins(torch.softmax(z[measure_on], 1), y[measure_on], num_bins)
    after = reliability_bins(temperature_scaled(z[measure_on], temperature), y[measure_on], num_bins)
    return {
        "temperature": temperature,
        "ece": before.error(),
        "calibrated_ece": after.error(),
        "reliability": before.as_json(),
        "calibrated_reliability": after.as_json(),
    }


def cross_fitted_calibration(
    logits: ArrayLike,
    labels: ArrayLike,
    items: ArrayLike,
    *,
    seed: int,
    num_bins: int = DEFAULT_BINS,
    probabilities: bool = False,
) -> Dict[str, Any]:
    """:func:`held_out_calibration` where the held-out labelled ``items`` are all there is (no validation
    set): they are halved at random (``seed``), each half measured with the temperature fitted on the other,
    and both halves' bins added; the ``temperature`` given is the one fitted on all of them (what a model
    calibrated on these items keeps). Nothing where fewer than 4 items are given."""
    z = _logits(logits, log_of_probabilities=probabilities)
    y = torch.as_tensor(labels).detach().to("cpu")
    items = torch.as_tensor(items).detach().to("cpu").long()
    if items.numel() < 4:
        return {}
    order = items[torch.randperm(items.numel(), generator=torch.Generator().manual_seed(int(seed)))]
    first, second = order[: items.numel() // 2], order[items.numel() // 2 :]
    halves = [
        held_out_calibration(z, y, fit_on=a, measure_on=b, num_bins=num_bins)
        for a, b in ((first, second), (second, first))
    ]
    merged = {
        key: ReliabilityBins.from_json(halves[0][key]).merged(ReliabilityBins.from_json(halves[1][key]))
        for key in _BIN_KEYS
    }
    return {
        "temperature": fit_temperature(z[items], y[items]),
        "ece": merged["reliability"].error(),
        "calibrated_ece": merged["calibrated_reliability"].error(),
        **{key: bins.as_json() for key, bins in merged.items()},
    }


@dataclass(frozen=True)
class CalibrationSummary:
    """The calibration of several runs (the records of :func:`held_out_calibration`), as a report gives it.

    Args:
        ece: the expected calibration error of all the runs' measured items together, as trained.
        calibrated_ece: the same with each run's fitted temperature.
        temperature: the median of the runs' temperatures.
        runs: the runs that measured their calibration.
        items: the measured items, all runs together.
        reliability, calibrated_reliability: the runs' bins merged (:class:`ReliabilityBins`).
    """

    ece: float
    calibrated_ece: float
    temperature: float
    runs: int
    items: int
    reliability: ReliabilityBins
    calibrated_reliability: ReliabilityBins


def summarize_calibration(records: Iterable[Mapping[str, Any]]) -> Optional[CalibrationSummary]:
    """The calibration of the runs whose record holds one (:func:`held_out_calibration`'s keys); ``None``
    where none does. A record whose bins are not a calibration's (stored before, cut short) is passed over."""
    temperatures: List[float] = []
    merged: List[Optional[ReliabilityBins]] = [None, None]
    for record in records:
        try:
            bins = [
                ReliabilityBins.from_json(record[key]) for key in ("reliability", "calibrated_reliability")
            ]
            temperature = float(record["temperature"])
            merged = [part if whole is None else whole.merged(part) for whole, part in zip(merged, bins)]
        except (KeyError, TypeError, ValueError):
            continue
        temperatures.append(temperature)
    before, after = merged
    if before is None or after is None:
        return None
    return CalibrationSummary(
        ece=before.error(),
        calibrated_ece=after.error(),
        temperature=float(np.median(temperatures)),
        runs=len(temperatures),
        items=before.total,
        reliability=before,
        calibrated_reliability=after,
    )


def expected_accuracy(probabilities: ArrayLike, *, level: float = 0.95) -> Tuple[float, float, float]:
    """The accuracy to expect on items without a label, from calibrated ``probabilities`` ``(N, C)``: the mean
    confidence, and a ``level`` interval from the spread of ``N`` independent right-or-wrong draws (normal
    approximation, clipped to ``[0, 1]``). Returns ``(estimate, low, high)``."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    p = torch.as_tensor(probabilities).detach().to("cpu", torch.float64)
    if p.dim() != 2 or p.shape[0] == 0:
        raise ValueError(f"probabilities must be (N, C) with N ≥ 1, got shape {tuple(p.shape)}")
    confidence = p.max(dim=1).values
    estimate = float(confidence.mean())
    spread = float(torch.sqrt((confidence * (1 - confidence)).sum())) / p.shape[0]
    z = math.sqrt(2.0) * _erfinv(level)
    return estimate, max(0.0, estimate - z * spread), min(1.0, estimate + z * spread)


def _erfinv(value: float) -> float:
    return float(torch.special.erfinv(torch.tensor(value, dtype=torch.float64)))
