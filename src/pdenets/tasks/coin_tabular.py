"""Tabular classification with few labels: COIN (MLP + diffusion on a graph of samples) vs the MLP alone vs
label spreading.

The COIN paper's prostate-cancer data is not available offline; this runs its setting on
scikit-learn's bundled breast-cancer set (569 samples, 30 features, 2 classes) or a CSV file of the
user's. Per split, ``k`` labelled samples per class are drawn, every other sample is unlabelled and
is what the accuracy is measured on (transductive). Features are standardized over all samples.

* ``mlp`` — the convection alone, trained on the labelled samples;
* ``coin`` — the same MLP, then ``r`` diffusion steps on the Gaussian kNN graph of all samples
  (built once from the standardized features, rows normalized), then a linear classifier; trained
  on the labelled samples' outputs, the unlabelled ones taking part through the graph;
* ``label-spreading`` — scikit-learn's ``LabelSpreading`` (kNN kernel) on the same features.

No validation set exists with 5 labels per class, so the learned models train a fixed number of
epochs with weight decay (the same for both).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch.nn import functional as F

from ..data.paths import dataset_label
from ..data.tabular import TABULAR_DATASETS, load_tabular
from ..experiments.cache import process_cache
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.plots import plt
from ..experiments.summary import Stats, group_records
from ..experiments.task import Task, register_task
from ..models.registry import create_model
from ..operators import knn_gaussian_weights

__all__ = ["CoinTabularConfig", "CoinTabularTask", "TabularJob", "labelled_split"]

MODELS = ("coin", "mlp", "label-spreading")


@dataclass
class CoinTabularConfig(TaskConfig):
    """Configuration of ``pdenets run coin-tabular``."""

    datasets: List[str] = setting(["breast-cancer"], "breast-cancer or PATH.csv (label = last column)")
    label_column: Optional[str] = setting(None, "label column of a CSV file (default: the last)")
    labels_per_class: List[int] = setting([5, 10, 20], "labelled samples per class")
    splits: int = setting(50, "random labelled/unlabelled splits per setting")
    models: List[str] = setting(list(MODELS), "coin, mlp, label-spreading")
    hidden: int = setting(64, "MLP width")
    layers: int = setting(2, "MLP layers")
    dropout: float = setting(0.2, "MLP dropout")
    n_top: int = setting(10, "neighbours of the sample graph (COIN and label spreading)")
    sigma_neighbor: int = setting(5, "Gaussian bandwidth = distance to this neighbour")
    step_size: float = setting(0.25, "gamma of COIN's diffusion (row-normalized graph: stable up to 1)")
    num_steps: int = setting(3, "r, COIN's diffusion steps")
    spreading_alpha: float = setting(0.2, "alpha of LabelSpreading")
    epochs: int = setting(200, "full-batch Adam epochs")
    lr: float = setting(0.01, "Adam learning rate")
    weight_decay: float = setting(5e-4, "Adam weight decay")

    def validate(self) -> None:
        super().validate()
        check_fields(self, non_empty=("datasets", "labels_per_class", "models"), choices={"models": MODELS},
                     counts=("labels_per_class", "splits", "hidden", "layers", "n_top", "sigma_neighbor", "epochs"),
                     non_negative_counts=("num_steps",), positive=("step_size", "lr", "spreading_alpha"),
                     non_negative=("weight_decay",), probabilities=("dropout",))
        if self.sigma_neighbor > self.n_top:
            raise ConfigError(f"sigma_neighbor ({self.sigma_neighbor}) must not exceed n_top ({self.n_top})")
        if self.step_size > 1:
            raise ConfigError(f"step_size must be <= 1 on a row-normalized graph, got {self.step_size}")
        if not 0 < self.spreading_alpha < 1:
            raise ConfigError(f"spreading_alpha must lie in (0, 1), got {self.spreading_alpha}")
        for dataset in self.datasets:
            if dataset not in TABULAR_DATASETS and not dataset.lower().endswith(".csv"):
                raise ConfigError(f"datasets: {dataset!r} is neither breast-cancer nor a .csv path")


@dataclass(frozen=True)
class TabularJob:
    dataset: str
    labels_per_class: int
    split: int
    model: str
    settings: Tuple[Tuple[str, Any], ...]
    device: str
    label_column: Optional[str] = None


def labelled_split(labels: np.ndarray, per_class: int, seed: int) -> np.ndarray:
    """Indices of ``per_class`` labelled samples of every class, drawn with ``seed``."""
    rng = np.random.default_rng(seed)
    chosen = []
    for label in np.unique(labels):
        members = np.flatnonzero(labels == label)
        if len(members) <= per_class:
            raise ConfigError(f"class {label} has {len(members)} samples; {per_class} labelled ones would leave none "
                              "to predict")
        chosen.append(rng.choice(members, per_class, replace=False))
    return np.sort(np.concatenate(chosen))


def _data(dataset: str, label_column: Optional[str], settings: Dict[str, Any]) -> Dict[str, Any]:
    """The standardized table and, when the settings name one, its kNN Gaussian sample graph (cached)."""
    return _table_and_graph(dataset, label_column, settings.get("n_top"), settings.get("sigma_neighbor"))


@process_cache(maxsize=8)
def _table_and_graph(dataset: str, label_column: Optional[str], n_top: Optional[int],
                     sigma_neighbor: Optional[int]) -> Dict[str, Any]:
    table = load_tabular(dataset, label_column=label_column)
    features = table.features
    scale = features.std(0)
    features = (features - features.mean(0)) / np.where(scale > 0, scale, 1.0)
    points = torch.from_numpy(features)
    weights = None if sigma_neighbor is None else knn_gaussian_weights(
        points, n_top, sigma_neighbor=sigma_neighbor, normalization="row")
    return {"table": table, "features": points, "weights": weights}


def run_tabular_job(spec: TabularJob) -> Dict[str, Any]:
    settings = dict(spec.settings)
    data = _data(spec.dataset, spec.label_column, settings)
    labels = data["table"].labels
    labelled = labelled_split(labels, spec.labels_per_class, spec.split)
    unlabelled = np.setdiff1d(np.arange(len(labels)), labelled)
    start = time.perf_counter()
    if spec.model == "label-spreading":
        from sklearn.semi_supervised import LabelSpreading

        partial = np.full(len(labels), -1)
        partial[labelled] = labels[labelled]
        model = LabelSpreading(kernel="knn", n_neighbors=settings["n_top"], alpha=settings["spreading_alpha"],
                               max_iter=1000)
        model.fit(data["features"].numpy(), partial)
        predictions = model.transduction_
        fit = {"mean_confidence": float(model.label_distributions_.max(1).mean())}
    else:
        torch.manual_seed(spec.split)
        options = {"hidden": settings["hidden"], "num_layers": settings["layers"], "dropout": settings["dropout"],
                   "graph": data["weights"], "step_size": settings.get("step_size", 0.5),
                   "num_steps": settings["num_steps"] if spec.model == "coin" else 0}
        network = create_model("coin-mlp", in_features=data["features"].shape[1],
                               num_classes=data["table"].num_classes, **options).double().to(spec.device)
        features = data["features"].to(spec.device)
        targets = torch.from_numpy(labels).to(spec.device)
        train = torch.from_numpy(labelled).to(spec.device)
        optimizer = torch.optim.Adam(network.parameters(), lr=settings["lr"], weight_decay=settings["weight_decay"])
        for _ in range(settings["epochs"]):
            network.train()
            optimizer.zero_grad()
            loss = F.cross_entropy(network(features)[train], targets[train])
            loss.backward()
            optimizer.step()
        fit = {"final_loss": float(loss.detach())}
        network.eval()
        with torch.no_grad():
            predictions = network(features).argmax(1).cpu().numpy()
    accuracy = float((predictions[unlabelled] == labels[unlabelled]).mean())
    return {"accuracy": accuracy, "seconds": time.perf_counter() - start, "unlabelled": int(len(unlabelled)), **fit}


@register_task
class CoinTabularTask(Task):
    name = "coin-tabular"
    description = ("COIN for tabular classification with few labels: MLP + sample-graph diffusion vs MLP vs label "
                   "spreading")
    config_class = CoinTabularConfig
    shortcuts = {"dataset": "datasets", "model": "models", "labels": "labels_per_class"}
    columns = {"dataset": "TEXT", "labels_per_class": "INTEGER", "split": "INTEGER", "model": "TEXT",
               "accuracy": "REAL"}

    @classmethod
    def quick_config(cls) -> CoinTabularConfig:
        """Five splits per setting, 100 epochs."""
        return CoinTabularConfig(splits=5, epochs=100)

    def prepare(self) -> None:
        for dataset in self.config.datasets:
            table = load_tabular(dataset, label_column=self.config.label_column)
            for per_class in self.config.labels_per_class:
                labelled_split(table.labels, per_class, 0)

    def jobs(self) -> List[TabularJob]:
        config = self.config
        settings = {name: getattr(config, name) for name in (
            "hidden", "layers", "dropout", "n_top", "sigma_neighbor", "step_size", "num_steps", "spreading_alpha",
            "epochs", "lr", "weight_decay")}
        # only what a model computes with is part of its key (the MLP never sees the graph; label spreading builds
        # its own kNN kernel, without the Gaussian width)
        keep = {"label-spreading": ("n_top", "spreading_alpha"),
                "mlp": ("hidden", "layers", "dropout", "epochs", "lr", "weight_decay"),
                "coin": ("hidden", "layers", "dropout", "epochs", "lr", "weight_decay", "n_top", "sigma_neighbor",
                         "step_size", "num_steps")}
        jobs = []
        for dataset in config.datasets:
            for per_class in config.labels_per_class:
                for split in range(config.seed, config.seed + config.splits):
                    for model in config.models:
                        used = {k: v for k, v in settings.items() if k in keep.get(model, settings)}
                        jobs.append(TabularJob(dataset, per_class, split, model, tuple(sorted(used.items())),
                                               config.device, config.label_column))
        return jobs

    @staticmethod
    def run_job(spec: TabularJob) -> Dict[str, Any]:
        return run_tabular_job(spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * record['accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        table: Dict[str, Any] = {}
        for (dataset, per_class, model), members in group_records(
                records, by=("dataset", "labels_per_class", "model")).items():
            dataset = _label(dataset)
            stats = Stats.of((m["accuracy"] for m in members), scale=100)
            table.setdefault(dataset, {}).setdefault(str(per_class), {})[model] = {**stats.as_dict(),
                                                                                    "splits": len(members)}
        wins = {}
        for dataset, settings in table.items():
            for per_class, models in settings.items():
                if {"coin", "mlp"} <= set(models):
                    paired = _paired(records, dataset, int(per_class))
                    wins[f"{dataset}/{per_class}"] = paired
        return {"table": table, "coin_vs_mlp": wins}

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        config = self.config
        report = self.new_report(results, "pdenets — COIN for tabular classification with few labels")
        report.paragraph(
            "The COIN paper's prostate-cancer data is not available offline; this is its setting on scikit-learn's "
            "bundled breast-cancer set (or the CSV given). Per split, k labelled samples per class, the rest "
            f"unlabelled and scored. MLP: {config.layers} layers of width {config.hidden}, dropout {config.dropout}; "
            f"COIN: the same MLP, then r = {config.num_steps} diffusion steps (γ = {config.step_size}) on the "
            f"Gaussian {config.n_top}-NN graph of all samples (bandwidth: distance to neighbour "
            f"{config.sigma_neighbor}, rows normalized), then a linear classifier; {config.epochs} epochs of Adam "
            f"(lr {config.lr}, weight decay {config.weight_decay}). LabelSpreading: kNN kernel, {config.n_top} "
            f"neighbours, α = {config.spreading_alpha}.")
        figures = results.setdefault("figures", {})
        for dataset, settings in results["table"].items():
            report.heading(f"{dataset}: accuracy on the unlabelled samples (%), mean ± std over splits")
            models = [m for m in MODELS if any(m in s for s in settings.values())]
            rows = []
            for per_class, entries in sorted(settings.items(), key=lambda item: int(item[0])):
                row = [per_class]
                for model in models:
                    entry = entries.get(model)
                    row.append(f"{entry['mean']:.2f} ± {entry['std']:.2f}" if entry else "—")
                paired = results["coin_vs_mlp"].get(f"{dataset}/{per_class}")
                row.append(f"{paired['wins']}/{paired['pairs']} ({paired['mean_gain']:+.2f})" if paired else "—")
                row.append(min(entry["splits"] for entry in entries.values()))
                rows.append(row)
            report.table(["labels per class"] + models + ["COIN > MLP on splits (mean gain)", "splits"], rows,
                         caption="The same splits for every model; the paired column counts splits where COIN is "
                                 "more accurate than the MLP alone.")
            figures[dataset] = _figure(settings, models, dataset, run_dir)
            report.figure(figures[dataset], f"{dataset}: accuracy vs labels per class (mean ± std over splits).")
        self.write_report(report, run_dir)


def _label(dataset: str) -> str:
    return dataset_label(dataset, TABULAR_DATASETS)


def _paired(records, dataset: str, per_class: int) -> Dict[str, Any]:
    by_split: Dict[int, Dict[str, float]] = {}
    for record in records:
        if _label(record["dataset"]) == dataset and record["labels_per_class"] == per_class:
            by_split.setdefault(record["split"], {})[record["model"]] = record["accuracy"]
    gains = [100 * (v["coin"] - v["mlp"]) for v in by_split.values() if {"coin", "mlp"} <= set(v)]
    return {"pairs": len(gains), "wins": int(sum(g > 0 for g in gains)),
            "mean_gain": float(np.mean(gains)) if gains else float("nan")}


def _figure(settings, models, dataset, run_dir) -> str:
    fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    counts = sorted(int(k) for k in settings)
    for model in models:
        means = [settings[str(k)].get(model, {}).get("mean", np.nan) for k in counts]
        stds = [settings[str(k)].get(model, {}).get("std", np.nan) for k in counts]
        ax.errorbar(counts, means, yerr=stds, marker="o", capsize=3, label=model,
                    linewidth=2.2 if model == "coin" else 1.2)
    ax.set_xlabel("labelled samples per class")
    ax.set_ylabel("accuracy on unlabelled (%)")
    ax.set_xticks(counts)
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(dataset)
    return run_dir.save_figure(fig, f"{dataset}-accuracy.png")
