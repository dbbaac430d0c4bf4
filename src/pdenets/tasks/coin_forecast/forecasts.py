"""The forecast a user came for: the ``H`` steps after the series' last step, per node, in the series' units
and time stamps (``forecasts.csv`` beside the report).

Our protocol's windows end at origin ``T − 1``; the future origin ``T`` takes the last ``L`` observed steps
(:func:`future_window`) and diffuses on the graph of the last day. A model's forecast of it is turned back
into the series' units (:func:`to_series_units`: the protocol's per-node scaling undone, ``log1p`` undone by
``expm1``); COIN's is that forecast diffused with the ``(γ, r)`` chosen for it in the run
(:func:`~pdenets.models.coin_forecast_diffusion.diffuse_forecasts`).

The time stamps continue the series' own interval (:meth:`~pdenets.data.time_column.TimeAxis.following`:
5-minute rows give 5-minute stamps, month ends give month ends); a series without a time column is counted
in steps (``T``, ``T + 1``, …).
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Mapping, Sequence, Tuple, Union

import torch

from ..._output import write_csv
from ...data.temporal import TemporalGraphSeries
from ...models.coin_forecast_diffusion import diffuse_forecasts
from ...operators import SliceGraphs
from .protocol import ForecastData, diffusion_graph

__all__ = [
    "future_window",
    "to_series_units",
    "unscaled",
    "future_stamps",
    "stamps_after",
    "write_forecasts",
    "diffused_future",
]


def future_window(data: ForecastData) -> Tuple[torch.Tensor, SliceGraphs]:
    """The window of the origin after the series' end, ``(1, N, L)`` in the protocol's scaled units, and its
    graph (the last day's).

    The last window (origin ``T − 1``) holds steps ``T − 1 − L … T − 2``; its first target is step ``T − 1``:
    the future window is that window moved on by one step.
    """
    if data.protocol != "ours":
        raise ValueError(f"forecasts past the series' end follow our protocol, not {data.protocol!r}")
    last = torch.cat([data.inputs[-1, :, 1:], data.targets[-1, :, :1]], dim=1)
    series = data.series
    day = series.num_steps - 1
    graph = diffusion_graph(series.graph_at(day), series.num_nodes)
    return last[None], SliceGraphs([graph], series.num_nodes, ids=torch.zeros(1, dtype=torch.long))


def to_series_units(forecast: torch.Tensor, data: ForecastData) -> torch.Tensor:
    """``(N, H)`` forecasts in the protocol's scaled units back in the series' own units."""
    return unscaled(forecast, data.mean, data.std, data.transform)


def unscaled(forecast: torch.Tensor, mean: torch.Tensor, std: torch.Tensor, transform: str) -> torch.Tensor:
    """``(N, H)`` forecasts scaled by the per-node ``mean`` and ``std`` after ``transform`` (``log1p`` or
    ``none``), in the series' own units."""
    values = forecast.to(torch.float64) * std[:, None].to(torch.float64) + mean[:, None].to(torch.float64)
    return torch.expm1(values) if transform == "log1p" else values


def diffused_future(
    forecast: torch.Tensor, graphs: SliceGraphs, step_size: float, num_steps: int
) -> torch.Tensor:
    """COIN's forecast of the future window: ``forecast`` ``(1, N, H)`` diffused with the run's ``(γ, r)``
    (``γ = 0`` or ``r = 0``: the model's forecast kept, as COIN kept it)."""
    if step_size <= 0 or num_steps <= 0:
        return forecast
    return diffuse_forecasts(forecast.to(torch.float64), graphs, step_size, num_steps)


def future_stamps(data: ForecastData) -> List[str]:
    """The time of each of the ``H`` steps after the series' end: stamps at the series' interval where it
    has a time column, else step numbers."""
    return stamps_after(data.series, data.horizons)


def stamps_after(series: TemporalGraphSeries, horizons: int) -> List[str]:
    """The time of each of the ``horizons`` steps after ``series``' last step (:func:`future_stamps`)."""
    axis = series.time_axis
    if axis is not None:
        return axis.format(axis.following(horizons))
    return [str(series.num_steps + horizon) for horizon in range(horizons)]


def write_forecasts(
    path: Path,
    series: TemporalGraphSeries,
    forecasts: Mapping[str, torch.Tensor],
    node_names: Sequence[str],
    *,
    overwrite: bool = True,
    inputs: Sequence[Union[str, Path]] = (),
) -> Path:
    """Write ``forecasts.csv``: one row per node and step after ``series``' end (``node``, ``time``,
    ``horizon``), one column per model (``forecasts``: name → ``(N, H)`` in the series' units); replaces an
    earlier report's file (``overwrite``), never one of ``inputs``. Node and model names a spreadsheet would
    evaluate are neutralized (:mod:`pdenets._output`)."""
    horizons = next(iter(forecasts.values())).shape[1]
    stamps = stamps_after(series, horizons)
    columns = list(forecasts)
    values = {name: forecast.tolist() for name, forecast in forecasts.items()}
    header = ["node", series.time_axis.column if series.time_axis else "step", "horizon"] + columns
    rows = (
        [name, stamp, horizon + 1] + [f"{values[column][node][horizon]:.6g}" for column in columns]
        for node, name in enumerate(node_names)
        for horizon, stamp in enumerate(stamps)
    )
    return write_csv(path, header, rows, overwrite=overwrite, inputs=inputs)
