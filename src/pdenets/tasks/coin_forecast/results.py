"""The results of ``pdenets run coin-forecast``: test errors per dataset, protocol and model, and the verdicts
the report states (``results.json`` is :meth:`ForecastResults.to_dict`).

The table holds every model and, beside it, COIN over the model (``coin-over-MODEL``: its forecasts diffused
with the ``(γ, r)`` chosen on the selection days). The verdicts are drawn from the table when the results are
built (:func:`coin_vs_linear`, :func:`diffusion_checks`); the report only states them.

Examples:
    >>> def cell(mse):
    ...     metrics = dict(mse=mse, mae=1.0, top5_share=0.4, mae_by_horizon=[1.0], mse_by_horizon=[mse])
    ...     return ForecastCell(runs=1, seconds_per_run=0.5, errors=ForecastErrors.of([metrics]))
    >>> table = {"chickenpox": {"ours": {"linear": cell(1.2), "coin-forecast": cell(1.0)}}}
    >>> verdict = coin_vs_linear(table)["chickenpox/ours"]
    >>> verdict.coin_beats_linear, verdict.clearly
    (True, True)
    >>> list(table["chickenpox"]["ours"]["linear"].errors.mse.as_dict())
    ['mean', 'std', 'min', 'max', 'median', 'count']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from ...experiments.results import FLATTEN, OMIT_NONE, TaskResults
from ...experiments.summary import Stats

__all__ = [
    "ForecastErrors",
    "ForecastCell",
    "is_coin",
    "CoinVsLinear",
    "DiffusionOver",
    "DiffusionCheck",
    "ForecastResults",
    "ForecastTable",
    "coin_vs_linear",
    "diffusion_checks",
    "COIN_OVER",
    "ForecastRecord",
    "CountRecord",
    "DiffusedRecord",
    "DiffusedCountRecord",
    "record_class",
]


@dataclass(frozen=True, kw_only=True)
class _TestErrors:
    """The test errors of forecasts on the protocol's scale (:func:`~.protocol.forecast_metrics`)."""

    mse: float
    mae: float
    top5_share: float
    mse_by_horizon: List[float]
    mae_by_horizon: List[float]


@dataclass(frozen=True, kw_only=True)
class _CountErrors(_TestErrors):
    """... and, on a count series, the MAE in counts."""

    mae_raw: float
    mae_raw_by_horizon: List[float]


@dataclass(frozen=True, kw_only=True)
class _Choice:
    """COIN's ``(γ, r)`` over a model and its selection-set MSE; the evidence behind it (stored, not read)."""

    step_size: float
    num_steps: int
    val_mse: float
    gain: float = field(metadata={"read": False})
    lower_bound: float = field(metadata={"read": False})
    blocks: int = field(metadata={"read": False})
    selected_on: str = field(metadata={"read": False})


@dataclass(frozen=True, kw_only=True)
class CoinChoice(_Choice, _TestErrors):
    """COIN over a model: its choice and the test errors of the diffused forecasts."""


@dataclass(frozen=True, kw_only=True)
class CoinCountChoice(_Choice, _CountErrors):
    """COIN over a model on a count series."""


@dataclass(frozen=True, kw_only=True)
class TestForecast:
    """The horizon-1 forecasts of the test origins, to plot (:func:`~.protocol.first_horizon_forecasts`)."""

    steps: List[int]
    values: List[Any] = field(metadata={"kind": "list"})


_TRAINING = {"read": False, "omit_none": True}


@dataclass(frozen=True, kw_only=True)
class ForecastRecord(_TestErrors):
    """What one run returns and the store keeps: the seconds, the test errors, the validation MSE and the test
    forecasts; a learned model's training history too (stored, not read)."""

    seconds: float
    val_mse: float = field(metadata={"read": False})
    test_forecast: TestForecast
    epochs: Optional[int] = field(default=None, metadata=_TRAINING)
    steps: Optional[int] = field(default=None, metadata=_TRAINING)
    best_step: Optional[int] = field(default=None, metadata=_TRAINING)
    best_epoch: Optional[int] = field(default=None, metadata=_TRAINING)
    validations: Optional[int] = field(default=None, metadata=_TRAINING)
    curve: Optional[List[Any]] = field(default=None, metadata=_TRAINING)
    learned_step_size: Optional[float] = field(default=None, metadata=_TRAINING)


@dataclass(frozen=True, kw_only=True)
class CountRecord(ForecastRecord, _CountErrors):
    """A run on a count series: the MAE in counts too."""


@dataclass(frozen=True, kw_only=True)
class DiffusedRecord(ForecastRecord):
    """A run with COIN over its model."""

    val_mse: float
    coin: CoinChoice


@dataclass(frozen=True, kw_only=True)
class DiffusedCountRecord(CountRecord):
    """A run with COIN over its model, on a count series."""

    val_mse: float
    coin: CoinCountChoice


def record_class(counts: bool, diffused: bool) -> type:
    """The record dataclass of a run on a series of ``counts`` (or not), with COIN over its model or not."""
    if diffused:
        return DiffusedCountRecord if counts else DiffusedRecord
    return CountRecord if counts else ForecastRecord


#: the prefix of the table's entries of COIN over a model: ``coin-over-MODEL``
COIN_OVER = "coin-over-"
#: the verdict against linear regression compares these two models of the table
_COIN, _LINEAR = "coin-forecast", "linear"


@dataclass(frozen=True, kw_only=True)
class ForecastErrors:
    """A model's errors on the test targets, over its seeds (in the protocol's scaled units unless said).

    Args:
        mse: the statistics of the test MSE over the seeds.
        mae: the statistics of the test MAE over the seeds.
        mae_raw: the statistics of the test MAE in cases per region (count series only, else ``None``).
        top5_share: the statistics over the seeds of the fraction (0 to 1) of the test squared error that the
            five regions with the most of it hold.
        mae_by_horizon: the test MAE of each horizon ``1…H``, the mean over the seeds.
        mse_by_horizon: the test MSE of each horizon, the mean over the seeds.
        mae_raw_by_horizon: the test MAE of each horizon in cases per region, the mean over the seeds (count
            series only, else ``None``).
    """

    mse: Stats
    mae: Stats
    mae_raw: Optional[Stats] = field(default=None, metadata=OMIT_NONE)
    top5_share: Stats
    mae_by_horizon: List[float]
    mse_by_horizon: List[float]
    mae_raw_by_horizon: Optional[List[float]] = field(default=None, metadata=OMIT_NONE)

    @classmethod
    def of(cls, metrics: Sequence[Mapping[str, Any]]) -> "ForecastErrors":
        """The errors over the seeds of one model's metrics (the raw-count ones where the first run has them).

        Args:
            metrics: the test errors of each seed, at least one
                (:func:`~pdenets.tasks.coin_forecast.protocol.forecast_metrics`).

        Returns:
            The statistics of each error, the mean of each list per horizon.

        Examples:
            >>> seeds = [
            ...     dict(mse=1.0, mae=0.5, top5_share=0.5, mae_by_horizon=[0.5, 0.5], mse_by_horizon=[1, 1]),
            ...     dict(mse=3.0, mae=1.5, top5_share=0.7, mae_by_horizon=[1.5, 2.5], mse_by_horizon=[3, 3]),
            ... ]
            >>> errors = ForecastErrors.of(seeds)
            >>> errors.mse.mean, errors.mse.std, errors.mae_by_horizon, errors.mae_raw is None
            (2.0, 1.0, [1.0, 1.5], True)
        """
        measured = metrics[0]

        def stats(name: str) -> Stats:
            return Stats.of(m[name] for m in metrics)

        def mean_by_horizon(name: str) -> List[float]:
            return np.mean([m[name] for m in metrics], axis=0).tolist()

        return cls(
            mse=stats("mse"),
            mae=stats("mae"),
            mae_raw=stats("mae_raw") if "mae_raw" in measured else None,
            top5_share=stats("top5_share"),
            mae_by_horizon=mean_by_horizon("mae_by_horizon"),
            mse_by_horizon=mean_by_horizon("mse_by_horizon"),
            mae_raw_by_horizon=(
                mean_by_horizon("mae_raw_by_horizon") if "mae_raw_by_horizon" in measured else None
            ),
        )


@dataclass(frozen=True, kw_only=True)
class ForecastCell:
    """One entry of the table: a model, or COIN over a model (then ``over`` and the choice fields are set).

    Args:
        runs: the runs (seeds) of the entry.
        seconds_per_run: the model's fitting and forecasting time per run, in seconds (the mean over the
            runs; COIN over a model repeats its model's).
        over: the model COIN diffuses (``None`` for a model itself).
        chosen: COIN over a model: the ``(γ, r)`` chosen on the selection days, one pair per run (``γ = 0``:
            the model kept).
        val_mse: COIN over a model: the statistics over the runs of the selection MSE of the chosen
            diffusion.
        backbone_val_mse: COIN over a model: the statistics over the runs of the model's own validation MSE.
        errors: the test errors (:class:`ForecastErrors`; its keys sit in the entry itself).
    """

    runs: int
    seconds_per_run: float
    over: Optional[str] = field(default=None, metadata=OMIT_NONE)
    chosen: Optional[List[Tuple[float, int]]] = field(default=None, metadata=OMIT_NONE)
    val_mse: Optional[Stats] = field(default=None, metadata=OMIT_NONE)
    backbone_val_mse: Optional[Stats] = field(default=None, metadata=OMIT_NONE)
    errors: ForecastErrors = field(metadata=FLATTEN)


#: dataset label → protocol → model (or ``coin-over-MODEL``) → its entry
ForecastTable = Dict[str, Dict[str, Dict[str, ForecastCell]]]


@dataclass(frozen=True)
class CoinVsLinear:
    """COIN's own forecaster (``coin-forecast``) against linear regression on one dataset and protocol.

    Args:
        coin_mse: COIN's test MSE, the mean over the seeds.
        coin_std: its standard deviation over the seeds.
        linear_mse: linear regression's test MSE (deterministic: one run).
        coin_beats_linear: COIN's mean MSE is below linear regression's.
        clearly: it is below by more than one standard deviation.
    """

    coin_mse: float
    coin_std: float
    linear_mse: float
    coin_beats_linear: bool
    clearly: bool


@dataclass(frozen=True)
class DiffusionOver:
    """COIN over one model against the model, on the test period.

    Args:
        mse: the model's test MSE (mean over the seeds).
        coin_mse: COIN over the model's test MSE (mean over the seeds).
        coin_not_worse: COIN over the model is not worse than the model (to within ``1e-12``).
    """

    mse: float
    coin_mse: float
    coin_not_worse: bool


@dataclass(frozen=True)
class DiffusionCheck:
    """COIN over each model against the model, and the best COIN variant against the best other model, on
    one dataset and protocol (test MSE, means over the seeds).

    Args:
        over: model → COIN over it against it.
        best_model: the model without COIN with the lowest test MSE.
        best_model_mse: its test MSE.
        best_coin: the COIN variant (``coin-forecast`` or ``coin-over-MODEL``) with the lowest test MSE.
        best_coin_mse: its test MSE.
        best_coin_not_worse: the best COIN variant's MSE is at most the best other model's.
    """

    over: Dict[str, DiffusionOver]
    best_model: str
    best_model_mse: float
    best_coin: str
    best_coin_mse: float
    best_coin_not_worse: bool


@dataclass(frozen=True)
class ForecastResults(TaskResults):
    """The summary of a ``coin-forecast`` run.

    Args:
        table: dataset label → protocol → model (each followed by ``coin-over-MODEL`` where COIN ran over
            it) → its :class:`ForecastCell`, in the order of the runs.
        sources: dataset label → the dataset as the runs named it (a registered name, a file or a folder).
        coin_vs_linear: ``"dataset/protocol"`` → :class:`CoinVsLinear`, where both models ran.
        diffusion_check: ``"dataset/protocol"`` → :class:`DiffusionCheck`, where a model and a COIN variant
            ran.
    """

    table: ForecastTable
    sources: Dict[str, str]
    coin_vs_linear: Dict[str, CoinVsLinear]
    diffusion_check: Dict[str, DiffusionCheck]


def coin_vs_linear(table: ForecastTable) -> Dict[str, CoinVsLinear]:
    """COIN's own forecaster against linear regression, per ``"dataset/protocol"`` where both ran.

    Args:
        table: the summary table (:attr:`ForecastResults.table`).

    Returns:
        The :class:`CoinVsLinear` of each dataset and protocol with both models.
    """
    verdicts = {}
    for dataset, protocols in table.items():
        for protocol, models in protocols.items():
            if _COIN in models and _LINEAR in models:
                coin, linear = models[_COIN].errors.mse, models[_LINEAR].errors.mse.mean
                verdicts[f"{dataset}/{protocol}"] = CoinVsLinear(
                    coin_mse=coin.mean,
                    coin_std=coin.std,
                    linear_mse=linear,
                    coin_beats_linear=bool(coin.mean < linear),
                    clearly=bool(coin.mean + coin.std < linear),
                )
    return verdicts


def is_coin(model: str, cell: ForecastCell) -> bool:
    """Whether a table entry holds COIN's forecasts: another model's diffused (its cell names the model it is
    ``over``), or a forecaster that diffuses itself (:func:`~pdenets.tasks.coin_forecast.protocol.
    diffuses_itself`).

    Examples:
        >>> metrics = dict(mse=1.0, mae=0.0, top5_share=1.0, mae_by_horizon=[0.0], mse_by_horizon=[1.0])
        >>> errors = ForecastErrors.of([metrics])
        >>> cell = ForecastCell(runs=1, seconds_per_run=0.1, errors=errors)
        >>> is_coin("coin-forecast", cell), is_coin("window-gcn", cell)
        (True, False)
        >>> is_coin("coin-over-gcn", ForecastCell(runs=1, seconds_per_run=0.1, errors=errors, over="gcn"))
        True
    """
    from .protocol import diffuses_itself

    return cell.over is not None or diffuses_itself(model)


def diffusion_checks(table: ForecastTable) -> Dict[str, DiffusionCheck]:
    """COIN over each model against the model, and the best COIN variant against the best other model, per
    ``"dataset/protocol"`` (the COIN variants: the entries :func:`is_coin` accepts).

    Args:
        table: the summary table (:attr:`ForecastResults.table`).

    Returns:
        The :class:`DiffusionCheck` of each dataset and protocol with a model and a COIN variant.

    Examples:
        >>> def cell(mse, over=None):
        ...     metrics = dict(mse=mse, mae=0.0, top5_share=1.0, mae_by_horizon=[0.0], mse_by_horizon=[mse])
        ...     errors = ForecastErrors.of([metrics])
        ...     return ForecastCell(runs=1, seconds_per_run=0.1, errors=errors, over=over)
        >>> table = {"toy": {"ours": {"linear": cell(1.0), "coin-over-linear": cell(0.9, over="linear")}}}
        >>> check = diffusion_checks(table)["toy/ours"]
        >>> check.over["linear"].coin_not_worse, check.best_coin, check.best_coin_not_worse
        (True, 'coin-over-linear', True)
    """
    checks = {}
    for dataset, protocols in table.items():
        for protocol, models in protocols.items():
            plain = {m: e.errors.mse.mean for m, e in models.items() if not is_coin(m, e)}
            coins = {m: e.errors.mse.mean for m, e in models.items() if is_coin(m, e)}
            if not plain or not coins:
                continue
            over = {
                m[len(COIN_OVER) :]: DiffusionOver(
                    mse=plain[m[len(COIN_OVER) :]],
                    coin_mse=mse,
                    coin_not_worse=bool(mse <= plain[m[len(COIN_OVER) :]] + 1e-12),
                )
                for m, mse in coins.items()
                if m.startswith(COIN_OVER)
            }
            best_plain, best_coin = min(plain, key=plain.__getitem__), min(coins, key=coins.__getitem__)
            checks[f"{dataset}/{protocol}"] = DiffusionCheck(
                over=over,
                best_model=best_plain,
                best_model_mse=plain[best_plain],
                best_coin=best_coin,
                best_coin_mse=coins[best_coin],
                best_coin_not_worse=bool(coins[best_coin] <= plain[best_plain]),
            )
    return checks
