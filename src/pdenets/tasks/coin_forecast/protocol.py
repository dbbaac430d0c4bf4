"""Forecasting protocols on a region series: windows, splits in time, scaling, reference forecasts, errors.

Two protocols on a :class:`~pdenets.data.temporal.TemporalGraphSeries`:

* ``ours`` — ``lags`` past values, horizons ``1…H``. Every (origin, horizon) pair belongs to the
  split of its **target day**: the last ``test_fraction`` of the days are the test period, the
  ``val_fraction`` before it validation (early stopping), the rest training; inputs only look back.
  Each region is standardized with the mean and standard deviation of its training days, so errors
  are on that scale (:func:`region_scales`: at least 1 for counts; a region that barely moved in the
  training days — a standard deviation under a tenth of the median region's — is measured in the
  median region's units instead, so that a silent region that wakes up cannot weigh thousands of
  times more than the others). Bursty count series (Twitter mentions: a handful of users go from a
  few mentions to thousands in the final days) are standardized after ``log(1 + y)``, as their
  publisher's loader presents them (``transform``). Errors in cases per region (the MPNN-LSTM
  paper's unit) undo both.
* ``pyg-temporal`` — the protocol of PyTorch Geometric Temporal's examples: horizon 1, their
  loader's lags, the first 20 % of the snapshots for training (its last fifth held out here for
  early stopping), the series as their loader gives it (:func:`pyg_scaled`: chickenpox and
  PedalMe as stored, 4 lags; England, WikiVital and Windmill standardized per region, 8 lags;
  Montevideo bus standardized, 4 lags; Twitter tennis ``log(1 + y)``, 4 lags).

Origin ``t`` forecasts from the days before ``t`` and uses the graph of its last observed day
``t − 1`` (the one graph of a static series): :func:`protocol_windows` names those days, the
forecasting code turns them into its operator. On the windows of a protocol:

* :func:`closed_form_forecast` — the reference forecasts every model is measured against (the last
  value, the mean of the lags, least squares on the lags);
* :func:`forecast_metrics` — the test errors of forecasts, overall and per horizon.

COIN over any model — its forecasts diffused on the origins' graphs — lives with COIN:
:mod:`pdenets.models.coin_forecast_diffusion`.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch

from ..._cache import process_cache
from ...data.temporal import TemporalGraphSeries, forecast_windows, load_temporal
from ...models.forecasting import FORECASTERS, closed_form_forecasters, learned_forecasters, linear_forecast
from ...operators.graph import GraphLike, as_weight_matrix, remove_self_loops, row_normalize
from ...operators.slice_graphs import SliceGraphs

__all__ = [
    "ForecastData",
    "diffusion_graph",
    "prepare_protocol",
    "prepared_protocol",
    "read_series",
    "learned_forecasters",
    "diffuses_itself",
    "PROTOCOLS",
    "TRANSFORMS",
    "ForecastSetup",
    "split_days",
    "protocol_windows",
    "protocols_for",
    "pyg_scaled",
    "region_scales",
    "CLOSED_FORM",
    "closed_form_forecast",
    "linear_forecast",
    "forecast_metrics",
    "first_horizon_forecasts",
]

#: the transforms of count series before standardizing (our protocol): ``auto`` is ``log1p`` where the series'
#: publisher's loader takes it (Twitter tennis), ``none`` otherwise
TRANSFORMS = ("auto", "log1p", "none")
#: the protocols of :func:`protocol_windows`
PROTOCOLS = ("ours", "pyg-temporal")


def protocols_for(dataset: str) -> Tuple[str, ...]:
    """The protocols that apply to a dataset (what ``protocols = auto`` runs): ``ours`` and ``pyg-temporal``
    for the built-in series and PyTorch Geometric Temporal ``.json`` files, ``ours`` alone for a CSV folder
    (no loader of that library exists for it, so its protocol has nothing to compare with).

    Examples:
        >>> protocols_for("chickenpox"), protocols_for("sensors/series.csv")
        (('ours', 'pyg-temporal'), ('ours',))
    """
    path = Path(dataset).expanduser()
    csv_folder = dataset.lower().endswith(".csv") or (not dataset.lower().endswith(".json") and path.is_dir())
    return ("ours",) if csv_folder else PROTOCOLS


#: the closed-form reference forecasts of :func:`closed_form_forecast` (the forecaster registry's closed
#: forms)
CLOSED_FORM = closed_form_forecasters()


def diffuses_itself(model: str) -> bool:
    """Whether a forecaster carries COIN's diffusion in its own layers, as it declares
    (:attr:`~pdenets.models.forecasting.Forecaster.diffuses_itself`): it is trained with the diffusion
    settings and not diffused again afterwards.

    Args:
        model: a registered forecaster's name.

    Returns:
        ``True`` for COIN's own forecaster, ``False`` for the others.

    Examples:
        >>> diffuses_itself("coin-forecast"), diffuses_itself("window-gcn"), diffuses_itself("linear")
        (True, False, False)
    """
    return FORECASTERS[model].diffuses_itself


@dataclass(frozen=True)
class ForecastSetup:
    """The settings of our protocol: ``lags`` past values, horizons ``1…horizons``, the last
    ``test_fraction`` of the days for testing and the ``val_fraction`` before them for validation,
    and the ``transform`` of count series before standardizing (:data:`TRANSFORMS`)."""

    lags: int
    horizons: int
    test_fraction: float
    val_fraction: float
    transform: str = "auto"

    def __post_init__(self) -> None:
        for name in ("lags", "horizons"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
            object.__setattr__(self, name, int(value))  # a NumPy integer kept a Python one (a store key)
        fractions = (self.test_fraction, self.val_fraction)
        if not all(isinstance(f, numbers.Real) and not isinstance(f, bool) and f > 0 for f in fractions) or (
            sum(fractions) >= 0.9
        ):
            raise ValueError(
                "test_fraction and val_fraction must be positive and leave 10 % of the steps to fit, got "
                f"{self.test_fraction!r} and {self.val_fraction!r}"
            )
        if self.transform not in TRANSFORMS:
            raise ValueError(f"transform must be one of {', '.join(TRANSFORMS)}, got {self.transform!r}")

    @classmethod
    def of(cls, settings: Any) -> "ForecastSetup":
        """The setup of any object with attributes of the same names (e.g. a task's configuration, whose
        ``count_transform`` is the setup's ``transform``).

        Args:
            settings: an object with ``lags``, ``horizons``, ``test_fraction`` and ``val_fraction``, and
                ``transform`` or ``count_transform`` (default: ``"auto"``).

        Returns:
            A :class:`ForecastSetup`.

        Examples:
            >>> from types import SimpleNamespace
            >>> ForecastSetup.of(SimpleNamespace(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1))
            ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1, transform='auto')
            >>> config = SimpleNamespace(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)
            >>> config.count_transform = "log1p"
            >>> ForecastSetup.of(config).transform
            'log1p'
        """
        values = {
            item.name: getattr(settings, item.name) for item in fields(cls) if hasattr(settings, item.name)
        }
        if "transform" not in values and hasattr(settings, "count_transform"):
            values["transform"] = settings.count_transform
        return cls(**values)

    def transform_of(self, series: TemporalGraphSeries) -> str:
        """``"log1p"`` or ``"none"``: this setup's transform for ``series`` (``auto`` follows the series'
        loader)."""
        if self.transform == "auto":
            return "log1p" if series.raw_counts and series.pyg_scaling == "log1p" else "none"
        if self.transform == "log1p" and not series.raw_counts:
            raise ValueError(
                f"transform log1p is for count series; {series.name} holds values that are not counts"
            )
        return self.transform


def region_scales(train_days: torch.Tensor, counts: bool) -> torch.Tensor:
    """The standard deviation each region is measured in: its training days', at least 1 for counts, and the
    median region's where its own is under a tenth of that (a region that barely moved before the test
    period).

    Args:
        train_days: ``(T, N)`` the training values of every region.
        counts: the values are counts (a floor of 1: one case).

    Returns:
        ``(N,)`` positive scales.

    Examples:
        >>> days = torch.tensor([[0.0, 1.0, 5.0], [0.0, 3.0, 1.0], [0.0, 2.0, 3.0]])
        >>> region_scales(days, counts=False).tolist()
        [1.0, 1.0, 2.0]
    """
    std = train_days.std(0)
    typical = float(std.median()) if std.numel() else 0.0
    std = torch.where(std >= typical / 10, std, torch.full_like(std, typical))
    std = torch.where(std > 0, std, torch.ones_like(std))
    return std.clamp_min(1.0) if counts else std


def split_days(name: str, steps: int, setup: ForecastSetup) -> Tuple[int, int]:
    """First validation and first test day of our protocol on a series of ``steps`` days.

    Args:
        name: the series' name, for the error message.
        steps: the days of the series.
        setup: the protocol's settings.

    Returns:
        ``(val_start, test_start)``.

    Raises:
        ValueError: the horizons reach beyond the series, or the settings leave no training target.

    Examples:
        >>> split_days("demo", 50, ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1))
        (35, 40)
    """
    lags, horizons = setup.lags, setup.horizons
    if horizons >= steps:
        raise ValueError(f"horizons={horizons} reaches beyond the series: {name} has {steps} steps")
    test_start = steps - max(1, round(setup.test_fraction * steps))
    val_start = test_start - max(1, round(setup.val_fraction * steps))
    if val_start <= lags:
        raise ValueError(
            f"{name}: {steps} steps leave no training targets after {lags} lags with these fractions"
        )
    return val_start, test_start


@dataclass(frozen=True)
class ForecastData:
    """One protocol's windows of a series: what every forecaster of the task is fitted and scored on.

    Made by :func:`protocol_windows` (``graphs`` ``None``) and :func:`prepare_protocol` (with ``graphs``).

    Args:
        series: the region series the windows come from.
        protocol: ``"ours"`` or ``"pyg-temporal"``.
        transform: ``"log1p"`` or ``"none"``, applied to the values before scaling.
        inputs: ``(S, N, L)`` scaled windows.
        targets: ``(S, N, H)`` scaled targets, ``0`` beyond the series.
        masks: ``train``/``val``/``test`` → ``(S, N, H)`` booleans.
        mean: ``(N,)`` per-region offset that undoes the scaling.
        std: ``(N,)`` per-region scale that undoes the scaling.
        origins: ``(S,)`` the origin ``t`` of each window.
        target_steps: ``(S, H)`` the step of each target.
        lags: ``L``.
        horizons: ``H``.
        split: our protocol's ``val_start``/``test_start`` days, or PyG Temporal's snapshot counts.
        graph_days: the distinct days whose graph some origin diffuses on.
        graph_ids: ``(S,)`` each origin's index into ``graph_days``.
        graphs: each origin's diffusion graph (default: ``None``: not built).

    Examples:
        >>> import torch
        >>> from pdenets.data.temporal import TemporalGraphSeries
        >>> ring = torch.tensor([[0, 1, 2], [1, 2, 0]])
        >>> values = torch.rand(40, 3, dtype=torch.float64)
        >>> series = TemporalGraphSeries("toy", values, [(ring, None)], raw_counts=False, source="example")
        >>> setup = ForecastSetup(lags=4, horizons=2, test_fraction=0.2, val_fraction=0.2)
        >>> data = protocol_windows(series, "ours", setup)
        >>> data.inputs.shape[1:], data.targets.shape[1:], sorted(data.masks)
        (torch.Size([3, 4]), torch.Size([3, 2]), ['test', 'train', 'val'])
    """

    series: TemporalGraphSeries
    protocol: str
    transform: str
    inputs: torch.Tensor
    targets: torch.Tensor
    masks: Mapping[str, torch.Tensor]
    mean: torch.Tensor
    std: torch.Tensor
    origins: torch.Tensor
    target_steps: torch.Tensor
    lags: int
    horizons: int
    split: Mapping[str, int]
    graph_days: List[int]
    graph_ids: torch.Tensor
    graphs: Optional[SliceGraphs] = None

    @property
    def diffusion_graphs(self) -> SliceGraphs:
        """The origins' graphs, which :func:`prepare_protocol` builds (refused where they were not)."""
        if self.graphs is None:
            raise ValueError("these windows have no graphs: make them with prepare_protocol")
        return self.graphs


def protocol_windows(
    series: TemporalGraphSeries, protocol: str, setup: Optional[ForecastSetup] = None
) -> ForecastData:
    """Windows, split masks, scaling and the graph days of one protocol.

    Args:
        series: the region series.
        protocol: ``"ours"`` or ``"pyg-temporal"``.
        setup: the settings of ``"ours"`` (``"pyg-temporal"`` has none; default: ``None``).

    Returns:
        The :class:`ForecastData` (without ``graphs``: :func:`prepare_protocol` adds them).

    Raises:
        ValueError: our protocol's settings do not fit the series (:func:`split_days`).
    """
    values = series.values
    steps, nodes = values.shape
    if protocol == "ours":
        if setup is None:
            raise ValueError("our protocol needs its settings (a ForecastSetup)")
        lags, horizons = setup.lags, setup.horizons
        val_start, test_start = split_days(series.name, steps, setup)
        transform = setup.transform_of(series)
        values = torch.log1p(values) if transform == "log1p" else values
        train_days = values[:val_start]
        mean = train_days.mean(0)
        std = region_scales(train_days, counts=series.raw_counts and transform == "none")
        scaled = (values - mean) / std
        windows = forecast_windows(scaled, lags, horizons)
        day = windows.target_steps[:, None, :].expand_as(windows.targets)
        valid = ~torch.isnan(windows.targets)
        masks = {
            "train": valid & (day < val_start),
            "val": valid & (day >= val_start) & (day < test_start),
            "test": valid & (day >= test_start),
        }
        split = {"val_start": val_start, "test_start": test_start}
    else:
        transform = "log1p" if series.pyg_scaling == "log1p" else "none"
        lags, horizons = series.pyg_lags, 1
        scaled, mean, std = pyg_scaled(series)
        windows = forecast_windows(scaled, lags, horizons)
        keep = ~torch.isnan(windows.targets).any(-1).any(-1)  # snapshots with their target inside the series
        windows = type(windows)(
            windows.inputs[keep], windows.targets[keep], windows.origins[keep], windows.target_steps[keep]
        )
        count = len(windows)
        train_count = int(0.2 * count)
        val_from = train_count - max(1, train_count // 5)
        index = torch.arange(count, device=windows.targets.device)[:, None, None].expand_as(windows.targets)
        masks = {
            "train": index < val_from,
            "val": (index >= val_from) & (index < train_count),
            "test": index >= train_count,
        }
        split = {
            "train_snapshots": train_count,
            "val_snapshots": train_count - val_from,
            "test_snapshots": count - train_count,
        }
    # one graph per day: origin t diffuses on the graph of its last observed day t − 1 (the fixed graph if
    # static)
    days = (windows.origins - 1).clamp_min(0) if series.time_varying else torch.zeros_like(windows.origins)
    distinct, ids = torch.unique(days, return_inverse=True)
    return ForecastData(
        series=series,
        protocol=protocol,
        transform=transform,
        inputs=windows.inputs,
        targets=torch.nan_to_num(windows.targets),
        masks=masks,
        mean=mean,
        std=std,
        origins=windows.origins,
        target_steps=windows.target_steps,
        lags=lags,
        horizons=horizons,
        split=split,
        graph_days=distinct.tolist(),
        graph_ids=ids,
    )


def diffusion_graph(graph: GraphLike, nodes: int) -> torch.Tensor:
    """The graph forecasts diffuse on: without self-loops, rows normalized to sum 1 (sparse, float64).

    Args:
        graph: one day's graph (``(edge_index, weights)`` or a matrix).
        nodes: the regions ``N``.

    Returns:
        The ``(N, N)`` sparse COO matrix.

    Examples:
        >>> import torch
        >>> diffusion_graph((torch.tensor([[0, 0, 1], [0, 1, 0]]), None), 2).to_dense().tolist()
        [[0.0, 1.0], [1.0, 0.0]]
    """
    matrix = as_weight_matrix(graph, nodes, dtype=torch.float64)
    matrix = matrix.to_sparse().coalesce() if matrix.layout == torch.strided else matrix
    return row_normalize(remove_self_loops(matrix)).coalesce()


def prepare_protocol(
    series: TemporalGraphSeries, protocol: str, setup: Optional[ForecastSetup] = None
) -> ForecastData:
    """A protocol's windows (:func:`protocol_windows`) with their graphs.

    Args:
        series: the region series.
        protocol: ``"ours"`` or ``"pyg-temporal"``.
        setup: the settings of ``"ours"`` (default: ``None``).

    Returns:
        The :class:`ForecastData` with ``graphs``: a :class:`SliceGraphs` of each origin's
        :func:`diffusion_graph`.
    """
    prepared = protocol_windows(series, protocol, setup)
    graphs = [diffusion_graph(series.graph_at(day), series.num_nodes) for day in prepared.graph_days]
    return replace(prepared, graphs=SliceGraphs(graphs, series.num_nodes, ids=prepared.graph_ids))


@process_cache(maxsize=4)
def read_series(dataset: str, data_dir: Optional[str]) -> TemporalGraphSeries:
    """A dataset's series, read once per process (the task's checks, its runs and its report share it).

    Args:
        dataset: a registered name or a file (:func:`pdenets.data.temporal.load_temporal`).
        data_dir: the data folder (``None``: the default).

    Returns:
        The series.
    """
    return load_temporal(dataset, data_dir)


@process_cache(maxsize=4)
def prepared_protocol(
    dataset: str, protocol: str, setup: Optional[ForecastSetup], data_dir: Optional[str]
) -> ForecastData:
    """:func:`prepare_protocol` of a dataset's series, once per process and protocol.

    Args:
        dataset: a registered name or a file.
        protocol: ``"ours"`` or ``"pyg-temporal"``.
        setup: the settings of ``"ours"`` (``None`` for ``"pyg-temporal"``).
        data_dir: the data folder (``None``: the default).

    Returns:
        The :class:`ForecastData` with its graphs.
    """
    return prepare_protocol(read_series(dataset, data_dir), protocol, setup)


def pyg_scaled(series: TemporalGraphSeries) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The series as PyTorch Geometric Temporal's loader presents it.

    ``standardize`` uses the population standard deviation, as ``np.std`` does (a constant node keeps
    scale 1).

    Args:
        series: the region series; its ``pyg_scaling`` names the loader's transform.

    Returns:
        ``(scaled, mean, std)``: the scaled ``(T, N)`` values and the per-node ``mean`` and ``std`` that undo
        a linear scaling (``log1p`` is undone by neither: ``mean = 0``, ``std = 1`` and no raw-unit metrics).
    """
    values = series.values
    ones, zeros = values.new_ones(values.shape[1]), values.new_zeros(values.shape[1])
    if series.pyg_scaling == "log1p":
        return torch.log1p(values), zeros, ones
    if series.pyg_scaling == "none":
        return values.clone(), zeros, ones
    mean, std = values.mean(0), values.std(0, unbiased=False)
    std = std + 1e-10 if series.pyg_scaling == "standardize+eps" else torch.where(std > 0, std, ones)
    return (values - mean) / std, mean, std


def forecast_metrics(prediction: torch.Tensor, data: ForecastData) -> Dict[str, Any]:
    """The test errors of forecasts on the scale of the protocol, and in cases per region for count data.

    Args:
        prediction: ``(S, N, H)`` forecasts in the scaled units of ``data``.
        data: a protocol's windows (:func:`protocol_windows`).

    Returns:
        ``mse``, ``mae`` and their lists per horizon ``mse_by_horizon``, ``mae_by_horizon`` on the test
        targets, ``top5_share`` (the part of the squared error that the five worst regions hold); for count
        data also ``mae_raw`` and ``mae_raw_by_horizon``, the MAE in counts (scaling and ``log1p`` undone).
    """
    targets, mask = data.targets, data.masks["test"]
    error = prediction - targets
    out: Dict[str, Any] = {"mse": float(error[mask].square().mean()), "mae": float(error[mask].abs().mean())}
    out["mse_by_horizon"] = [
        float(error[..., h][mask[..., h]].square().mean()) for h in range(targets.shape[-1])
    ]
    out["mae_by_horizon"] = [
        float(error[..., h][mask[..., h]].abs().mean()) for h in range(targets.shape[-1])
    ]
    per_region = (error.square() * mask).sum((0, 2))
    top5 = per_region.topk(min(5, len(per_region))).values.sum()
    out["top5_share"] = float(top5 / per_region.sum().clamp_min(1e-300))
    if data.series.raw_counts:  # in cases per region: the scaling (and a log1p) undone

        def counts(scaled: torch.Tensor) -> torch.Tensor:
            value = scaled * data.std[None, :, None] + data.mean[None, :, None]
            return torch.expm1(value) if data.transform == "log1p" else value

        raw_error = (counts(prediction) - counts(targets)).abs()
        out["mae_raw"] = float(raw_error[mask].mean())
        out["mae_raw_by_horizon"] = [
            float(raw_error[..., h][mask[..., h]].mean()) for h in range(targets.shape[-1])
        ]
    return out


def first_horizon_forecasts(prediction: torch.Tensor, data: ForecastData) -> Dict[str, List]:
    """The horizon-1 forecasts of the origins whose first target is in the test period (to plot them).

    Args:
        prediction: ``(S, N, H)`` forecasts in the scaled units of ``data``.
        data: a protocol's windows (:func:`protocol_windows`).

    Returns:
        ``steps``: the target steps; ``values``: the ``(steps, N)`` forecasts as nested lists, rounded to 5
        decimals.
    """
    test_rows = data.masks["test"][:, 0, 0].nonzero().squeeze(1)
    return {
        "steps": data.target_steps[test_rows, 0].tolist(),
        "values": prediction[test_rows, :, 0].round(decimals=5).tolist(),
    }


def closed_form_forecast(model: str, data: ForecastData) -> torch.Tensor:
    """A reference forecast of a protocol's windows: the closed form of a registered forecaster
    (``last-value``, ``moving-average``, ``linear``: :func:`~pdenets.models.forecasting.linear_forecast`
    fitted on the training and validation targets together: a closed form has nothing to stop early).

    Args:
        model: one of :data:`CLOSED_FORM`.
        data: a protocol's windows (:func:`protocol_windows`).

    Returns:
        ``(S, N, H)`` forecasts in the protocol's scaled units.

    Raises:
        ValueError: ``model`` is a trained forecaster.
    """
    closed_form = FORECASTERS[model].closed_form
    if closed_form is None:
        raise ValueError(f"forecaster {model!r} is trained, not a closed form")
    return closed_form(data.inputs, data.targets, data.masks["train"] | data.masks["val"])
