"""coin-forecast's model, in one place: a forecaster fitted on a series and COIN's diffusion of its forecasts,
its forecast of the steps after a series' end, and the saved model.

:func:`fit_forecaster` fits one forecaster on a protocol's windows (a closed form, or a network trained with
early stopping on the validation origins) and, given a grid, chooses COIN's ``(γ, r)`` over it
(:func:`~pdenets.models.coin_forecast_diffusion.choose_diffusion`); it returns a :class:`ForecastModel`. A
run's jobs (:mod:`.task`), its ``forecasts.csv``, ``pdenets predict RUN_DIR`` and
:class:`~pdenets.estimators.COINForecaster` all go through it.

A model keeps what it needs to read a series as the run read it: the protocol's ``lags`` and ``horizons``,
the count ``transform``, each node's scaling (``mean``, ``std`` of the run's training days), the node names
and the series' interval, the forecaster's weights (a learned model) or least-squares coefficients
(``linear``), and COIN's ``(γ, r)``. :meth:`ForecastModel.forecast` refuses a series with other nodes (by
name), another interval, or fewer steps than the lags, naming it; its nodes may come in any order.
:meth:`ForecastModel.load` reads the settings typed and range-checked, the node names distinct and as many as
the scaling holds, and compares a learned network with its weights before building it.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import torch

from ...data.errors import DatasetError
from ...data.temporal import TemporalGraphSeries
from ...experiments.config import ConfigError
from ...experiments.context import CPU
from ...models.coin_forecast_diffusion import DiffusionChoice, choose_diffusion
from ...models.forecasting import FORECASTERS, linear_coefficients
from ...models.optim import Adam
from ...models.registry import create_model
from ...models.training import evaluation_mode, fit_steps, masked_mse
from ...operators import SliceGraphs
from ...saved_model import (
    SavedModelError,
    check_fits,
    distinct_names,
    load_model,
    load_weights,
    save_model,
    typed_settings,
)
from .config import BASELINES, UNFITTED
from .forecasts import diffused_future, stamps_after, unscaled
from .protocol import ForecastData, closed_form_forecast, diffuses_itself, diffusion_graph

__all__ = [
    "ForecastTraining",
    "DiffusionGrid",
    "ForecastModel",
    "SeriesForecast",
    "fit_forecaster",
    "forecaster_network",
    "REFERENCE_TRAINING",
    "MAX_NUM_STEPS",
]

#: how the reference models train: as their documentation does (PyTorch Geometric Temporal's chickenpox
#: example: hidden 32, Adam at 0.01 without weight decay, 200 full-batch epochs on the per-node MSE, the last
#: model kept)
REFERENCE_TRAINING = {"pygt-gconv-gru": {"hidden_features": 32, "lr": 0.01, "epochs": 200}}
#: the most diffusion steps a forecaster or COIN over it takes (a bound on what a model file may ask for)
MAX_NUM_STEPS = 100_000


def _whole(value: Any, name: str, minimum: int) -> None:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be a whole number ≥ {minimum}, got {value!r}")


def _number(value: Any, name: str, minimum: float, *, open_below: bool) -> None:
    ok = not isinstance(value, (bool, np.bool_)) and isinstance(value, numbers.Real) and math.isfinite(value)
    if not ok or (value <= minimum if open_below else value < minimum):
        raise ValueError(
            f"{name} must be a finite number {'>' if open_below else '≥'} {minimum:g}, got {value!r}"
        )


@dataclass(frozen=True)
class ForecastTraining:
    """How a learned model is trained: the configuration's settings of the same names."""

    hidden_features: int = field(metadata={"stored_as": "hidden"})  # the runs stored before keep their keys
    step_size: float
    num_steps: int
    learn_step_size: bool
    epochs: int
    patience: int
    min_improvement: float
    lr: float
    weight_decay: float
    batch_rows: int
    eval_steps: int

    def __post_init__(self) -> None:
        for name in ("hidden_features", "epochs", "patience", "batch_rows", "eval_steps"):
            _whole(getattr(self, name), name, 1)
        _whole(self.num_steps, "num_steps", 0)
        if self.num_steps > MAX_NUM_STEPS:
            raise ValueError(f"num_steps must be at most {MAX_NUM_STEPS:,}, got {self.num_steps:,}")
        if not isinstance(self.learn_step_size, (bool, np.bool_)):
            raise ValueError(f"learn_step_size must be true or false, got {self.learn_step_size!r}")
        _number(self.step_size, "step_size", 0, open_below=True)
        _number(self.lr, "lr", 0, open_below=True)
        _number(self.min_improvement, "min_improvement", 0, open_below=False)
        _number(self.weight_decay, "weight_decay", 0, open_below=False)


@dataclass(frozen=True)
class DiffusionGrid:
    """The ``(γ, r)`` candidates of COIN over a model, sorted and distinct."""

    step_sizes: Tuple[float, ...]
    num_steps: Tuple[int, ...]


@dataclass(frozen=True)
class _Diffusion:
    """COIN's ``(γ, r)`` over a model as a saved model keeps it (``γ = 0`` or ``r = 0``: the model kept)."""

    step_size: float
    num_steps: int

    def __post_init__(self) -> None:
        _number(self.step_size, "step_size", 0, open_below=False)
        _whole(self.num_steps, "num_steps", 0)
        if self.num_steps > MAX_NUM_STEPS:
            raise ValueError(f"num_steps must be at most {MAX_NUM_STEPS:,}, got {self.num_steps:,}")


def forecaster_network(model: str, lags: int, horizons: int, training: ForecastTraining) -> torch.nn.Module:
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


class SeriesForecast:
    """The forecasts of the steps after a series' end: node names, time stamps, and per column (the model, and
    COIN over it) ``(N, H)`` values in the series' units."""

    def __init__(self, node_names: List[str], stamps: List[str], columns: Dict[str, torch.Tensor]):
        self.node_names, self.stamps, self.columns = node_names, stamps, columns


@dataclass
class ForecastModel:
    """A fitted forecaster of a series and COIN's diffusion over it (module docstring).

    Args:
        model: the forecaster's name (:data:`~pdenets.models.forecasting.FORECASTERS`).
        lags, horizons: the windows it reads and the steps it forecasts.
        transform: ``"log1p"`` or ``"none"`` before the scaling.
        mean, std: ``(N,)`` each node's scaling.
        node_names: the ``N`` nodes, in the order of the rows of a forecast.
        named_nodes: the series named its nodes (a new series' nodes are then matched by name).
        step_unit: the series' interval.
        training: a learned model's training settings (``None`` for a closed form).
        network: a learned model's network; coefficients: ``linear``'s least-squares coefficients.
        step_size, num_steps: COIN's ``(γ, r)`` over it (``γ = 0``: the model's forecast kept).
        prediction: ``(S, N, H)`` the fitted model's forecasts of every origin, scaled (where it was fitted
            here); info: its training's history; choice: COIN's choice where a grid was given.
        about: what the saved model's manifest adds.
    """

    model: str
    lags: int
    horizons: int
    transform: str
    mean: torch.Tensor
    std: torch.Tensor
    node_names: List[str]
    named_nodes: bool
    step_unit: str
    training: Optional[ForecastTraining] = None
    network: Optional[torch.nn.Module] = None
    coefficients: Optional[torch.Tensor] = None
    step_size: float = 0.0
    num_steps: int = 0
    prediction: Optional[torch.Tensor] = None
    info: Dict[str, Any] = field(default_factory=dict)
    choice: Optional[DiffusionChoice] = None
    about: Dict[str, Any] = field(default_factory=dict)

    def with_diffusion(self, step_size: float, num_steps: int) -> "ForecastModel":
        """This model with COIN's ``(γ, r)`` set (a run's choice, stored in its record)."""
        self.step_size, self.num_steps = float(step_size), int(num_steps)
        return self

    def forecast(self, series: TemporalGraphSeries, source: str = "the series") -> SeriesForecast:
        """The forecasts of the ``H`` steps after ``series``' last step, the model's and COIN's over it, in
        the series' units (module docstring)."""
        if series.step_unit != self.step_unit:
            raise DatasetError(
                f"{source}: one step is {series.step_unit!r}, the model's {self.step_unit!r} (another "
                "time step)"
            )
        lags, horizons = self.lags, self.horizons
        if series.num_steps < lags:
            raise DatasetError(f"{source}: {series.num_steps} steps, the model reads the last {lags}")
        order = self._node_order(series, source)
        values = series.values[-lags:, order].to(torch.float64)  # (L, N), the model's node order
        if self.transform == "log1p":
            if bool((values <= -1).any()):
                raise DatasetError(f"{source}: values of -1 or less cannot be read as counts (log(1 + y))")
            values = torch.log1p(values)
        if not bool(torch.isfinite(values).all()):
            raise DatasetError(f"{source}: the last {lags} steps hold missing or infinite values")
        window = ((values - self.mean) / self.std).T[None]  # (1, N, L)
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
        model = self.model
        if model == "linear":
            assert self.coefficients is not None
            design = torch.cat([window, torch.ones_like(window[..., :1])], -1)
            forecast = design @ self.coefficients.T
        elif model in ("last-value", "moving-average"):
            level = window[..., -1:] if model == "last-value" else window.mean(-1, keepdim=True)
            forecast = level.expand(1, nodes, horizons)
        else:
            assert self.network is not None
            with evaluation_mode(self.network), torch.no_grad():
                device = next(self.network.parameters()).device
                forecast = self.network(window.to(device=device, dtype=torch.float32), graphs).to(
                    "cpu", torch.float64
                )
        diffused = diffused_future(forecast, graphs, self.step_size, self.num_steps)
        return SeriesForecast(
            list(self.node_names),
            stamps_after(series, horizons),
            {
                model: unscaled(forecast[0], self.mean, self.std, self.transform),
                f"coin over {model}": unscaled(diffused[0], self.mean, self.std, self.transform),
            },
        )

    def _node_order(self, series: TemporalGraphSeries, source: str) -> torch.Tensor:
        """For each of the model's nodes, its row in ``series`` (nodes matched by name where both have
        names)."""
        names = self.node_names
        if series.num_nodes != len(names):
            raise DatasetError(f"{source}: {series.num_nodes} nodes, the model was fitted on {len(names)}")
        if not self.named_nodes or not series.node_names:
            return torch.arange(len(names), device=series.values.device)
        given = {name: row for row, name in enumerate(series.node_names)}
        unknown = [name for name in given if name not in set(names)]
        if unknown:
            raise DatasetError(
                f"{source}: nodes the model was not fitted on: {', '.join(map(repr, unknown[:5]))}"
                + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            )
        return torch.tensor([given[name] for name in names], device=series.values.device)

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the model in ``folder`` (another model's folder is never replaced); returns the folder
        written."""
        tensors: Dict[str, torch.Tensor] = {
            "mean": self.mean.to(torch.float64),
            "std": self.std.to(torch.float64),
        }
        if self.network is not None:
            tensors.update(
                {f"network.{name}": value.detach().cpu() for name, value in self.network.state_dict().items()}
            )
        if self.coefficients is not None:
            tensors["coefficients"] = self.coefficients.to(torch.float64)
        manifest = {
            "lags": self.lags,
            "horizons": self.horizons,
            "transform": self.transform,
            "training": asdict(self.training) if self.training is not None else None,
            "coin": {"step_size": float(self.step_size), "num_steps": int(self.num_steps)},
            "nodes": len(self.node_names),
            "node_names": list(self.node_names),
            "named_nodes": bool(self.named_nodes),
            "step_unit": self.step_unit,
            **self.about,
        }
        return save_model(folder, tensors, task="coin-forecast", model=self.model, manifest=manifest)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "ForecastModel":
        """A saved forecaster (by :meth:`save`, a run or the estimator), checked before anything is built
        (module docstring).

        Raises:
            SavedModelError: an altered, truncated or foreign model, settings of the wrong kind or out of
                range, node names repeated or not as many as the scaling holds, naming the file.
        """
        tensors, manifest = load_model(folder, task="coin-forecast")
        source = Path(folder) / "model.json"
        model = str(manifest.get("model"))
        if model not in FORECASTERS:
            raise SavedModelError(f"{source}: not a forecaster's manifest (unknown model {model!r})")
        for name in ("lags", "horizons"):
            value = manifest.get(name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 100_000:
                raise SavedModelError(f"{source}: {name} holds {value!r:.40}, not a whole number ≥ 1")
        lags, horizons = int(manifest["lags"]), int(manifest["horizons"])
        if manifest.get("transform") not in ("log1p", "none"):
            raise SavedModelError(f"{source}: transform is {manifest.get('transform')!r}, not log1p or none")
        if not isinstance(manifest.get("step_unit"), str) or not isinstance(
            manifest.get("named_nodes"), bool
        ):
            raise SavedModelError(f"{source}: not a forecaster's manifest (its step unit or node naming)")
        coin = typed_settings(_Diffusion, manifest.get("coin"), source, "coin")
        mean, std = tensors.get("mean"), tensors.get("std")
        if (
            mean is None
            or std is None
            or mean.ndim != 1
            or std.shape != mean.shape
            or not bool((std > 0).all())
        ):
            raise SavedModelError(f"{source}: its scaling is not one mean and one positive scale per node")
        names = distinct_names(manifest.get("node_names"), "node_names", source, count=len(mean))
        training, network, coefficients = None, None, None
        if model in BASELINES:
            if model == "linear":
                coefficients = tensors.get("coefficients")
                if coefficients is None or tuple(coefficients.shape) != (horizons, lags + 1):
                    raise SavedModelError(f"{source}: linear's coefficients are not {horizons} x {lags + 1}")
        else:
            training = typed_settings(ForecastTraining, manifest.get("training"), source, "training")
            learned = training
            check_fits(
                lambda: forecaster_network(model, lags, horizons, learned), tensors, source, "network."
            )
            network = load_weights(
                forecaster_network(model, lags, horizons, training), tensors, source, prefix="network."
            )
        known = {"lags", "horizons", "transform", "training", "coin", "nodes", "node_names", "named_nodes"}
        known |= {"step_unit", "model", "shapes", "weights", "format", "pdenets", "task"}
        return cls(
            model,
            lags,
            horizons,
            manifest["transform"],
            mean,
            std,
            names,
            manifest["named_nodes"],
            manifest["step_unit"],
            training=training,
            network=network,
            coefficients=coefficients,
            step_size=coin.step_size,
            num_steps=coin.num_steps,
            about={name: value for name, value in manifest.items() if name not in known},
        )


def fit_forecaster(
    data: ForecastData,
    model: str,
    *,
    seed: int = 0,
    training: Optional[ForecastTraining] = None,
    grid: Optional[DiffusionGrid] = None,
    device: torch.device = CPU,
    about: Optional[Dict[str, Any]] = None,
    name: Optional[str] = None,
) -> ForecastModel:
    """Fit the forecaster ``model`` on the windows ``data`` and, with ``grid``, choose COIN's ``(γ, r)``
    over it (module docstring).

    Args:
        data: a protocol's windows with their graphs (:func:`~.protocol.prepare_protocol`).
        model: a forecaster of :data:`~pdenets.models.forecasting.FORECASTERS`.
        seed: the seed of a learned model's initialization and batches.
        training: a learned model's training settings (a closed form takes none).
        grid: COIN's candidates (default: ``None``, no diffusion chosen; the forecaster keeps ``γ = 0``).
        device: where a learned model trains.
        about: what the saved model's manifest adds.
        name: the series in messages (default: its name).

    Returns:
        The fitted model, with its forecasts of every origin (``prediction``), its training history
        (``info``) and COIN's choice (``choice``).
    """
    series = data.series
    fitted = ForecastModel(
        model,
        data.lags,
        data.horizons,
        data.transform,
        data.mean.to(torch.float64),
        data.std.to(torch.float64),
        [series.node_name(node) for node in range(series.num_nodes)],
        bool(series.node_names),
        series.step_unit,
        about=dict(about or {}),
    )
    if model in BASELINES:
        fitted.prediction = closed_form_forecast(model, data)
        if model == "linear":
            fitted.coefficients = linear_coefficients(
                data.inputs, data.targets, data.masks["train"] | data.masks["val"]
            )
    else:
        if training is None:
            raise ValueError(f"the learned forecaster {model!r} needs its training settings")
        fitted.training = training
        fitted.prediction, fitted.info, fitted.network = _train(
            model, data, training, seed, device, name or f"{series.name} ({data.protocol})"
        )
    if grid is not None:
        masks = data.masks
        selection = masks["train"] | masks["val"] if model in UNFITTED else masks["val"]
        fitted.choice = choose_diffusion(
            fitted.prediction,
            data.targets,
            data.diffusion_graphs,
            data.target_steps,
            selection,
            grid.step_sizes,
            grid.num_steps,
        )
        fitted.with_diffusion(fitted.choice.step_size, fitted.choice.num_steps)
    return fitted


def _train(
    model_name: str,
    data: ForecastData,
    training: ForecastTraining,
    seed: int,
    device: torch.device,
    name: str,
) -> Tuple[torch.Tensor, Dict, torch.nn.Module]:
    """Mini-batch Adam over whole origins (``batch_rows`` windows a step) on ``device``, early stopping on the
    validation MSE of the origins with a validation target (every ``eval_steps`` steps and after every pass);
    the best model is kept. A reference model trains as its documentation does (:func:`_as_documented`)."""
    reference = REFERENCE_TRAINING.get(model_name)
    torch.manual_seed(seed)
    model = forecaster_network(model_name, data.lags, data.horizons, training).to(device)
    inputs, targets = (part.to(device=device, dtype=torch.float32) for part in (data.inputs, data.targets))
    masks = {name: mask.to(device) for name, mask in data.masks.items()}
    graphs = data.diffusion_graphs
    if reference:
        return (*_as_documented(model, inputs, targets, masks, graphs, reference), model)
    train_origins, val_origins = (
        masks[part].flatten(1).any(1).nonzero().squeeze(1).cpu() for part in ("train", "val")
    )
    if len(train_origins) == 0 or len(val_origins) == 0:
        raise ConfigError(
            f"{name}: the split leaves {len(train_origins)} training and "
            f"{len(val_origins)} validation origins; a learned model needs both"
        )
    per_batch = max(1, training.batch_rows // inputs.shape[1])

    def predict(origins: torch.Tensor) -> torch.Tensor:
        """Forecasts of ``origins`` without autograd, a few batches' worth of origins at a time."""
        with evaluation_mode(model):
            return torch.cat(
                [model(inputs[chunk], graphs.subset(chunk)) for chunk in origins.split(4 * per_batch)]
            )

    def validate() -> float:
        return float(masked_mse(predict(val_origins), targets[val_origins], masks["val"][val_origins]))

    # a learned diffusion time has no weight decay (decay would pull γ towards γ_max / 2)
    step_logit = [p for name, p in model.named_parameters() if name == "step_logit"]
    weights = [p for name, p in model.named_parameters() if name != "step_logit"]
    groups = [{"params": weights}] + ([{"params": step_logit, "weight_decay": 0.0}] if step_logit else [])
    optimizer = Adam(groups, lr=training.lr, weight_decay=training.weight_decay)
    fitted = fit_steps(
        model,
        optimizer,
        train_origins,
        lambda batch: masked_mse(
            model(inputs[batch], graphs.subset(batch)), targets[batch], masks["train"][batch]
        ),
        validate,
        batch_size=per_batch,
        max_epochs=training.epochs,
        eval_steps=training.eval_steps,
        patience=training.patience,
        min_improvement=training.min_improvement,
        generator=torch.Generator().manual_seed(seed),
    )
    prediction = predict(torch.arange(len(inputs))).to(device="cpu", dtype=torch.float64)
    curve = fitted.curve
    info = {
        "epochs": fitted.epochs,
        "steps": fitted.steps,
        "best_step": fitted.best_step,
        "best_epoch": fitted.best_epoch,
        "validations": len(curve),
        "curve": curve[:: max(1, len(curve) // 40)],
    }
    if getattr(model, "learn_step_size", False):
        info["learned_step_size"] = model.step_size
    return prediction, info, model


def _as_documented(model, inputs, targets, masks, graphs, reference) -> Tuple[torch.Tensor, Dict]:
    """A reference model trained as its documentation trains it: Adam, full batch over every origin with a
    target before the test period (no validation, no early stopping), the mean over origins of each origin's
    MSE, the last model kept."""
    fitted = masks["train"] | masks["val"]
    origins = fitted.flatten(1).any(1).nonzero().squeeze(1)
    optimizer = Adam(model.parameters(), lr=reference["lr"])
    model.train()
    for _ in range(reference["epochs"]):
        optimizer.zero_grad()
        errors = (model(inputs[origins], graphs.subset(origins)) - targets[origins]).square()
        weights = fitted[origins].to(errors.dtype)
        loss = ((errors * weights).sum((1, 2)) / weights.sum((1, 2))).mean()
        loss.backward()
        optimizer.step()
    with evaluation_mode(model):
        prediction = model(inputs, graphs).to(device="cpu", dtype=torch.float64)
    return prediction, {"epochs": reference["epochs"], "steps": reference["epochs"]}
