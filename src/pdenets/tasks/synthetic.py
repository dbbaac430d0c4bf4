"""The synthetic suite of Diff-ResNet (Wang et al., §5.1 and Appendix E.1): XOR diffusion and 2-D classification.

Three parts, each a set of independent jobs:

1. **XOR, pure diffusion** (Fig. 3): 4 discs, kNN Gaussian weights, ``r`` explicit
   diffusion steps, recording ``D(t)``, ``L(t)`` and ``L/D`` every step, per seed, with the
   number of graph edges between discs (Prop. 1 assumes none).
2. **Moon / circle / spiral classification** (Figs. 4, 11, 12; Table 4): the 18-parameter
   network ``x + FC2 ReLU FC1 x → r diffusion steps → FC3`` with and without diffusion,
   full-batch SGD, several seeds, a held-out test sample of the same size with its own
   graph (per-batch weights, Remark 1), and two optimizers: SGD with momentum 0.9 as the
   paper states, and SGD without momentum, which is what the paper's scripts do (they
   build a new optimizer at every step, so the momentum buffer never carries over).
3. **Paper-script check**: the scripts' exact data (evenly spaced parameters, NumPy legacy
   seeding), initialization (``torch.manual_seed``) and 20 steps; the correct counts must
   equal the scripts' own output.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch
from torch.nn import functional as F

from ..analysis.ratio import distance_diameter
from ..data.synthetic import make_synthetic
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.plots import grouped_bars, mean_band, plt, scatter_classes
from ..experiments.report import Report
from ..experiments.summary import Stats, format_mean_std, group_records
from ..experiments.task import Task, register_task
from ..experiments.training import accuracy, evaluation_mode, fit
from ..models.registry import create_model
from ..operators.diffusion import DiffusionOperator
from ..operators.weights import NORMALIZATIONS, knn_gaussian_weights

__all__ = ["SyntheticConfig", "SyntheticTask", "SyntheticHyperparameters", "TABLE4", "PAPER_SCRIPT_REFERENCE",
           "VARIANTS"]


@dataclass
class SyntheticHyperparameters:
    """Weights, diffusion and learning rate of one set (Table 4)."""

    n_top: int = setting(25, "neighbours per point, self included")
    sigma: float = setting(0.5, "Gaussian kernel width")
    step_size: float = setting(1.0, "diffusion step size gamma")
    num_steps: int = setting(60, "diffusion steps r")
    lr: float = setting(1.0, "SGD learning rate")


@dataclass
class OptimizerSettings:
    momentum: float = setting(0.0, "SGD momentum")


#: Table 4 (and E.1: lr 1.0, spiral 0.8).
TABLE4: Dict[str, SyntheticHyperparameters] = {
    "moon": SyntheticHyperparameters(n_top=25, sigma=0.5, step_size=1.0, num_steps=60, lr=1.0),
    "circle": SyntheticHyperparameters(n_top=50, sigma=0.5, step_size=1.0, num_steps=200, lr=1.0),
    "spiral": SyntheticHyperparameters(n_top=25, sigma=0.5, step_size=1.0, num_steps=900, lr=0.8),
}

#: The paper scripts' seeds and their output (correct of 1000 after 20 steps): without → with diffusion.
PAPER_SCRIPT_REFERENCE: Dict[str, Dict[str, int]] = {
    "moon": {"seed": 40, "resnet": 877, "diff-resnet": 1000},
    "circle": {"seed": 42, "resnet": 516, "diff-resnet": 1000},
    "spiral": {"seed": 42, "resnet": 524, "diff-resnet": 1000},
}

#: Result names of the two networks and the registry model behind each.
VARIANTS = ("resnet", "diff-resnet")
_MODEL = {"resnet": "no-diff-resnet", "diff-resnet": "diff-resnet"}
#: Seed offset of each held-out test sample (test data of seed s: seed 10,000 + s).
TEST_SEED_OFFSET = 10_000


@dataclass
class SyntheticConfig(TaskConfig):
    """Configuration of ``pdenets run synthetic``."""

    datasets: List[str] = setting(["moon", "circle", "spiral"], "sets to classify: moon, circle, spiral")
    hyperparameters: Dict[str, SyntheticHyperparameters] = setting(
        TABLE4, "per set: n_top, sigma, step_size, num_steps, lr (Table 4)")
    points_per_class: int = setting(500, "training points per class")
    test_points_per_class: int = setting(500, "held-out test points per class")
    seeds: List[int] = setting(list(range(10)), "data and initialization seeds (added to --seed)")
    epochs: int = setting(100, "full-batch training epochs")
    paper_epochs: int = setting(20, "epoch whose accuracy is also reported (the paper's 20 steps)")
    optimizers: Dict[str, OptimizerSettings] = setting(
        {"sgd-momentum": OptimizerSettings(0.9), "sgd-plain": OptimizerSettings(0.0)}, "named SGD variants")
    weight_decay: float = setting(5e-4, "SGD weight decay")
    include_self: bool = setting(True, "count each point among its own n_top neighbours")
    normalization: str = setting("row", "weight normalization: row, symmetric or none")
    feature_epochs: List[int] = setting([0, 5, 20, 100], "epochs whose features are plotted (first seed)")
    xor_points_per_disc: int = setting(100, "XOR points per disc")
    xor_seeds: List[int] = setting(list(range(10)), "XOR data seeds")
    xor_n_top: int = setting(20, "XOR neighbours per point")
    xor_sigma: float = setting(0.5, "XOR kernel width")
    xor_step_size: float = setting(1.0, "XOR diffusion step size")
    xor_steps: int = setting(200, "XOR diffusion steps")
    xor_report_steps: List[int] = setting([1, 10, 20, 200], "XOR steps shown in the table and figure")
    paper_script_check: bool = setting(True, "rerun the paper scripts' exact protocol")
    dtype: str = setting("float32", "float32 or float64 for classification")

    def validate(self) -> None:
        super().validate()
        check_fields(self, non_empty=("datasets", "seeds", "xor_seeds", "optimizers"),
                     choices={"datasets": sorted(TABLE4), "normalization": NORMALIZATIONS,
                              "dtype": ("float32", "float64")},
                     counts=("points_per_class", "test_points_per_class", "epochs", "xor_points_per_disc",
                             "xor_n_top", "xor_steps", "xor_report_steps"),
                     non_negative_counts=("seeds", "xor_seeds", "feature_epochs", "paper_epochs"),
                     positive=("xor_sigma", "xor_step_size"), non_negative=("weight_decay",))
        missing = [name for name in self.datasets if name not in self.hyperparameters]
        if missing:
            raise ConfigError(f"no hyperparameters for {missing}")
        for name, hp in self.hyperparameters.items():
            check_fields(hp, counts=("n_top",), non_negative_counts=("num_steps",),
                         positive=("sigma", "step_size", "lr"), prefix=f"hyperparameters.{name}.")
        for name, settings in self.optimizers.items():
            check_fields(settings, non_negative=("momentum",), prefix=f"optimizers.{name}.")
        if any(step > self.xor_steps for step in self.xor_report_steps):
            raise ConfigError(f"xor_report_steps must lie in [1, xor_steps={self.xor_steps}]")


# ----------------------------------------------------------------------------------------
# job specs


@dataclass(frozen=True)
class GraphConvention:
    """How the kNN Gaussian graph of a sample is built (besides n_top and sigma)."""

    include_self: bool
    normalization: str


@dataclass(frozen=True)
class TrainingProtocol:
    """What every classification run of one configuration shares."""

    points_per_class: int
    test_points_per_class: int
    epochs: int
    paper_epochs: int
    weight_decay: float
    dtype: str


@dataclass(frozen=True)
class XorJob:
    seed: int
    points_per_disc: int
    n_top: int
    sigma: float
    step_size: float
    steps: int
    report_steps: Tuple[int, ...]
    graph: GraphConvention
    device: str


@dataclass(frozen=True)
class ClassificationJob:
    dataset: str
    seed: int
    optimizer: str
    momentum: float
    variant: str
    hyperparameters: SyntheticHyperparameters
    protocol: TrainingProtocol
    graph: GraphConvention
    snapshot_epochs: Tuple[int, ...]
    device: str


@dataclass(frozen=True)
class PaperScriptJob:
    dataset: str
    device: str


# ----------------------------------------------------------------------------------------
# one job each


def _cross_edges(weights: torch.Tensor, groups: torch.Tensor) -> int:
    row, col = weights.coalesce().indices()
    return int((groups[row] != groups[col]).sum())


def _run_xor(spec: XorJob) -> Dict[str, Any]:
    data = make_synthetic("xor", spec.points_per_disc, seed=spec.seed)
    points = data.points.to(spec.device, torch.float64)  # analysis: keep full precision
    weights = knn_gaussian_weights(points, spec.n_top, sigma=spec.sigma, include_self=spec.graph.include_self,
                                   normalization=spec.graph.normalization)
    operator = DiffusionOperator(weights, spec.step_size)
    groups = data.groups.to(spec.device)
    distances, diameters, positions = [], [], {0: points.cpu().numpy()}
    current = points
    for step in range(spec.steps + 1):
        if step > 0:
            current = operator.apply(current, 1)
        if step in spec.report_steps:
            positions[step] = current.cpu().numpy()
        measured = distance_diameter(current, groups)
        distances.append(measured.distance)
        diameters.append(measured.diameter)
    return {"labels": data.labels.numpy(), "cross_edges": _cross_edges(weights.cpu(), data.groups),
            "distance": distances, "diameter": diameters, "positions": positions}


def _sample(name: str, count: int, seed: int, spec: ClassificationJob):
    data = make_synthetic(name, count, seed=seed)
    points = data.points.to(spec.device, getattr(torch, spec.protocol.dtype))
    hp = spec.hyperparameters
    weights = knn_gaussian_weights(points, hp.n_top, sigma=hp.sigma, include_self=spec.graph.include_self,
                                   normalization=spec.graph.normalization)
    return data, points, data.labels.to(spec.device), weights


def _run_classification(spec: ClassificationJob) -> Dict[str, Any]:
    """Full-batch SGD on the training sample; train and held-out test accuracy after every epoch."""
    hp, protocol = spec.hyperparameters, spec.protocol
    train, train_points, train_labels, train_weights = _sample(spec.dataset, protocol.points_per_class, spec.seed,
                                                               spec)
    _, test_points, test_labels, test_weights = _sample(spec.dataset, protocol.test_points_per_class,
                                                        TEST_SEED_OFFSET + spec.seed, spec)
    torch.manual_seed(spec.seed)
    num_steps = hp.num_steps if spec.variant == "diff-resnet" else 0
    model = create_model(_MODEL[spec.variant], in_features=2, num_classes=2, num_steps=num_steps,
                         step_size=hp.step_size).to(spec.device, getattr(torch, protocol.dtype))
    optimizer = torch.optim.SGD(model.parameters(), lr=hp.lr, momentum=spec.momentum,
                                weight_decay=protocol.weight_decay)
    snapshots: Dict[int, np.ndarray] = {}
    epochs = itertools.count()

    def evaluate(epoch: int, last: Optional[int] = None) -> Dict[str, float]:
        """Accuracies now; the features stand for the epochs ``epoch … last`` in the snapshots."""
        with evaluation_mode(model):
            features = model.features(train_points, train_weights)
            metrics = {"train": accuracy(model.classifier(features), train_labels),
                       "test": accuracy(model(test_points, test_weights), test_labels)}
        for snapshot in spec.snapshot_epochs:
            if epoch <= snapshot <= (epoch if last is None else last):
                snapshots[snapshot] = features.cpu().numpy()
        return metrics

    start = time.perf_counter()
    history = [evaluate(next(epochs))]
    result = fit(model, optimizer, lambda: F.cross_entropy(model(train_points, train_weights), train_labels),
                 max_epochs=protocol.epochs, evaluate=lambda: evaluate(next(epochs)), restore_on_divergence=True)
    history += result.history
    if result.diverged_at is not None:  # the last finite parameters carry on to the last epoch
        history += [evaluate(result.diverged_at, last=protocol.epochs)] * (protocol.epochs + 1 - len(history))
    paper_epoch = min(protocol.paper_epochs, protocol.epochs)
    record = {
        "train_curve": [h["train"] for h in history], "test_curve": [h["test"] for h in history],
        "losses": result.losses, "train_accuracy": history[-1]["train"], "test_accuracy": history[-1]["test"],
        "train_accuracy_at_paper_epochs": history[paper_epoch]["train"],
        "test_accuracy_at_paper_epochs": history[paper_epoch]["test"], "diverged_at_epoch": result.diverged_at,
        "seconds": time.perf_counter() - start,
    }
    if spec.snapshot_epochs:
        record.update(snapshots=snapshots, points=train.points.numpy(), labels=train.labels.numpy())
    return record


def _run_paper_script(spec: PaperScriptJob) -> Dict[str, Any]:
    """The paper scripts' data, seeds and protocol (20 SGD steps with a fresh optimizer each, float32)."""
    reference = PAPER_SCRIPT_REFERENCE[spec.dataset]
    hp = TABLE4[spec.dataset]
    data = make_synthetic(spec.dataset, 500, grid=True, rng=np.random.RandomState(reference["seed"]))
    points, labels = data.points.float().to(spec.device), data.labels.to(spec.device)
    weights = knn_gaussian_weights(points, hp.n_top, sigma=hp.sigma, include_self=True, normalization="row")
    record = {}
    for variant in VARIANTS:
        torch.manual_seed(reference["seed"])
        num_steps = hp.num_steps if variant == "diff-resnet" else 0
        model = create_model(_MODEL[variant], in_features=2, num_classes=2, num_steps=num_steps,
                             step_size=hp.step_size).to(spec.device)
        start = time.perf_counter()
        for _ in range(20):
            optimizer = torch.optim.SGD(model.parameters(), lr=hp.lr, momentum=0.9, weight_decay=5e-4)
            optimizer.zero_grad()
            F.cross_entropy(model(points, weights), labels).backward()
            optimizer.step()
        with torch.no_grad():
            correct = int((model(points, weights).argmax(1) == labels).sum())
        record[variant] = {"correct": correct, "reference": reference[variant],
                           "seconds": time.perf_counter() - start}
    return record


#: job type → (part of the suite, how to run it)
_PARTS = {XorJob: ("xor", _run_xor), ClassificationJob: ("classification", _run_classification),
          PaperScriptJob: ("paper-script", _run_paper_script)}


# ----------------------------------------------------------------------------------------
# the task


@register_task
class SyntheticTask(Task):
    name = "synthetic"
    description = "Diff-ResNet synthetic suite: XOR diffusion (L/D), moon/circle/spiral with and without diffusion"
    config_class = SyntheticConfig
    shortcuts = {"dataset": "datasets"}
    columns = {"part": "TEXT", "dataset": "TEXT", "variant": "TEXT", "optimizer": "TEXT", "seed": "INTEGER",
               "test_accuracy": "REAL"}

    @classmethod
    def quick_config(cls) -> SyntheticConfig:
        """One seed, 20 epochs (the paper's step count), all three sets, two XOR seeds."""
        return SyntheticConfig(seeds=[0], epochs=20, feature_epochs=[0, 5, 20], xor_seeds=[0, 1])

    def jobs(self) -> List[Any]:
        config = self.config
        graph = GraphConvention(config.include_self, config.normalization)
        jobs: List[Any] = [XorJob(config.seed + seed, config.xor_points_per_disc, config.xor_n_top, config.xor_sigma,
                                  config.xor_step_size, config.xor_steps, tuple(config.xor_report_steps), graph,
                                  config.device) for seed in config.xor_seeds]
        protocol = TrainingProtocol(config.points_per_class, config.test_points_per_class, config.epochs,
                                    config.paper_epochs, config.weight_decay, config.dtype)
        shown = tuple(e for e in config.feature_epochs if e <= config.epochs)
        jobs += [ClassificationJob(name, config.seed + seed, optimizer, settings.momentum, variant,
                                   config.hyperparameters[name], protocol, graph,
                                   shown if seed == config.seeds[0] else (), config.device)
                 for name in config.datasets for seed in config.seeds
                 for optimizer, settings in config.optimizers.items() for variant in VARIANTS]
        if config.paper_script_check:
            jobs += [PaperScriptJob(name, config.device) for name in config.datasets]
        return jobs

    @staticmethod
    def run_job(spec) -> Dict[str, Any]:
        part, run = _PARTS[type(spec)]
        return {"part": part, **run(spec)}

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"test={record['test_accuracy']:.3f}" if "test_accuracy" in record else ""

    # -- results --------------------------------------------------------------------------

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        config = self.config
        results: Dict[str, Any] = {}
        xor = [r for r in records if r["part"] == "xor"]
        if xor:
            steps = config.xor_report_steps
            ratios = {r["seed"]: np.asarray(r["distance"]) / np.maximum(r["diameter"], 1e-300) for r in xor}
            results["xor"] = {
                "L_over_D_median": {f"step_{s}": float(np.median([ratios[k][s] for k in ratios])) for s in steps},
                "L_over_D_per_seed": {str(k): {f"step_{s}": float(v[s]) for s in steps} for k, v in ratios.items()},
                "D_median": {f"step_{s}": float(np.median([r["diameter"][s] for r in xor])) for s in steps},
                "L_median": {f"step_{s}": float(np.median([r["distance"][s] for r in xor])) for s in steps},
                "seeds_with_edges_between_discs": int(sum(r["cross_edges"] > 0 for r in xor)),
            }
        runs = [r for r in records if r["part"] == "classification"]
        table: Dict[str, Any] = {}
        for (name, optimizer, variant), members in group_records(runs, by=("dataset", "optimizer", "variant")).items():
            stats = {metric: Stats.of(r[metric] for r in members).as_dict() for metric in (
                "train_accuracy", "test_accuracy", "test_accuracy_at_paper_epochs", "train_accuracy_at_paper_epochs")}
            table.setdefault(name, {}).setdefault(optimizer, {})[variant] = {
                "runs": len(members), **stats,
                "perfect_train_runs": int(sum(r["train_accuracy"] >= 1.0 for r in members)),
                "perfect_test_runs": int(sum(r["test_accuracy"] >= 1.0 for r in members)),
                "diverged_runs": int(sum(r["diverged_at_epoch"] is not None for r in members)),
                "seconds_per_run": float(np.mean([r["seconds"] for r in members])),
            }
        results["classification"] = table
        scripts = {r["dataset"]: {v: r[v] for v in VARIANTS} for r in records if r["part"] == "paper-script"}
        if scripts:
            results["paper_script"] = scripts
        return results

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        config = self.config
        figures = results.setdefault("figures", {})
        report = Report("pdenets — synthetic suite (Diff-ResNet §5.1 / Appendix E.1)")
        report.paragraph(
            f"Wall time {results['wall_seconds']:.1f} s on `{config.device}` ({results['runs_stored']} of "
            f"{results['runs_planned']} runs stored). Weights: Gaussian kernel on the n_top-nearest-neighbour graph "
            f"(self included: {config.include_self}), `{config.normalization}` normalization; explicit diffusion with "
            "sparse operators. Configuration: `config.yaml`; all numbers: `results.json`, `runs.csv`, `curves.csv`.")
        xor = [r for r in records if r["part"] == "xor"]
        if xor:
            figures["xor"] = _xor_figure(xor, config, run_dir)
            _xor_section(report, xor, results, config, figures["xor"])
        runs = [r for r in records if r["part"] == "classification"]
        if runs:
            run_dir.write_csv("curves.csv", [
                {"dataset": r["dataset"], "optimizer": r["optimizer"], "variant": r["variant"], "seed": r["seed"],
                 "epoch": epoch, "train_accuracy": train, "test_accuracy": test}
                for r in runs for epoch, (train, test) in enumerate(zip(r["train_curve"], r["test_curve"]))])
            for name in config.datasets:
                for optimizer in config.optimizers:
                    if any(r["dataset"] == name and r["optimizer"] == optimizer for r in runs):
                        figures[f"{name}_{optimizer}"] = _dataset_figure(name, optimizer, runs, config, run_dir)
            figures["summary"] = _summary_figure(results, config, run_dir)
            _classification_section(report, results, config, figures)
        if "paper_script" in results:
            _paper_script_section(report, results)
        report.write(run_dir)


# ----------------------------------------------------------------------------------------
# figures and report sections


def _ratio(record: Dict[str, Any]) -> np.ndarray:
    return np.asarray(record["distance"]) / np.maximum(record["diameter"], 1e-300)


def _xor_figure(records: Sequence[Dict[str, Any]], config: SyntheticConfig, run_dir) -> str:
    shown = next((r for r in records if r["cross_edges"] == 0), records[0])
    steps = sorted(int(step) for step in shown["positions"])
    fig = plt.figure(figsize=(3.0 * len(steps), 6.4), layout="constrained")
    grid = fig.add_gridspec(2, len(steps))
    for column, step in enumerate(steps):
        scatter_classes(fig.add_subplot(grid[0, column]), shown["positions"][str(step)], shown["labels"],
                        title="raw data" if step == 0 else f"after {step} steps")
    axes = [fig.add_subplot(grid[1, : len(steps) // 2]), fig.add_subplot(grid[1, len(steps) // 2:])]
    x = np.arange(config.xor_steps + 1)
    for record in records:
        style = "-" if record["cross_edges"] == 0 else ":"
        edges = record["cross_edges"]
        label = f"seed {record['seed']}" + ("" if edges == 0 else f" ({edges} cross edges)")
        axes[0].semilogy(x, np.maximum(record["diameter"], 1e-16), style, linewidth=1, label=label)
        axes[1].semilogy(x, _ratio(record), style, linewidth=1)
    axes[0].set_title("largest subclass diameter D(t)", fontsize=9)
    axes[1].set_title("distance-diameter ratio L(t)/D(t)", fontsize=9)
    for ax in axes:
        ax.set_xlabel("diffusion steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"XOR under pure diffusion (points: seed {shown['seed']})", fontsize=10)
    return run_dir.save_figure(fig, "xor.png")


def _xor_section(report: Report, records, results, config: SyntheticConfig, figure: str) -> None:
    report.heading("XOR: pure diffusion (Fig. 3)")
    steps = config.xor_report_steps
    rows = [[str(r["seed"]), r["cross_edges"], float(_ratio(r)[0])] + [float(_ratio(r)[s]) for s in steps]
            for r in records]
    medians = results["xor"]["L_over_D_median"]
    rows.append(["**median**", "", float(np.median([r[2] for r in rows]))] + [medians[f"step_{s}"] for s in steps])
    report.table(["seed", "edges between discs", "L/D at 0"] + [f"L/D at {s}" for s in steps], rows,
                 caption=f"Distance-diameter ratio under diffusion (n_top {config.xor_n_top}, "
                         f"sigma {config.xor_sigma}, "
                         f"gamma {config.xor_step_size}).")
    report.paragraph(
        "Prop. 1 assumes that each subclass (disc) is a connected component of the graph. Where the kNN graph "
        "joins two discs (column 2 > 0) those discs diffuse toward a common point, D(t) stops shrinking and "
        "L/D levels off; where it does not, D(t) decays exponentially and L/D grows without bound.")
    report.figure(figure, f"XOR: points after {', '.join(map(str, steps))} diffusion steps; D(t) and L(t)/D(t) "
                          "for every seed (dotted: graphs with edges between discs).")


def _dataset_figure(name: str, optimizer: str, runs, config: SyntheticConfig, run_dir) -> str:
    rows = [r for r in runs if r["dataset"] == name and r["optimizer"] == optimizer]
    shown = {r["variant"]: r for r in rows if r.get("snapshots")}
    epochs = [e for e in config.feature_epochs if e <= config.epochs]
    fig = plt.figure(figsize=(2.8 * (len(epochs) + 1), 8.0), layout="constrained")
    grid = fig.add_gridspec(3, len(epochs) + 1)
    example = next(iter(shown.values()), None)
    if example is not None:
        scatter_classes(fig.add_subplot(grid[0, 0]), example["points"], example["labels"], title="raw data")
    ax = fig.add_subplot(grid[0, 1:])
    x = np.arange(config.epochs + 1)
    colors = {"resnet": "#7f7f7f", "diff-resnet": "#1f77b4"}
    for variant in VARIANTS:
        members = [r for r in rows if r["variant"] == variant]
        for key, style in (("train_curve", "-"), ("test_curve", "--")):
            if members:
                mean_band(ax, x, np.array([r[key] for r in members]), label=f"{variant} {key.split('_')[0]}",
                          color=colors[variant], linestyle=style)
    ax.axvline(config.paper_epochs, color="k", linewidth=0.6, alpha=0.4)
    ax.set_ylim(0.3, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    ax.set_title(f"accuracy vs epoch (mean and range over {len(config.seeds)} seeds; line: epoch "
                 f"{config.paper_epochs})", fontsize=9)
    for row, variant in enumerate(VARIANTS, start=1):
        snapshots = shown[variant]["snapshots"] if variant in shown and example is not None else {}
        for column, epoch in enumerate(epochs):
            sub = fig.add_subplot(grid[row, column + 1])
            if str(epoch) in snapshots:
                scatter_classes(sub, snapshots[str(epoch)], example["labels"], title=f"{variant}, epoch {epoch}")
        fig.add_subplot(grid[row, 0]).axis("off")
        fig.axes[-1].text(0.5, 0.5, "features before\nthe classifier\n" + variant, ha="center", va="center",
                          fontsize=9)
    fig.suptitle(f"{name}: {optimizer} (seed {config.seed + config.seeds[0]} features)", fontsize=10)
    return run_dir.save_figure(fig, f"{name}_{optimizer}.png")


def _summary_figure(results, config: SyntheticConfig, run_dir) -> str:
    table = results["classification"]
    groups = [(d, o) for d in config.datasets for o in config.optimizers if o in table.get(d, {})]
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 2, 3.4), layout="constrained")
    series = {variant: ([table[d][o][variant]["test_accuracy"]["mean"] for d, o in groups],
                        [table[d][o][variant]["test_accuracy"]["std"] for d, o in groups]) for variant in VARIANTS}
    grouped_bars(ax, [f"{d}\n{o}" for d, o in groups], series, colors={"resnet": "#7f7f7f", "diff-resnet": "#1f77b4"},
                 ylabel=f"held-out test accuracy (epoch {config.epochs})",
                 ylim=(min(0.4, *(mean - 0.05 for means, _ in series.values() for mean in means)), 1.02))  # every bar
    ax.axhline(0.5, color="k", linewidth=0.5, alpha=0.5)
    return run_dir.save_figure(fig, "summary.png")


def _classification_section(report: Report, results, config: SyntheticConfig, figures: Dict[str, str]) -> None:
    report.heading("Moon, circle, spiral: 18-parameter ResNet with and without diffusion (Figs. 4, 11, 12)")
    report.paragraph(
        f"{len(config.seeds)} seeds; each trains on {2 * config.points_per_class} points (full batch, "
        f"{config.epochs} epochs, weight decay {config.weight_decay}) and is tested on a held-out sample of "
        f"{2 * config.test_points_per_class} points from another seed, diffused on its own graph. "
        "Accuracies: mean ± std over seeds; 'perfect' counts seeds with 100 % on that split; "
        f"'at {config.paper_epochs}' "
        "is the accuracy after the paper's 20 steps. A run whose loss, parameters or outputs become non-finite "
        "stops and keeps its last finite parameters ('diverged').")
    rows = []
    for name, by_optimizer in results["classification"].items():
        for optimizer, by_variant in by_optimizer.items():
            for variant in VARIANTS:
                entry = by_variant.get(variant)
                if entry is None:
                    continue
                rows.append([name, optimizer, variant,
                             format_mean_std(entry["train_accuracy"]["mean"], entry["train_accuracy"]["std"]),
                             format_mean_std(entry["test_accuracy"]["mean"], entry["test_accuracy"]["std"]),
                             format_mean_std(entry["test_accuracy_at_paper_epochs"]["mean"]),
                             f"{entry['perfect_test_runs']}/{entry['runs']}",
                             f"{entry['diverged_runs']}/{entry['runs']}", f"{entry['seconds_per_run']:.2f}"])
    report.table(["set", "optimizer", "model", "train acc", "test acc", f"test acc at {config.paper_epochs}",
                  "perfect test", "diverged", "s/run"], rows)
    report.figure(figures["summary"], "Held-out test accuracy, mean ± std over seeds.")
    for name in config.datasets:
        for optimizer in config.optimizers:
            if f"{name}_{optimizer}" in figures:
                report.figure(figures[f"{name}_{optimizer}"],
                              f"{name}, {optimizer}: raw data; accuracy vs epoch (solid train, dashed test); features "
                              "before the classifier at several epochs without (middle row) and with (bottom row) "
                              "diffusion.")


def _paper_script_section(report: Report, results) -> None:
    report.heading("Check against the paper's scripts")
    report.paragraph(
        "The scripts' own data (evenly spaced curve parameters, NumPy legacy seed), initialization seed, "
        "row-normalized weights with self in the top-k, and 20 full-batch SGD steps with a fresh optimizer "
        "per step. Correct predictions of 1000 training points after 20 steps:")
    rows = [[name, entry["resnet"]["reference"], entry["resnet"]["correct"], entry["diff-resnet"]["reference"],
             entry["diff-resnet"]["correct"], f"{entry['diff-resnet']['seconds']:.2f}"]
            for name, entry in results["paper_script"].items()]
    report.table(["set", "ResNet (scripts)", "ResNet (pdenets)", "Diff-ResNet (scripts)", "Diff-ResNet (pdenets)",
                  "Diff-ResNet seconds (pdenets)"], rows)
