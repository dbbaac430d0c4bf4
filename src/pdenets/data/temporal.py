"""Time series on a graph of regions: the epidemic datasets of ``temporal/`` and files in the same layout.

* ``england_covid`` — daily COVID-19 cases in 129 English NUTS3 regions over 61 days (March–May
  2020), a mobility graph per day (``edge_mapping.edge_index[t]``, ``edge_weight[t]``; raw
  counts of people moving, self-loops included). Values are **raw case counts**.
* ``chickenpox`` — weekly chickenpox cases in 20 Hungarian counties over 521 weeks with the
  county adjacency (102 directed pairs, self-loops included). Values are **standardized as
  stored** (mean 0, standard deviation 1 over the whole file); the raw counts are not shipped.

A ``PATH`` to a JSON file in either layout works the same way: ``{"y": T × N, "edge_mapping":
{"edge_index": {"0": [[i, j], …], …}, "edge_weight": {"0": [w, …], …}}}`` (a graph per step) or
``{"FX": T × N, "edges": [[i, j], …]}`` (one graph, unit weights; ``"edge_weight"`` optional).

:func:`forecast_windows` cuts a series into (window, horizons) pairs for forecasting.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple, Union

import numpy as np
import torch

from .errors import DatasetError, DatasetNotFoundError, dataset_error
from .paths import resolve_data_dir

__all__ = ["TemporalGraphSeries", "load_temporal", "forecast_windows", "ForecastWindows", "TEMPORAL_DATASETS"]

TEMPORAL_DATASETS = {"england_covid": "temporal/england_covid.json", "chickenpox": "temporal/chickenpox.json"}
Graph = Tuple[torch.Tensor, torch.Tensor]  # (edge_index (2, E) long, edge_weight (E,) float64)


@dataclass(frozen=True)
class TemporalGraphSeries:
    """``values[t, i]``: the series of node ``i`` at step ``t``; ``graphs``: one graph, or one per step."""

    name: str
    values: torch.Tensor  # (T, N) float64
    graphs: List[Graph]  # length 1 (fixed) or T (time-varying)
    raw_counts: bool  # values are counts (True) or a standardized series (False)
    source: str

    @property
    def num_steps(self) -> int:
        return int(self.values.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.values.shape[1])

    @property
    def time_varying(self) -> bool:
        return len(self.graphs) > 1

    def graph_at(self, step: int) -> Graph:
        """The graph in force at ``step`` (the fixed graph for a static series)."""
        return self.graphs[step if self.time_varying else 0]


def _edges(path: Path, pairs, weights, nodes: int, where: str) -> Graph:
    try:
        index = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    except (TypeError, ValueError):
        raise dataset_error(path, f"{where}: edges must be a list of [i, j] integer pairs") from None
    if index.size and (index.min() < 0 or index.max() >= nodes):
        bad = int(index.max() if index.max() >= nodes else index.min())
        raise dataset_error(path, f"{where}: an edge names node {bad} but the series has {nodes} nodes "
                                  f"(0…{nodes - 1})")
    if weights is None:
        weight = np.ones(len(index))
    else:
        try:
            weight = np.asarray(weights, dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise dataset_error(path, f"{where}: edge weights must be numbers") from None
        if weight.shape != (len(index),):
            raise dataset_error(path, f"{where}: {len(weight)} edge weights for {len(index)} edges")
        if not np.isfinite(weight).all() or (weight < 0).any():
            raise dataset_error(path, f"{where}: edge weights must be finite and non-negative")
    return torch.from_numpy(index.T.copy()), torch.from_numpy(weight)


def _series(path: Path, rows, key: str) -> torch.Tensor:
    try:
        values = np.asarray(rows, dtype=np.float64)
    except (TypeError, ValueError):
        raise dataset_error(path, f"'{key}' must be a T × N table of numbers (rows of equal length)") from None
    if values.ndim != 2 or min(values.shape) < 1:
        raise dataset_error(path, f"'{key}' must be a T × N table, got shape {values.shape}")
    if not np.isfinite(values).all():
        bad = np.argwhere(~np.isfinite(values))[0]
        raise dataset_error(path, f"'{key}' holds a non-finite value at step {bad[0]}, node {bad[1]}")
    return torch.from_numpy(values)


def load_temporal(name: Union[str, Path], data_dir: Optional[Union[str, Path]] = None) -> TemporalGraphSeries:
    """``england_covid``, ``chickenpox`` (from the data directory) or a path to a JSON file in either layout.

    Example:
        >>> series = load_temporal("chickenpox")          # doctest: +SKIP
        >>> series.values.shape, series.time_varying       # doctest: +SKIP
        (torch.Size([521, 20]), False)
    """
    text = str(name)
    if text in TEMPORAL_DATASETS:
        path = resolve_data_dir(data_dir) / TEMPORAL_DATASETS[text]
        label = text
    else:
        path = Path(text).expanduser()
        label = path.stem
        if path.suffix.lower() != ".json":
            raise DatasetError(f"unknown temporal dataset {text!r}: give england_covid, chickenpox or a path to a "
                               ".json file in one of their layouts")
    if not path.is_file():
        raise DatasetNotFoundError(f"missing dataset file {path}. Set the data directory with --data-dir or "
                                   "$PDENETS_DATA (the temporal/ folder: github.com/benedekrozemberczki/"
                                   "pytorch_geometric_temporal, dataset/). pdenets never downloads data.")
    try:
        content = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise dataset_error(path, f"not valid JSON ({error})") from None
    if not isinstance(content, dict):
        raise dataset_error(path, "expected a JSON object with 'y' and 'edge_mapping', or 'FX' and 'edges'")
    if "y" in content and "edge_mapping" in content:
        values = _series(path, content["y"], "y")
        mapping = content["edge_mapping"]
        if not isinstance(mapping, dict) or not {"edge_index", "edge_weight"} <= set(mapping):
            raise dataset_error(path, "'edge_mapping' needs 'edge_index' and 'edge_weight', one entry per step")
        graphs = []
        for step in range(values.shape[0]):
            key = str(step)
            if key not in mapping["edge_index"] or key not in mapping["edge_weight"]:
                raise dataset_error(path, f"'edge_mapping' has no graph for step {step} (keys "
                                          f"'0'…'{values.shape[0] - 1}' expected)")
            graphs.append(_edges(path, mapping["edge_index"][key], mapping["edge_weight"][key], values.shape[1],
                                 f"graph of step {step}"))
        raw = bool(np.all(np.mod(values.numpy(), 1) == 0) and values.min() >= 0)
    elif "FX" in content and "edges" in content:
        values = _series(path, content["FX"], "FX")
        graphs = [_edges(path, content["edges"], content.get("edge_weight"), values.shape[1], "'edges'")]
        raw = bool(np.all(np.mod(values.numpy(), 1) == 0) and values.min() >= 0)
    else:
        raise dataset_error(path, f"expected keys 'y' + 'edge_mapping' (a graph per step) or 'FX' + 'edges' (one "
                                  f"graph), found {sorted(content)[:8]}")
    if values.shape[0] < 3:
        raise dataset_error(path, f"a series of {values.shape[0]} steps is too short to forecast")
    return TemporalGraphSeries(label, values, graphs, raw, str(path))


@dataclass(frozen=True)
class ForecastWindows:
    """Forecast origins ``t``: inputs ``values[t − L : t]`` per node, targets ``values[t + h − 1]``, ``h = 1…H``.

    ``targets`` is NaN where ``t + h − 1`` lies beyond the series; ``target_steps[s, h − 1] = t + h − 1``.
    """

    inputs: torch.Tensor  # (S, N, L)
    targets: torch.Tensor  # (S, N, H)
    origins: torch.Tensor  # (S,) long: t
    target_steps: torch.Tensor  # (S, H) long

    def __len__(self) -> int:
        return int(self.origins.numel())


def forecast_windows(values: torch.Tensor, lags: int, horizons: int) -> ForecastWindows:
    """Every origin ``t = L … T − 1`` of a ``(T, N)`` series with ``L = lags`` past values and ``H = horizons``.

    Example:
        >>> import torch
        >>> windows = forecast_windows(torch.arange(6.).unsqueeze(1), lags=2, horizons=2)
        >>> windows.inputs[0, 0].tolist(), windows.targets[0, 0].tolist(), windows.targets[-1, 0].tolist()
        ([0.0, 1.0], [2.0, 3.0], [5.0, nan])
    """
    if values.dim() != 2:
        raise ValueError(f"values must be a (T, N) series, got shape {tuple(values.shape)}")
    steps = values.shape[0]
    if lags < 1 or horizons < 1:
        raise ValueError(f"lags and horizons must be positive, got {lags} and {horizons}")
    if lags >= steps:
        raise ValueError(f"a window of {lags} lags needs more than {lags} steps; the series has {steps}")
    origins = torch.arange(lags, steps)
    inputs = values.unfold(0, lags, 1)[:steps - lags].contiguous()  # (S, N, L): window s is values[s : s + L]
    target_steps = origins[:, None] + torch.arange(horizons)[None, :]
    padded = torch.cat([values, torch.full((horizons, values.shape[1]), math.nan, dtype=values.dtype)])
    targets = padded[target_steps].permute(0, 2, 1)
    return ForecastWindows(inputs, targets.contiguous(), origins, target_steps)
