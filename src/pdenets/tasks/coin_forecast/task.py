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
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch

from ...data.errors import DataWarning
from ...data.paths import dataset_label
from ...data.temporal import TEMPORAL_DATASETS
from ...experiments.context import CPU, RunContext
from ...experiments.records import record_from_dict
from ...experiments.report import md_escape
from ...experiments.rundir import file_name_for
from ...experiments.summary import Stats, group_records
from ...experiments.task import Task, register_task
from ...models.training import masked_mse
from . import report as forecast_report
from .config import BASELINES, LEARNED, UNFITTED, CoinForecastConfig
from .forecasts import future_stamps, write_forecasts
from .model import DiffusionGrid, ForecastModel, ForecastTraining, fit_forecaster
from .protocol import (
    ForecastData,
    ForecastSetup,
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
    ForecastRecord,
    ForecastResults,
    ForecastTable,
    coin_vs_linear,
    diffusion_checks,
    record_class,
)

__all__ = [
    "CoinForecastConfig",
    "CoinForecastTask",
    "ForecastJob",
    "ForecastSetup",
    "ForecastTraining",
    "DiffusionGrid",
    "fit_job",
    "BASELINES",
    "LEARNED",
    "linear_forecast",
]


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


def fit_job(
    spec: ForecastJob, data: ForecastData, device: torch.device = CPU, *, choose: bool = True
) -> ForecastModel:
    """The forecaster of ``spec`` fitted on ``data`` (:func:`~.model.fit_forecaster`), COIN's ``(γ, r)`` over
    it chosen from ``spec.diffusion`` (``choose``: where it has one)."""
    return fit_forecaster(
        data,
        spec.model,
        seed=spec.seed,
        training=spec.training,
        grid=spec.diffusion if choose else None,
        device=device,
        name=f"{spec.dataset} ({spec.protocol})",
    )


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

    def record_type_of(self, spec: ForecastJob, record: Mapping[str, Any]) -> type:
        """The test errors (in counts too, on a count series), the time and the test forecasts; for a model
        COIN diffuses, its validation MSE and the diffused errors with the chosen (γ, r)."""
        return record_class(self.holds_counts(spec.dataset), spec.diffusion is not None)

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
    def run_job(spec: ForecastJob, context: RunContext) -> ForecastRecord:
        """One model's test errors, COIN's over it (with ``spec.diffusion``) and its horizon-1 test
        forecasts."""
        data = prepared_protocol(spec.dataset, spec.protocol, spec.setup, context.data_dir)
        start = time.perf_counter()
        fitted = fit_job(spec, data, context.device)
        prediction = fitted.prediction
        assert prediction is not None  # a fitted model holds its forecasts of every origin
        record = {
            "seconds": time.perf_counter() - start,
            **fitted.info,
            **forecast_metrics(prediction, data),
            "val_mse": masked_mse(prediction, data.targets, data.masks["val"]).item(),
        }
        choice = fitted.choice
        if choice is not None:
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
        return record_from_dict(record_class(data.series.raw_counts, choice is not None), record)

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
            coin = record["coin"]
            model_folder = "model-" + over + (f"-{file_name_for(label)}" if len(datasets) > 1 else "")
            fitted = fit_job(spec, data, context.device, choose=False).with_diffusion(
                float(coin["step_size"]), int(coin["num_steps"])
            )
            fitted.about = {"dataset": label, "seed": seed, "test_mse": entries[best].errors.mse.mean}
            saved = run_dir.register(fitted.save(run_dir.file(model_folder)))
            # the file is the saved model's answer, as pdenets predict gives it
            series = data.series
            forecast = ForecastModel.load(saved).forecast(series, label)
            path = run_dir.file(
                "forecasts" + (f"-{file_name_for(label)}" if len(datasets) > 1 else "") + ".csv"
            )
            columns = {
                over: forecast.columns[over],
                best.replace(COIN_OVER, "coin over "): forecast.columns[f"coin over {over}"],
            }
            run_dir.register(write_forecasts(path, series, columns, forecast.node_names))
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
