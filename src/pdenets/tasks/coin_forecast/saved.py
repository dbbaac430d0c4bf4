"""coin-forecast's saved models: the model a run's forecasts came from (the COIN variant with the lowest test
MSE and the model under it), kept beside ``forecasts.csv`` (``model-<name>/``, :mod:`pdenets.saved_model`),
forecasts the steps after the end of a longer series later (``pdenets predict RUN_DIR --dataset SERIES``).

A model keeps what it needs to read a series as the run read it: the protocol's ``lags`` and ``horizons``,
the count ``transform``, each node's scaling (``mean``, ``std`` of the run's training days), the node names
and the series' interval, the forecaster's weights (a learned model) or least-squares coefficients
(``linear``), and COIN's ``(γ, r)``. A series with other nodes (by name), another interval, or fewer steps
than the lags is refused naming the file; its nodes may come in any order.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Tuple

import torch

from ...data.errors import DatasetError
from ...data.temporal import TemporalGraphSeries
from ...models.forecasting import FORECASTERS
from ...models.registry import create_model
from ...models.training import evaluation_mode
from ...operators import SliceGraphs
from ...saved_model import SavedModelError, load_model, load_weights, save_model
from .forecasts import diffused_future, stamps_after, unscaled
from .protocol import ForecastData, diffuses_itself, diffusion_graph

__all__ = [
    "forecaster_network",
    "save_forecast_model",
    "load_forecast_model",
    "forecast_series",
    "SeriesForecast",
]

#: how the reference models train: as their documentation does (PyTorch Geometric Temporal's chickenpox
#: example: hidden 32, Adam at 0.01 without weight decay, 200 full-batch epochs on the per-node MSE, the last
#: model kept)
REFERENCE_TRAINING = {"pygt-gconv-gru": {"hidden_features": 32, "lr": 0.01, "epochs": 200}}


def forecaster_network(model: str, lags: int, horizons: int, training: Any) -> torch.nn.Module:
    """A learned forecaster ``model`` of ``lags`` inputs and ``horizons`` outputs, built with the training
    settings ``training`` (``hidden_features``; COIN's own forecaster also ``step_size``, ``num_steps``,
    ``learn_step_size``)."""
    reference = REFERENCE_TRAINING.get(model)
    coin = {
        "step_size": training.step_size,
        "num_steps": training.num_steps,
        "learn_step_size": training.learn_step_size,
    }
    return create_model(
        model,
        in_features=lags,
        num_classes=horizons,
        hidden_features=reference["hidden_features"] if reference else training.hidden_features,
        **(coin if diffuses_itself(model) else {}),
    )


def save_forecast_model(folder: Path, **parts: Any) -> Path:
    """Keep a forecaster (the arguments of :func:`forecast_model_state`) in ``folder``."""
    tensors, manifest = forecast_model_state(**parts)
    model = manifest.pop("model")
    return save_model(folder, tensors, task="coin-forecast", model=model, manifest=manifest)


def forecast_model_state(
    *,
    model: str,
    data: ForecastData,
    training: Any,
    network: Optional[torch.nn.Module],
    coefficients: Optional[torch.Tensor],
    step_size: float,
    num_steps: int,
    about: Dict[str, Any],
) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """The tensors and manifest of the forecaster ``model`` fitted on ``data`` (``network`` for a learned one,
    ``coefficients`` for ``linear``) with COIN's ``(step_size, num_steps)`` over it (module docstring)."""
    series = data.series
    tensors: Dict[str, torch.Tensor] = {
        "mean": data.mean.to(torch.float64),
        "std": data.std.to(torch.float64),
    }
    if network is not None:
        tensors.update(
            {f"network.{name}": value.detach().cpu() for name, value in network.state_dict().items()}
        )
    if coefficients is not None:
        tensors["coefficients"] = coefficients.to(torch.float64)
    manifest = {
        "model": model,
        "lags": data.lags,
        "horizons": data.horizons,
        "transform": data.transform,
        "training": asdict(training) if training is not None else None,
        "coin": {"step_size": float(step_size), "num_steps": int(num_steps)},
        "nodes": series.num_nodes,
        "node_names": [series.node_name(node) for node in range(series.num_nodes)],
        "named_nodes": bool(series.node_names),
        "step_unit": series.step_unit,
        **about,
    }
    return tensors, manifest


def load_forecast_model(folder: Path) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """A saved coin-forecast model, checked (:func:`~pdenets.saved_model.load_model`), its manifest's fields
    present."""
    tensors, manifest = load_model(folder, task="coin-forecast")
    needed = ("lags", "horizons", "transform", "coin", "node_names", "step_unit", "model")
    missing = [name for name in needed if name not in manifest]
    if missing or manifest["model"] not in FORECASTERS:
        raise SavedModelError(f"{Path(folder) / 'model.json'}: not a forecaster's manifest")
    return tensors, manifest


class SeriesForecast:
    """The forecasts of the steps after a series' end: node names, time stamps, and per column (the model, and
    COIN over it) ``(N, H)`` values in the series' units."""

    def __init__(self, node_names: List[str], stamps: List[str], columns: Dict[str, torch.Tensor]):
        self.node_names, self.stamps, self.columns = node_names, stamps, columns


def _node_order(series: TemporalGraphSeries, manifest: Dict[str, Any], source: str) -> torch.Tensor:
    """For each of the model's nodes, its row in ``series`` (nodes matched by name where both have names)."""
    names: List[str] = list(manifest["node_names"])
    if series.num_nodes != len(names):
        raise DatasetError(f"{source}: {series.num_nodes} nodes, the model was fitted on {len(names)}")
    if not manifest.get("named_nodes", True) or not series.node_names:
        return torch.arange(len(names), device=series.values.device)
    given = {name: row for row, name in enumerate(series.node_names)}
    unknown = [name for name in given if name not in set(names)]
    if unknown:
        raise DatasetError(
            f"{source}: nodes the model was not fitted on: {', '.join(map(repr, unknown[:5]))}"
            + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
        )
    return torch.tensor([given[name] for name in names], device=series.values.device)


def forecast_series(
    tensors: Dict[str, torch.Tensor], manifest: Dict[str, Any], series: TemporalGraphSeries, source: str
) -> SeriesForecast:
    """The saved model's forecasts of the ``H`` steps after ``series``' last step (module docstring)."""
    if series.step_unit != manifest["step_unit"]:
        raise DatasetError(
            f"{source}: one step is {series.step_unit!r}, the model's {manifest['step_unit']!r} (another "
            "time step)"
        )
    lags, horizons = int(manifest["lags"]), int(manifest["horizons"])
    if series.num_steps < lags:
        raise DatasetError(f"{source}: {series.num_steps} steps, the model reads the last {lags}")
    order = _node_order(series, manifest, source)
    values = series.values[-lags:, order].to(torch.float64)  # (L, N), the model's node order
    if manifest["transform"] == "log1p":
        if bool((values <= -1).any()):
            raise DatasetError(f"{source}: values of -1 or less cannot be read as counts (log(1 + y))")
        values = torch.log1p(values)
    if not bool(torch.isfinite(values).all()):
        raise DatasetError(f"{source}: the last {lags} steps hold missing or infinite values")
    mean, std = tensors["mean"], tensors["std"]
    window = ((values - mean) / std).T[None]  # (1, N, L)
    graph = series.graph_at(series.num_steps - 1)
    if isinstance(graph, tuple):  # the graph's node ids, renumbered in the model's order
        position = torch.empty_like(order)
        position[order] = torch.arange(len(order), device=order.device)
        graph = (position[graph[0]], graph[1])
    else:
        dense = graph.to_dense() if graph.is_sparse else torch.as_tensor(graph)
        graph = dense[order][:, order]
    nodes = len(order)
    graphs = SliceGraphs(
        [diffusion_graph(graph, nodes)], nodes, ids=torch.zeros(1, dtype=torch.long, device=window.device)
    )
    model = manifest["model"]
    if model == "linear":
        design = torch.cat([window, torch.ones_like(window[..., :1])], -1)
        forecast = design @ tensors["coefficients"].T
    elif model in ("last-value", "moving-average"):
        level = window[..., -1:] if model == "last-value" else window.mean(-1, keepdim=True)
        forecast = level.expand(1, nodes, horizons)
    else:
        training = manifest.get("training")
        if not isinstance(training, dict):
            raise SavedModelError(f"{source}: a learned forecaster without its training settings")
        network = forecaster_network(model, lags, horizons, SimpleNamespace(**training))
        load_weights(network, tensors, "the saved forecaster", prefix="network.")
        with evaluation_mode(network), torch.no_grad():
            forecast = network(window.to(torch.float32), graphs).to(torch.float64)
    coin = manifest["coin"]
    diffused = diffused_future(forecast, graphs, float(coin["step_size"]), int(coin["num_steps"]))
    transform = manifest["transform"]
    return SeriesForecast(
        list(manifest["node_names"]),
        stamps_after(series, horizons),
        {
            model: unscaled(forecast[0], mean, std, transform),
            f"coin over {model}": unscaled(diffused[0], mean, std, transform),
        },
    )
