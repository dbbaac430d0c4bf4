"""Epidemic forecasting with convection–diffusion: COIN's case-prediction setting on the offline series.

The COIN paper's COVID-19 data is not available offline: this runs on ``england_covid`` (daily cases of 129
regions, a mobility graph per day), ``chickenpox`` (weekly, 20 counties) or any series of
:mod:`pdenets.data.temporal`, under the protocols of :mod:`pdenets.tasks.coin_forecast.protocol`. Models: the
convection alone (``window-mlp``: per region, shared weights), COIN (``coin-forecast``: the same, then ``r``
diffusion steps of the forecasts on the day's region graph), ``window-gcn``, ``cheb-gru`` (our GRU over the
lags with Chebyshev gates), the reference ``pygt-gconv-gru`` (PyTorch Geometric Temporal's GConvGRU trained as
its documentation does), three closed-form baselines and COIN over each model (its forecasts diffused with the
``(γ, r)`` whose gain on the selection days clears its noise, else the model kept:
:func:`~pdenets.models.coin_forecast_diffusion.choose_diffusion`). Diffusion and message passing use the graph
without self-loops, rows normalized.
"""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field, fields, replace
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch

from ...data.errors import DataWarning
from ...data.paths import dataset_label
from ...data.temporal import TEMPORAL_DATASETS
from ...experiments.config import ConfigError
from ...experiments.context import CPU, RunContext
from ...experiments.records import RecordFields
from ...experiments.report import md_escape
from ...experiments.rundir import file_name_for
from ...experiments.summary import Stats, group_records
from ...experiments.task import Task, register_task
from ...models.coin_forecast_diffusion import choose_diffusion
from ...models.forecasting import linear_coefficients
from ...models.training import evaluation_mode, fit_steps, masked_mse
from . import report as forecast_report
from .config import BASELINES, LEARNED, UNFITTED, CoinForecastConfig
from .forecasts import diffused_future, future_stamps, future_window, to_series_units, write_forecasts
from .protocol import (
    ForecastData,
    ForecastSetup,
    closed_form_forecast,
    diffuses_itself,
    first_horizon_forecasts,
    forecast_metrics,
    linear_forecast,
    prepared_protocol,
    protocols_for,
    read_series,
    split_days,
)  # noqa: F401
from .results import (
    COIN_OVER,
    ForecastCell,
    ForecastErrors,
    ForecastResults,
    ForecastTable,
    coin_vs_linear,
    diffusion_checks,
)
from .saved import REFERENCE_TRAINING, forecaster_network, save_forecast_model

__all__ = [
    "CoinForecastConfig",
    "CoinForecastTask",
    "ForecastJob",
    "ForecastSetup",
    "ForecastTraining",
    "DiffusionGrid",
    "BASELINES",
    "LEARNED",
    "linear_forecast",
]


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


@dataclass(frozen=True)
class DiffusionGrid:
    """The ``(γ, r)`` candidates of COIN over a model, sorted and distinct."""

    step_sizes: Tuple[float, ...]
    num_steps: Tuple[int, ...]


@dataclass(frozen=True, kw_only=True)
class ForecastJob:
    """One run; ``setup``/``training``/``diffusion`` are ``None`` for pyg-temporal/closed-form
    models/coin-forecast."""

    dataset: str
    protocol: str
    model: str
    seed: int
    setup: Optional[ForecastSetup]
    training: Optional[ForecastTraining]
    diffusion: Optional[DiffusionGrid] = None
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


def _setup(config: CoinForecastConfig) -> ForecastSetup:
    """Our protocol's settings of a configuration (its ``count_transform`` is the setup's ``transform``): the
    runs' and the report's, :meth:`~.protocol.ForecastSetup.of`."""
    return ForecastSetup.of(config)


def train_forecaster(
    spec: ForecastJob, data: ForecastData, device: torch.device = CPU
) -> Tuple[torch.Tensor, Dict, torch.nn.Module]:
    """Mini-batch Adam over whole origins (``batch_rows`` windows a step) on ``device``, early stopping on the
    validation MSE of the origins with a validation target (every ``eval_steps`` steps and after every pass);
    the best model is kept."""
    training = spec.training
    assert training is not None  # a learned model's job carries its training settings (closed forms none)
    reference = REFERENCE_TRAINING.get(spec.model)
    torch.manual_seed(spec.seed)
    model = forecaster_network(spec.model, data.lags, data.horizons, training).to(device)
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
            f"{spec.dataset} ({spec.protocol}): the split leaves {len(train_origins)} training and "
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
    optimizer = torch.optim.Adam(groups, lr=training.lr, weight_decay=training.weight_decay)
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
        generator=torch.Generator().manual_seed(spec.seed),
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
    optimizer = torch.optim.Adam(model.parameters(), lr=reference["lr"])
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


@register_task
class CoinForecastTask(Task[CoinForecastConfig]):
    name = "coin-forecast"
    description = (
        "COIN for series on a graph (regions, sensors): per-node convection + diffusion on the graph, vs "
        "baselines"
    )
    config_class = CoinForecastConfig
    shortcuts = {"dataset": "datasets", "model": "models", "protocol": "protocols"}
    columns = {"dataset": "TEXT", "protocol": "TEXT", "model": "TEXT", "seed": "INTEGER"}

    def record_fields(self, spec: ForecastJob, record: Mapping[str, Any]) -> RecordFields:
        """The test errors (in counts too, on a count series), the time and the test forecasts; for a model
        COIN diffuses, its validation MSE and the diffused errors with the chosen (γ, r)."""
        errors: Dict[str, Any] = {
            "mse": "number",
            "mae": "number",
            "top5_share": "number",
            "mse_by_horizon": ["number"],
            "mae_by_horizon": ["number"],
        }
        if self.holds_counts(spec.dataset):
            errors.update(mae_raw="number", mae_raw_by_horizon=["number"])
        fields: Dict[str, Any] = {
            **errors,
            "seconds": "number",
            "test_forecast": {"steps": ["integer"], "values": "list"},
        }
        if spec.diffusion is not None:
            fields.update(
                val_mse="number",
                coin={"step_size": "number", "num_steps": "integer", "val_mse": "number", **errors},
            )
        return fields

    @classmethod
    def quick_config(cls) -> CoinForecastConfig:
        """Both datasets and protocols, 4 lags and 3 horizons, one seed, early stopping after 50 steps."""
        return CoinForecastConfig(lags=4, horizons=3, seeds=[0], patience=50)

    def prepare(self) -> None:
        """Read every series, and check our protocol's split on it, before any run."""
        for dataset in self.config.datasets:
            series = read_series(dataset, self.config.data_dir)
            if "ours" in self.protocols(dataset):
                split_days(series.name, series.num_steps, _setup(self.config))
            if self.config.protocols != ["auto"] and "pyg-temporal" in self.config.protocols:
                if "pyg-temporal" not in protocols_for(dataset):
                    warnings.warn(
                        f"{dataset}: no PyTorch Geometric Temporal loader exists for a CSV folder; the "
                        "pyg-temporal protocol runs that library's split on the values as stored (not "
                        "scaled), with no published figures to compare with",
                        DataWarning,
                        stacklevel=2,
                    )

    def holds_counts(self, dataset: str) -> bool:
        """Whether ``dataset`` holds counts: its records then hold the raw MAEs too (the series is read once
        per process)."""
        return read_series(dataset, self.config.data_dir).raw_counts

    def protocols(self, dataset: str) -> Tuple[str, ...]:
        """The protocols run on ``dataset``: the configured ones, or for ``auto`` those that apply to it
        (:func:`~.protocol.protocols_for`)."""
        chosen = self.config.protocols
        return protocols_for(dataset) if list(chosen) == ["auto"] else tuple(chosen)

    def jobs(self) -> List[ForecastJob]:
        config = self.config
        training = ForecastTraining(
            **{item.name: getattr(config, item.name) for item in fields(ForecastTraining)}
        )
        grid = DiffusionGrid(
            tuple(sorted(set(config.diffusion_step_sizes))), tuple(sorted(set(config.diffusion_num_steps)))
        )
        jobs = []
        for dataset in config.datasets:
            for protocol in self.protocols(dataset):
                setup = _setup(config) if protocol == "ours" else None
                for model in config.models:
                    # deterministic and untrained: one run, no training settings
                    closed_form = model in BASELINES
                    for seed in config.seeds[:1] if closed_form else config.seeds:
                        jobs.append(
                            ForecastJob(
                                dataset=dataset,
                                protocol=protocol,
                                model=model,
                                seed=0 if closed_form else seed,
                                setup=setup,
                                training=None if closed_form else training,
                                diffusion=None if diffuses_itself(model) else grid,
                            )
                        )
        return jobs

    @staticmethod
    def run_job(spec: ForecastJob, context: RunContext) -> Dict[str, Any]:
        """One model's test errors, COIN's over it (with ``spec.diffusion``) and its horizon-1 test
        forecasts."""
        data = prepared_protocol(spec.dataset, spec.protocol, spec.setup, context.data_dir)
        start = time.perf_counter()
        closed_form = spec.model in BASELINES
        prediction, info = (
            (closed_form_forecast(spec.model, data), {})
            if closed_form
            else train_forecaster(spec, data, context.device)[:2]
        )
        record = {
            "seconds": time.perf_counter() - start,
            **info,
            **forecast_metrics(prediction, data),
            "val_mse": masked_mse(prediction, data.targets, data.masks["val"]).item(),
        }
        if spec.diffusion is not None:
            masks = data.masks
            selection = masks["train"] | masks["val"] if spec.model in UNFITTED else masks["val"]
            choice = choose_diffusion(
                prediction,
                data.targets,
                data.diffusion_graphs,
                data.target_steps,
                selection,
                spec.diffusion.step_sizes,
                spec.diffusion.num_steps,
            )
            record["coin"] = {
                "step_size": choice.step_size,
                "num_steps": choice.num_steps,
                "val_mse": choice.selection_mse,
                "gain": choice.gain,
                "lower_bound": choice.lower_bound,
                "blocks": choice.blocks,
                "selected_on": "pre-test" if spec.model in UNFITTED else "val",
                **forecast_metrics(choice.forecasts, data),
            }
        record["test_forecast"] = first_horizon_forecasts(prediction, data)  # for the report's plots
        return record

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"mse={record['mse']:.3f}"

    def summarize(self, records: List[Dict[str, Any]]) -> ForecastResults:
        table: ForecastTable = {}
        sources = {dataset_label(r["dataset"], TEMPORAL_DATASETS): r["dataset"] for r in records}
        for (dataset, protocol, model), members in group_records(
            records, by=("dataset", "protocol", "model")
        ).items():
            entries = table.setdefault(dataset_label(dataset, TEMPORAL_DATASETS), {}).setdefault(protocol, {})
            seconds = float(np.mean([m["seconds"] for m in members]))
            entries[model] = ForecastCell(
                runs=len(members), seconds_per_run=seconds, errors=ForecastErrors.of(members)
            )
            if "coin" in members[0]:
                diffused = [m["coin"] for m in members]
                entries[f"{COIN_OVER}{model}"] = ForecastCell(
                    runs=len(members),
                    seconds_per_run=seconds,
                    over=model,
                    chosen=[(d["step_size"], d["num_steps"]) for d in diffused],
                    val_mse=Stats.of(d["val_mse"] for d in diffused),
                    backbone_val_mse=Stats.of(m["val_mse"] for m in members),
                    errors=ForecastErrors.of(diffused),
                )
        return ForecastResults(
            table=table,
            sources=sources,
            coin_vs_linear=coin_vs_linear(table),
            diffusion_check=diffusion_checks(table),
        )

    def report(self, results: ForecastResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(
            results, "pdenets — COIN forecasting: " + ", ".join(map(md_escape, results.table))
        )
        forecast_report.add_sections(
            report,
            self.config,
            results,
            records,
            run_dir,
            models=BASELINES + LEARNED,
        )
        forecast_report.add_forecasts_section(report, self._write_forecasts(results, records, run_dir))
        self.write_report(report, run_dir)

    def _write_forecasts(
        self, results: ForecastResults, records: List[Dict[str, Any]], run_dir
    ) -> List[Dict]:
        """Per series of the user's files (``forecasts``): the COIN variant over a model with the lowest test
        MSE of our protocol, and that model, forecast past the series' end (:mod:`.forecasts`), written to
        ``forecasts.csv`` (``forecasts-<series>.csv`` for several)."""
        config, context = self.config, self.local_context()
        datasets = [
            dataset
            for dataset in dict.fromkeys(config.datasets)
            if config.forecasts == "always"
            or (config.forecasts == "auto" and dataset not in TEMPORAL_DATASETS)
        ]
        written = []
        for dataset in datasets:
            label = dataset_label(dataset, TEMPORAL_DATASETS)
            entries = results.table.get(label, {}).get("ours", {})
            variants = [name for name, cell in entries.items() if cell.over is not None]
            if not variants:
                continue
            best = min(variants, key=lambda name: entries[name].errors.mse.mean)
            over = entries[best].over
            assert over is not None
            seed = config.seeds[0] if over not in BASELINES else 0
            record = next(
                (
                    r
                    for r in records
                    if r.get("dataset") == dataset
                    and r.get("protocol") == "ours"
                    and r.get("model") == over
                    and r.get("seed") == seed
                    and "coin" in r
                ),
                None,
            )
            spec = next(
                (
                    job
                    for job in self.jobs()
                    if (job.dataset, job.protocol, job.model, job.seed) == (dataset, "ours", over, seed)
                ),
                None,
            )
            if record is None or spec is None:
                continue
            data = prepared_protocol(spec.dataset, spec.protocol, spec.setup, context.data_dir)
            window, graphs = future_window(data)
            network, coefficients = None, None
            if over in BASELINES:
                if over == "linear":
                    coefficients = linear_coefficients(
                        data.inputs, data.targets, data.masks["train"] | data.masks["val"]
                    )
                extended = replace(
                    data,
                    inputs=torch.cat([data.inputs, window.to(data.inputs.dtype)]),
                    targets=torch.cat([data.targets, torch.zeros_like(data.targets[:1])]),
                    masks={
                        name: torch.cat([mask, torch.zeros_like(mask[:1])])
                        for name, mask in data.masks.items()
                    },
                )
                forecast = closed_form_forecast(over, extended)[-1:].to(torch.float64)
            else:
                _, _, model = train_forecaster(spec, data, context.device)
                network = model
                with evaluation_mode(model), torch.no_grad():
                    forecast = model(window.to(device=context.device, dtype=torch.float32), graphs).to(
                        "cpu", torch.float64
                    )
            coin = record["coin"]
            diffused = diffused_future(forecast, graphs, float(coin["step_size"]), int(coin["num_steps"]))
            series = data.series
            path = run_dir.file(
                "forecasts" + (f"-{file_name_for(label)}" if len(datasets) > 1 else "") + ".csv"
            )
            columns = {
                over: to_series_units(forecast[0], data),
                best.replace(COIN_OVER, "coin over "): to_series_units(diffused[0], data),
            }
            write_forecasts(
                path, series, columns, [series.node_name(node) for node in range(series.num_nodes)]
            )
            run_dir.register(path)
            model_folder = "model-" + over + (f"-{file_name_for(label)}" if len(datasets) > 1 else "")
            saved = save_forecast_model(
                run_dir.file(model_folder),
                model=over,
                data=data,
                training=spec.training,
                network=network,
                coefficients=coefficients,
                step_size=float(coin["step_size"]),
                num_steps=int(coin["num_steps"]),
                about={"dataset": label, "seed": seed, "test_mse": entries[best].errors.mse.mean},
            )
            run_dir.register(saved)
            written.append(
                {
                    "dataset": label,
                    "file": path.name,
                    "models": list(columns),
                    "nodes": series.num_nodes,
                    "horizons": data.horizons,
                    "first": future_stamps(data)[0],
                    "last": future_stamps(data)[-1],
                    "unit": series.step_unit,
                    "step_size": float(coin["step_size"]),
                    "num_steps": int(coin["num_steps"]),
                    "test_mse": entries[best].errors.mse.mean,
                    "seed": seed,
                    "model_folder": saved.name,
                }
            )
        return written
