"""The results of ``pdenets run coin-claims`` (``results.json``): one entry per check that ran (randomized
smoothing, dropout, propagation), each with its table rows and the run's time, key and status.

Examples:
    >>> record = {"check": "propagation", "seed": 0, "seconds": 0.5, "key": "k", "status": "ok", "rows": [
    ...     {"graph": "g", "propagation": "GCN", "max_abs_difference": 1e-16, "scale": 2.0}]}
    >>> check = PropagationCheck.of(record)
    >>> check.rows[0].max_abs_difference, check.seconds
    (1e-16, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional

from ...experiments.results import OMIT_NONE, TaskResults

__all__ = [
    "SmoothingRow",
    "SmoothingCheck",
    "DropoutRow",
    "DropoutCheck",
    "PropagationRow",
    "PropagationCheck",
    "CoinClaimsResults",
]


def _fields_of(check: type, record: Mapping[str, Any]) -> Dict[str, Any]:
    """The values of a check's fields but ``rows``, read by name from its stored run's record."""
    return {item.name: record[item.name] for item in fields(check) if item.name != "rows"}


def _row(row_type: type, row: Mapping[str, Any]) -> Any:
    """A typed row from a stored row, by the names of its fields (a column a later version added is not
    read)."""
    return row_type(**{item.name: row[item.name] for item in fields(row_type)})


@dataclass(frozen=True)
class SmoothingRow:
    """Randomized smoothing at one noise scale: Monte Carlo ``E f(x + σε)`` for ``f(x) = sin(ωᵀx)`` at 8
    points against the heat semigroup at ``t = σ²``.

    Args:
        sigma: the noise scale ``σ``.
        max_error: the largest absolute error, over the points, of the estimate against the closed form.
        max_half_width: the largest half-width, over the points, of the estimates' 99 % intervals.
        inside: the points whose closed form lies inside their interval.
        points: the points estimated.
        max_error_wrong_time: the largest absolute error against the heat semigroup at the wrong time
            ``t = σ``.
        estimates: the Monte Carlo estimate at each point.
        exact: the closed form at each point.
        half_widths: the half-width of each point's 99 % interval.
    """

    sigma: float
    max_error: float
    max_half_width: float
    inside: int
    points: int
    max_error_wrong_time: float
    estimates: List[float]
    exact: List[float]
    half_widths: List[float]


@dataclass(frozen=True)
class SmoothingCheck:
    """The randomized-smoothing check: randomized smoothing is the heat equation ``u_t = ½Δu`` at ``t = σ²``.

    Args:
        rows: one row per noise scale, in the order of ``sigmas``.
        norm_omega_sq: ``‖ω‖²`` of the sine's frequency vector.
        seconds: wall-clock seconds of the check.
        key: the run's key in the results store.
        status: the run's status in the results store (``ok``).
    """

    rows: List[SmoothingRow]
    norm_omega_sq: float
    seconds: float
    key: str
    status: str

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "SmoothingCheck":
        """The check from its stored run's record."""
        return cls(rows=[_row(SmoothingRow, row) for row in record["rows"]], **_fields_of(cls, record))


@dataclass(frozen=True)
class DropoutRow:
    """Dropout at one rate ``p``: the diffusion term's predictions against Monte Carlo over dropout masks.

    Args:
        p: the drop rate.
        variance_predicted: the predicted read-out variance ``p/(1−p) Σ_i W_ki² h_i²`` of each output ``k``.
        variance_monte_carlo: each output's variance over the masks.
        max_relative_error: the largest relative error (a fraction) of the predicted variance against Monte
            Carlo, over the outputs.
        quadratic_mean_predicted: the second-order (diffusion) prediction of the mean of ``hᵀAh``.
        quadratic_mean_monte_carlo: the mean of ``hᵀAh`` over the masks.
        quadratic_standard_error: the standard error of that mean.
        quadratic_without_diffusion: ``hᵀAh`` without dropout (the prediction without the diffusion term).
    """

    p: float
    variance_predicted: List[float]
    variance_monte_carlo: List[float]
    max_relative_error: float
    quadratic_mean_predicted: float
    quadratic_mean_monte_carlo: float
    quadratic_standard_error: float
    quadratic_without_diffusion: float


@dataclass(frozen=True)
class DropoutCheck:
    """The dropout check: dropout is a diffusion term with coefficient ``p/(1−p)·h²``.

    Args:
        rows: one row per drop rate, in the order of ``drop_rates``.
        masks: the dropout masks drawn per rate.
        seconds: wall-clock seconds of the check.
        key: the run's key in the results store.
        status: the run's status in the results store (``ok``).
    """

    rows: List[DropoutRow]
    masks: int
    seconds: float
    key: str
    status: str

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "DropoutCheck":
        """The check from its stored run's record."""
        return cls(rows=[_row(DropoutRow, row) for row in record["rows"]], **_fields_of(cls, record))


@dataclass(frozen=True)
class PropagationRow:
    """One propagation on one graph: pdenets' diffusion steps against PyTorch Geometric's layer (float64).

    Args:
        graph: the graph (a random graph, or Cora undirected or as stored).
        propagation: the identity checked, e.g. ``"GCN = 1 step, γ = 1"``.
        max_abs_difference: the largest absolute difference between the two outputs.
        scale: the largest absolute output of PyTorch Geometric's layer (what the difference compares to).
    """

    graph: str
    propagation: str
    max_abs_difference: float
    scale: float


@dataclass(frozen=True)
class PropagationCheck:
    """The propagation check: GNN propagation is diffusion with the normalized Laplacian.

    Args:
        rows: one row per graph and propagation.
        seconds: wall-clock seconds of the check.
        key: the run's key in the results store.
        status: the run's status in the results store (``ok``).
    """

    rows: List[PropagationRow]
    seconds: float
    key: str
    status: str

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> "PropagationCheck":
        """The check from its stored run's record."""
        return cls(rows=[_row(PropagationRow, row) for row in record["rows"]], **_fields_of(cls, record))


@dataclass(frozen=True)
class CoinClaimsResults(TaskResults):
    """The results of the COIN claims: one entry per check, ``None`` (and left out of ``results.json``)
    for a check that did not run.

    Args:
        smoothing: the randomized-smoothing check.
        dropout: the dropout check.
        propagation: the propagation check.
    """

    smoothing: Optional[SmoothingCheck] = field(default=None, metadata=OMIT_NONE)
    dropout: Optional[DropoutCheck] = field(default=None, metadata=OMIT_NONE)
    propagation: Optional[PropagationCheck] = field(default=None, metadata=OMIT_NONE)
