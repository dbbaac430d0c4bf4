"""Tabular classification with few labels: COIN (MLP + diffusion on a graph of samples) vs the MLP alone vs
label spreading.

The COIN paper's prostate-cancer data is not available offline; this runs its setting on
scikit-learn's bundled breast-cancer set (569 samples, 30 features, 2 classes) or a CSV file of the
user's. Per split, ``k`` labelled samples per class are drawn, every other sample is unlabelled and
is what the accuracy is measured on (transductive). The models, their fit and their saved form are
:mod:`.model`'s; a job fits one of them on one split.

No validation set exists with 5 labels per class, so the learned models train a fixed number of
epochs with weight decay (the same for both).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Tuple, TypedDict, Union

import numpy as np
import torch

from ..._cache import process_cache
from ...analysis.calibration import (
    CalibrationSummary,
    cross_fitted_calibration,
    expected_accuracy,
    fit_temperature,
    summarize_calibration,
    temperature_scaled,
)
from ...data.paths import dataset_label
from ...data.split_file import ItemSplit, read_split_file, split_of_entries
from ...data.tabular import (
    TABULAR_DATASETS,
    TabularData,
    detected_id_column,
    has_split_column,
    load_tabular,
)
from ...experiments.config import ConfigError
from ...experiments.context import CPU, RunContext
from ...experiments.predictions import write_predictions
from ...experiments.report import md_escape
from ...experiments.rundir import file_name_for
from ...experiments.summary import Stats, group_records
from ...experiments.task import Task, register_task
from . import report as tabular_report
from .config import CoinTabularConfig
from .model import (
    MODELS,
    GraphDiffusion,
    MlpSettings,
    Spreading,
    TabularModel,
    TabularSettings,
    fit_table,
    sample_graph,
    standardization,
)
from .results import AccuracyCell, CoinTabularResults, NetworkRecord, PairedComparison, SpreadingRecord

__all__ = [
    "CoinTabularConfig",
    "CoinTabularTask",
    "TabularJob",
    "labelled_split",
    "fit_job",
    "MlpSettings",
    "GraphDiffusion",
    "Spreading",
]


class _ModelSettings(TypedDict, total=False):
    """The settings of a :class:`TabularJob` that its model computes with."""

    mlp: MlpSettings
    diffusion: GraphDiffusion
    spreading: Spreading


@dataclass(frozen=True, kw_only=True)
class TabularJob:
    """One split of one model; only the settings its model computes with are set (the others are ``None``)."""

    dataset: str
    labels_per_class: int
    split: int
    model: str
    label_column: Optional[str] = None
    mlp: Optional[MlpSettings] = None
    diffusion: Optional[GraphDiffusion] = None
    spreading: Optional[Spreading] = None
    #: the id column is no feature: naming one changes the features (the runs of tables without one keep
    #: their keys)
    id_column: Optional[str] = field(default=None, metadata={"key": "unless-default"})
    #: the user's split (a split file, or the table's split column): the file, read where the job runs, and
    #: the digest of the split it holds (its key); ``labels_per_class`` is then 0
    split_file: Optional[str] = field(default=None, metadata={"key": False})
    split_digest: str = field(default="", metadata={"key": "unless-default"})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}

    @property
    def settings(self) -> TabularSettings:
        """The model this job fits and its settings."""
        return TabularSettings(self.model, self.mlp, self.diffusion, self.spreading)


@process_cache(maxsize=8)
def user_split(
    dataset: str, label_column: Optional[str], id_column: Optional[str], split_file: Optional[str]
) -> Optional[ItemSplit]:
    """The user's split of a table: ``split_file``'s (``id,split`` lines), else the table's column headed
    ``split``; ``None`` where it has neither. Its sets are ``train`` (the labelled rows) and ``test`` (the
    rows scored); a table has no validation rows (its models train a fixed number of epochs)."""
    if split_file is None and not has_split_column(dataset, label_column):
        return None  # (the table is not read: a table that needs an id column fails where it is read)
    table = load_tabular(dataset, label_column=label_column, id_column=id_column)
    if split_file is not None:
        if table.split_entries is not None:
            raise ConfigError(
                f"{dataset} has a split column and split_file {split_file} is given: keep one of them"
            )
        return read_split_file(
            split_file, table.ids(), table.labels.tolist(), sets=("train", "test"), required=("train", "test")
        )
    if table.split_entries is None:
        return None
    return split_of_entries(
        f"{dataset}, split column, line",
        table.split_entries,
        table.ids(),
        table.labels.tolist(),
        sets=("train", "test"),
        required=("train", "test"),
    )


def rows_of(spec: TabularJob) -> Tuple[np.ndarray, Optional[np.ndarray]]:
    """The rows ``spec`` trains on, and the rows it is scored on where the user's split names them (``None``:
    every labelled row not trained on)."""
    labels = table_of(spec).labels
    if not spec.split_digest:
        return labelled_split(labels, spec.labels_per_class, spec.split), None
    given = user_split(spec.dataset, spec.label_column, spec.id_column, spec.split_file)
    if given is None or given.digest != spec.split_digest:
        raise ConfigError(f"the split of {spec.dataset} changed since the runs were planned; run again")
    test = given.test.numpy()
    return given.train.numpy(), test[labels[test] >= 0]


def labelled_split(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of ``per_class`` labelled samples of every class, drawn with ``seed`` (rows labelled ``-1``,
    unlabelled, are never drawn)."""
    rng = np.random.default_rng(seed)
    chosen = []
    for label in np.unique(labels[labels >= 0]):
        members = np.flatnonzero(labels == label)
        if len(members) <= per_class:
            raise ConfigError(
                f"class {label} has {len(members)} samples; {per_class} labelled ones would leave none to "
                "predict"
            )
        chosen.append(rng.choice(members, per_class, replace=False))
    return np.sort(np.concatenate(chosen))


@process_cache(maxsize=8)
def _table_and_graph(
    dataset: str,
    label_column: Optional[str],
    n_top: Optional[int],
    sigma_neighbor: Optional[int],
    id_column: Optional[str] = None,
) -> Dict[str, Any]:
    """The table and, for COIN's settings, its rows' sample graph (once per process: the splits share it)."""
    table = load_tabular(dataset, label_column=label_column, id_column=id_column)
    weights = None
    if sigma_neighbor is not None:
        assert n_top is not None  # both come from the job's diffusion settings, or neither
        mean, scale = standardization(table.features)
        points = torch.from_numpy((table.features - mean) / scale)
        weights = sample_graph(points, n_top, sigma_neighbor)
    return {"table": table, "weights": weights}


def table_of(spec: TabularJob) -> TabularData:
    """The table ``spec`` reads (once per process)."""
    diffusion = spec.diffusion
    return _table_and_graph(
        spec.dataset,
        spec.label_column,
        diffusion.n_top if diffusion else None,
        diffusion.sigma_neighbor if diffusion else None,
        spec.id_column,
    )["table"]


def run_tabular_job(spec: TabularJob, device: torch.device = CPU) -> Union[NetworkRecord, SpreadingRecord]:
    """Train ``spec``'s model on ``device``; its accuracy on the scored rows, the time and its outcome."""
    start = time.perf_counter()
    model, labelled = fit_job(spec, device)
    labels = table_of(spec).labels
    _, given = rows_of(spec)
    # the user's test rows, else every row of known label not trained on
    scored = given if given is not None else np.setdiff1d(np.flatnonzero(labels >= 0), labelled)
    assert model.probabilities is not None  # a fitted model holds its training rows' probabilities
    predictions = model.probabilities.argmax(1)
    record = {
        "accuracy": float((predictions[scored] == labels[scored]).mean()),
        "seconds": time.perf_counter() - start,
        "unlabelled": int(len(scored)),
        **model.outcome,
        **cross_fitted_calibration(
            torch.from_numpy(model.probabilities), labels, scored, seed=spec.split, probabilities=True
        ),
    }
    return SpreadingRecord(**record) if spec.spreading is not None else NetworkRecord(**record)


def fit_job(spec: TabularJob, device: torch.device = CPU) -> Tuple[TabularModel, np.ndarray]:
    """The model of ``spec`` fitted on its split (:func:`~.model.fit_table`, the table's graph built once per
    process), and the rows it trained on."""
    diffusion = spec.diffusion
    data = _table_and_graph(
        spec.dataset,
        spec.label_column,
        diffusion.n_top if diffusion else None,
        diffusion.sigma_neighbor if diffusion else None,
        spec.id_column,
    )
    table = data["table"]
    labelled, _ = rows_of(spec)
    model = fit_table(
        table.features,
        table.labels,
        labelled,
        spec.settings,
        class_names=table.class_names,
        feature_names=table.feature_names,
        seed=spec.split,
        device=device,
        graph=data["weights"],
        about={
            "id_column": spec.id_column,
            "label_column": table.label_column or spec.label_column,
            "labels_per_class": spec.labels_per_class,
            "split": spec.split,
            "dataset": Path(str(spec.dataset)).name,
        },
    )
    return model, labelled


@register_task
class CoinTabularTask(Task[CoinTabularConfig]):
    name = "coin-tabular"
    description = (
        "COIN for tabular classification with few labels: MLP + sample-graph diffusion vs MLP vs label "
        "spreading"
    )
    config_class = CoinTabularConfig
    shortcuts = {
        "dataset": "datasets",
        "model": "models",
        "labels": "labels_per_class",
        "split": "split_file",
    }
    columns = {
        "dataset": "TEXT",
        "labels_per_class": "INTEGER",
        "split": "INTEGER",
        "model": "TEXT",
        "accuracy": "REAL",
    }

    def record_type_of(self, spec: TabularJob, record: Mapping[str, Any]) -> type:
        return SpreadingRecord if spec.spreading is not None else NetworkRecord

    @classmethod
    def quick_config(cls) -> CoinTabularConfig:
        """Five splits per setting, 100 epochs."""
        return CoinTabularConfig(splits=5, epochs=100)

    def prepare(self) -> None:
        """Read every dataset (a bad file fails before any run), check every split can be drawn, and describe
        each dataset for the report."""
        self.described: Dict[str, str] = {}
        for dataset in self.config.datasets:
            table = load_tabular(
                dataset,
                label_column=self.config.label_column,
                id_column=detected_id_column(dataset, self.config.id_column),
            )
            given = user_split(
                dataset,
                self.config.label_column,
                detected_id_column(dataset, self.config.id_column),
                self.config.split_file,
            )
            for per_class in self.config.labels_per_class if given is None else ():
                labelled_split(table.labels, per_class, 0)
            self.described[_label(dataset)] = tabular_report.describe(table)

    def jobs(self) -> List[TabularJob]:
        config = self.config
        mlp = MlpSettings(
            config.hidden_features,
            config.layers,
            config.dropout,
            config.epochs,
            config.lr,
            config.weight_decay,
        )
        diffusion = GraphDiffusion(config.n_top, config.sigma_neighbor, config.step_size, config.num_steps)
        # only what a model computes with is part of its key (the MLP never sees the graph; label spreading
        # builds its own kNN kernel, without the Gaussian width)
        parts: Dict[str, _ModelSettings] = {
            "label-spreading": {"spreading": Spreading(config.n_top, config.spreading_alpha)},
            "mlp": {"mlp": mlp},
            "coin": {"mlp": mlp, "diffusion": diffusion},
        }
        jobs = []
        for dataset in config.datasets:
            id_column = detected_id_column(dataset, config.id_column)
            given = user_split(dataset, config.label_column, id_column, config.split_file)
            # the user's split is one split; labels_per_class 0 names it
            per_classes = [0] if given is not None else config.labels_per_class
            for per_class in per_classes:
                for split in range(config.seed, config.seed + (1 if given is not None else config.splits)):
                    for model in config.models:
                        jobs.append(
                            TabularJob(
                                dataset=dataset,
                                labels_per_class=per_class,
                                split=split,
                                model=model,
                                label_column=config.label_column,
                                **parts[model],
                                id_column=id_column,
                                split_file=config.split_file,
                                split_digest=given.digest if given is not None else "",
                            )
                        )
        return jobs

    @staticmethod
    def run_job(spec: TabularJob, context: RunContext) -> Union[NetworkRecord, SpreadingRecord]:
        return run_tabular_job(spec, context.device)

    def settings_left_out(self) -> Dict[str, str]:
        """With the user's split on every table, the random splits' settings do nothing."""
        jobs = self.jobs()
        if jobs and all(job.split_digest for job in jobs):
            return {name: "your split replaces the random splits" for name in ("labels_per_class", "splits")}
        return {}

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * record['accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> CoinTabularResults:
        table: Dict[str, Dict[str, Dict[str, AccuracyCell]]] = {}
        calibration: Dict[str, Dict[str, CalibrationSummary]] = {}
        for (dataset, per_class, model), members in group_records(
            records, by=("dataset", "labels_per_class", "model")
        ).items():
            accuracy = Stats.of((m["accuracy"] for m in members), scale=100)
            scored = [m["unlabelled"] for m in members if isinstance(m.get("unlabelled"), int)]
            table.setdefault(_label(dataset), {}).setdefault(str(per_class), {})[model] = AccuracyCell(
                accuracy,
                splits=len(members),
                scored_rows=min(scored) if len(scored) == len(members) else None,
            )
            summary = summarize_calibration(members)
            if summary is not None:
                setting = "your split" if int(per_class) == 0 else f"{per_class} labels per class"
                calibration.setdefault(f"{_label(dataset)}, {setting}", {})[model] = summary
        wins = {
            f"{dataset}/{per_class}": _paired(records, dataset, int(per_class))
            for dataset, settings in table.items()
            for per_class, models in settings.items()
            if {"coin", "mlp"} <= set(models)
        }
        return CoinTabularResults(table=table, coin_vs_mlp=wins, calibration=calibration)

    def report(self, results: CoinTabularResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(
            results,
            "pdenets — COIN, classification with few labels: "
            + ", ".join(md_escape(label) for label in dict.fromkeys(_label(d) for d in self.config.datasets)),
        )
        tabular_report.add_sections(
            report, self.config, results, MODELS, run_dir, getattr(self, "described", {})
        )
        tabular_report.add_predictions_section(report, self._write_predictions(records, run_dir))
        self.write_report(report, run_dir)

    def _write_predictions(self, records: List[Dict[str, Any]], run_dir) -> List[Dict[str, Any]]:
        """Each model's first split (the first ``labels_per_class``) trained again on each table of the
        user's files (``predictions``), and its predictions of every row written by the rows' ids."""
        config, device = self.config, self.local_context().device
        datasets = [
            dataset
            for dataset in dict.fromkeys(config.datasets)
            if config.predictions == "always"
            or (config.predictions == "auto" and dataset not in TABULAR_DATASETS)
        ]
        firsts: Dict[Tuple[str, str], TabularJob] = {}
        for job in self.jobs():  # the first split of the first labels_per_class (or the user's split)
            firsts.setdefault((job.dataset, job.model), job)
        written = []
        for dataset in datasets:
            for model in config.models:
                spec = firsts[(dataset, model)]
                fitted, labelled = fit_job(spec, device)
                assert fitted.probabilities is not None
                probabilities = fitted.probabilities
                table = table_of(spec)
                saved = run_dir.register(fitted.save(run_dir.file(f"model-{model}")))
                _, given = rows_of(spec)
                splits = np.where(table.labels < 0, "unlabelled", "test" if given is None else "").astype(
                    object
                )
                if given is not None:
                    splits[given] = "test"
                splits[labelled] = "train"
                known = [table.class_names[label] if label >= 0 else None for label in table.labels.tolist()]
                name = "predictions"
                name += f"-{file_name_for(_label(dataset))}" if len(datasets) > 1 else ""
                name += f"-{model}" if len(config.models) > 1 else ""
                path = run_dir.register(
                    write_predictions(
                        run_dir.file(name + ".csv"),
                        table.ids(),
                        torch.from_numpy(np.asarray(probabilities, dtype=np.float64)),
                        table.class_names,
                        labels=known,
                        splits=list(splits),
                        overwrite=True,
                    )
                )
                test = splits == "test"
                stored = next(
                    (
                        r.get("accuracy")
                        for r in records
                        if _label(r.get("dataset", "")) == _label(dataset)
                        and r.get("model") == model
                        and r.get("split") == spec.split
                        and r.get("labels_per_class") == spec.labels_per_class
                    ),
                    None,
                )
                written.append(
                    {
                        "dataset": _label(dataset),
                        "model": model,
                        "file": path.name,
                        "rows": len(known),
                        "unlabelled": int((table.labels < 0).sum()),
                        "test_rows": int(test.sum()),
                        **_expected_on_unlabelled(probabilities, table.labels, test),
                        "test_accuracy": float((probabilities.argmax(1)[test] == table.labels[test]).mean())
                        if test.any()
                        else None,
                        "stored_accuracy": stored,
                        "labels_per_class": spec.labels_per_class,
                        "model_folder": saved.name,
                    }
                )
        return written


def _expected_on_unlabelled(
    probabilities: np.ndarray, labels: np.ndarray, held_out: np.ndarray
) -> Dict[str, Any]:
    """The accuracy to expect on the rows without a label
    (:func:`~pdenets.analysis.calibration.expected_accuracy`) from the probabilities calibrated on the
    held-out labelled rows (a temperature fitted on them; as trained where fewer than 4 are held out), and
    that temperature."""
    unlabelled = labels < 0
    if not unlabelled.any():
        return {"expected_unlabelled": None, "temperature": None}
    scores = torch.from_numpy(np.asarray(probabilities, dtype=np.float64))
    temperature = 1.0
    if held_out.sum() >= 4:
        temperature = fit_temperature(
            scores[held_out], torch.from_numpy(labels[held_out]), probabilities=True
        )
    calibrated = temperature_scaled(scores[unlabelled], temperature, probabilities=True)
    return {"expected_unlabelled": expected_accuracy(calibrated), "temperature": temperature}


def _label(dataset: str) -> str:
    return dataset_label(dataset, TABULAR_DATASETS)


def _paired(records: List[Dict[str, Any]], dataset: str, per_class: int) -> PairedComparison:
    """COIN against the MLP on the splits of ``dataset`` (its label) with ``per_class`` labels per class."""
    by_split: Dict[int, Dict[str, float]] = {}
    for record in records:
        if _label(record["dataset"]) == dataset and record["labels_per_class"] == per_class:
            by_split.setdefault(record["split"], {})[record["model"]] = record["accuracy"]
    gains = [100 * (v["coin"] - v["mlp"]) for v in by_split.values() if {"coin", "mlp"} <= set(v)]
    return PairedComparison(
        pairs=len(gains),
        wins=int(sum(g > 0 for g in gains)),
        mean_gain=float(np.mean(gains)) if gains else float("nan"),
    )
