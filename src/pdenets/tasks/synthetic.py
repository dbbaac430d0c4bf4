"""The synthetic suite of paper 000 (§5.1, Appendix E.1): XOR diffusion and 2-D classification.

Three parts:

1. **XOR, pure diffusion** (Fig. 3): 4 discs, kNN Gaussian weights, ``r`` explicit
   diffusion steps, recording ``D(t)``, ``L(t)`` and ``L/D`` every step, for several seeds,
   together with the number of graph edges between discs (Prop. 1 assumes none).
2. **Moon / circle / spiral classification** (Fig. 4, 11, 12; Table 4): the 18-parameter
   network ``x + FC2 ReLU FC1 x → r diffusion steps → FC3`` with and without diffusion,
   full-batch SGD, several seeds, a held-out test sample of the same size with its own
   graph (per-batch weights, paper Remark 1), and two optimizers: SGD with momentum 0.9
   as the paper states, and SGD without momentum, which is what the paper's scripts do
   (they build a new optimizer at every step, so the momentum buffer never carries over).
3. **Paper-script check**: the scripts' exact data (evenly spaced parameters, NumPy legacy
   seeding), initialization (``torch.manual_seed``) and 20 steps; the correct counts must
   equal the scripts' own output.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import numpy as np
import torch
from torch.nn import functional as F
from tqdm.auto import tqdm

from .._checks import NonFiniteError, check_finite
from ..analysis.ratio import distance_diameter
from ..data.synthetic import make_synthetic
from ..experiments.plots import mean_band, plt, save, scatter_classes
from ..experiments.report import Report
from ..experiments.rundir import RunDirectory
from ..models.diffresnet import DiffResNet
from ..operators.diffusion import DiffusionOperator
from ..operators.weights import knn_gaussian_weights

__all__ = ["SyntheticConfig", "run", "quick_config", "TABLE4", "PAPER_SCRIPT_REFERENCE"]

#: Paper 000, Table 4 (and E.1: lr 1.0, spiral 0.8).
TABLE4: Dict[str, Dict[str, float]] = {
    "moon": {"n_top": 25, "sigma": 0.5, "step_size": 1.0, "num_steps": 60, "lr": 1.0},
    "circle": {"n_top": 50, "sigma": 0.5, "step_size": 1.0, "num_steps": 200, "lr": 1.0},
    "spiral": {"n_top": 25, "sigma": 0.5, "step_size": 1.0, "num_steps": 900, "lr": 0.8},
}

#: The paper scripts' seeds and their output (correct of 1000 after 20 steps): without → with diffusion.
PAPER_SCRIPT_REFERENCE: Dict[str, Dict[str, int]] = {
    "moon": {"seed": 40, "resnet": 877, "diff-resnet": 1000},
    "circle": {"seed": 42, "resnet": 516, "diff-resnet": 1000},
    "spiral": {"seed": 42, "resnet": 524, "diff-resnet": 1000},
}

VARIANTS = ("resnet", "diff-resnet")


@dataclass
class SyntheticConfig:
    """Configuration of ``pdenets run synthetic`` (every field can be set with ``--set key=value``)."""

    datasets: List[str] = field(default_factory=lambda: ["moon", "circle", "spiral"])
    hyperparameters: Dict[str, Dict[str, float]] = field(default_factory=lambda: copy.deepcopy(TABLE4))
    points_per_class: int = 500
    test_points_per_class: int = 500
    seeds: List[int] = field(default_factory=lambda: list(range(10)))
    epochs: int = 100
    paper_epochs: int = 20
    optimizers: Dict[str, Dict[str, float]] = field(
        default_factory=lambda: {"sgd-momentum": {"momentum": 0.9}, "sgd-plain": {"momentum": 0.0}}
    )
    weight_decay: float = 5e-4
    include_self: bool = True
    normalization: str = "row"
    feature_epochs: List[int] = field(default_factory=lambda: [0, 5, 20, 100])
    xor_points_per_disc: int = 100
    xor_seeds: List[int] = field(default_factory=lambda: list(range(10)))
    xor_n_top: int = 20
    xor_sigma: float = 0.5
    xor_step_size: float = 1.0
    xor_steps: int = 200
    xor_report_steps: List[int] = field(default_factory=lambda: [1, 10, 20, 200])
    paper_script_check: bool = True
    device: str = "cpu"
    dtype: str = "float32"

    def validate(self) -> None:
        unknown = [name for name in self.datasets if name not in TABLE4]
        if unknown:
            raise ValueError(f"unknown dataset(s) {unknown}; choose from {sorted(TABLE4)}")
        missing = [name for name in self.datasets if name not in self.hyperparameters]
        if missing:
            raise ValueError(f"no hyperparameters for {missing}")
        if not self.seeds or not self.xor_seeds:
            raise ValueError("seeds and xor_seeds must not be empty")
        if self.epochs < 1 or self.xor_steps < 1:
            raise ValueError("epochs and xor_steps must be >= 1")
        if not self.optimizers:
            raise ValueError("give at least one optimizer")
        if self.dtype not in ("float32", "float64"):
            raise ValueError("dtype must be float32 or float64")
        if any(step > self.xor_steps or step < 1 for step in self.xor_report_steps):
            raise ValueError(f"xor_report_steps must lie in [1, xor_steps={self.xor_steps}]")


def quick_config() -> SyntheticConfig:
    """A small version for CI: one seed, 20 epochs (the paper's step count), all three sets."""
    return SyntheticConfig(seeds=[0], epochs=20,
                           feature_epochs=[0, 5, 20], xor_seeds=[0, 1])


# ----------------------------------------------------------------------------------------
# helpers


def _weights(points: torch.Tensor, hp: Dict[str, float], config: SyntheticConfig) -> torch.Tensor:
    return knn_gaussian_weights(points, int(hp["n_top"]), sigma=float(hp["sigma"]),
                                include_self=config.include_self, normalization=config.normalization)


def _accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    check_finite(logits, "the network's output")
    return float((logits.argmax(1) == labels).double().mean())


def _cross_edges(weights: torch.Tensor, groups: torch.Tensor) -> int:
    row, col = weights.coalesce().indices()
    return int((groups[row] != groups[col]).sum())


@dataclass
class _Split:
    points: torch.Tensor
    labels: torch.Tensor
    weights: torch.Tensor


def _train_run(split_train: _Split, split_test: _Split, hp: Dict[str, float], num_steps: int, momentum: float,
               config: SyntheticConfig, init_seed: int, snapshot_epochs: Optional[List[int]]) -> Dict:
    """Full-batch SGD on the training sample; evaluation on train and held-out test each epoch."""
    torch.manual_seed(init_seed)
    model = DiffResNet(2, 2, num_steps=num_steps, step_size=float(hp["step_size"])).to(config.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(hp["lr"]), momentum=momentum,
                                weight_decay=config.weight_decay)
    train_acc, test_acc, losses, snapshots = [], [], [], {}
    diverged_at = None

    def evaluate():
        model.eval()
        with torch.no_grad():
            features = model.features(split_train.points, split_train.weights)
            accuracies = (_accuracy(model.classifier(features), split_train.labels),
                          _accuracy(model(split_test.points, split_test.weights), split_test.labels))
        model.train()
        return accuracies, features

    def record(epoch, accuracies, features):
        train_acc.append(accuracies[0])
        test_acc.append(accuracies[1])
        if snapshot_epochs is not None and epoch in snapshot_epochs:
            snapshots[epoch] = features.cpu().numpy()

    start = time.perf_counter()
    record(0, *evaluate())
    for epoch in range(1, config.epochs + 1):
        previous = copy.deepcopy(model.state_dict())
        optimizer.zero_grad()
        try:
            loss = F.cross_entropy(model(split_train.points, split_train.weights), split_train.labels)
            finite = bool(torch.isfinite(loss))
        except NonFiniteError:  # features overflowed before reaching the diffusion layer
            finite = False
        if finite:
            loss.backward()
            optimizer.step()
            finite = all(bool(torch.isfinite(p).all()) for p in model.parameters())
            if finite:
                try:
                    accuracies_features = evaluate()
                except NonFiniteError:
                    finite = False
        if not finite:
            # Divergence: restore the last finite parameters, stop, and carry that state to the end.
            model.load_state_dict(previous)
            diverged_at = epoch
            final = evaluate()
            for later in range(epoch, config.epochs + 1):
                record(later, *final)
            break
        losses.append(float(loss.detach()))
        record(epoch, *accuracies_features)
    seconds = time.perf_counter() - start
    paper_epoch = min(config.paper_epochs, config.epochs)
    return {
        "train_curve": train_acc,
        "test_curve": test_acc,
        "losses": losses,
        "train_accuracy": train_acc[-1],
        "test_accuracy": test_acc[-1],
        "train_accuracy_at_paper_epochs": train_acc[paper_epoch],
        "test_accuracy_at_paper_epochs": test_acc[paper_epoch],
        "diverged_at_epoch": diverged_at,
        "seconds": seconds,
        "snapshots": snapshots,
    }


def _summary(values: List[float]) -> Dict[str, float]:
    array = np.asarray(values, dtype=float)
    return {"mean": float(np.nanmean(array)), "std": float(np.nanstd(array)), "min": float(np.nanmin(array)),
            "max": float(np.nanmax(array))}


# ----------------------------------------------------------------------------------------
# the three parts


def _run_xor(config: SyntheticConfig, progress: bool) -> Dict:
    records = []
    for seed in tqdm(config.xor_seeds, desc="xor diffusion", disable=not progress, leave=False):
        data = make_synthetic("xor", config.xor_points_per_disc, seed=seed)
        points = data.points.to(config.device, torch.float64)  # analysis: keep full precision
        weights = knn_gaussian_weights(points, config.xor_n_top, sigma=config.xor_sigma,
                                       include_self=config.include_self, normalization=config.normalization)
        operator = DiffusionOperator(weights, config.xor_step_size)
        groups = data.groups.to(config.device)
        distances, diameters = [], []
        positions = {0: points.cpu().numpy()}
        current = points
        for step in range(config.xor_steps + 1):
            if step > 0:
                current = operator.apply(current, 1)
            if step in config.xor_report_steps:
                positions[step] = current.cpu().numpy()
            measured = distance_diameter(current, groups)
            distances.append(measured.distance)
            diameters.append(measured.diameter)
        records.append({
            "seed": seed,
            "labels": data.labels.numpy(),
            "cross_edges": _cross_edges(weights.cpu(), data.groups),
            "distance": np.asarray(distances),
            "diameter": np.asarray(diameters),
            "positions": positions,
        })
    return {"records": records}


def _run_classification(config: SyntheticConfig, dtype, progress: bool) -> Dict:
    runs, curves, snapshots = [], [], {}
    total = len(config.datasets) * len(config.seeds) * len(config.optimizers) * len(VARIANTS)
    bar = tqdm(total=total, desc="synthetic classification", disable=not progress)
    for name in config.datasets:
        hp = config.hyperparameters[name]
        for seed in config.seeds:
            train = make_synthetic(name, config.points_per_class, seed=seed)
            test = make_synthetic(name, config.test_points_per_class, seed=10_000 + seed)
            splits = []
            for data in (train, test):
                points = data.points.to(config.device, dtype)
                splits.append(_Split(points, data.labels.to(config.device), _weights(points, hp, config)))
            for optimizer_name, optimizer_options in config.optimizers.items():
                for variant in VARIANTS:
                    num_steps = int(hp["num_steps"]) if variant == "diff-resnet" else 0
                    keep = seed == config.seeds[0]
                    result = _train_run(splits[0], splits[1], hp, num_steps, float(optimizer_options["momentum"]),
                                        config, seed, config.feature_epochs if keep else None)
                    if keep:
                        snapshots[(name, optimizer_name, variant)] = result["snapshots"]
                        snapshots[(name, "data")] = (train.points.numpy(), train.labels.numpy())
                    runs.append({
                        "dataset": name, "optimizer": optimizer_name, "variant": variant, "seed": seed,
                        "num_steps": num_steps, "train_accuracy": result["train_accuracy"],
                        "test_accuracy": result["test_accuracy"],
                        "train_accuracy_at_paper_epochs": result["train_accuracy_at_paper_epochs"],
                        "test_accuracy_at_paper_epochs": result["test_accuracy_at_paper_epochs"],
                        "diverged_at_epoch": result["diverged_at_epoch"], "seconds": result["seconds"],
                    })
                    for epoch, (tr, te) in enumerate(zip(result["train_curve"], result["test_curve"])):
                        curves.append({"dataset": name, "optimizer": optimizer_name, "variant": variant,
                                       "seed": seed, "epoch": epoch, "train_accuracy": tr, "test_accuracy": te})
                    bar.update(1)
                    bar.set_postfix_str(f"{name} {variant} test={result['test_accuracy']:.3f}")
    bar.close()
    return {"runs": runs, "curves": curves, "snapshots": snapshots}


def _run_paper_script_check(config: SyntheticConfig) -> Dict:
    """The paper scripts' data, seeds and protocol (20 plain SGD steps, float32, correct of 1000)."""
    out = {}
    for name in config.datasets:
        reference = PAPER_SCRIPT_REFERENCE[name]
        hp = TABLE4[name]
        data = make_synthetic(name, 500, grid=True, rng=np.random.RandomState(reference["seed"]))
        points = data.points.float().to(config.device)
        labels = data.labels.to(config.device)
        weights = knn_gaussian_weights(points, int(hp["n_top"]), sigma=hp["sigma"], include_self=True,
                                       normalization="row")
        entry = {}
        for variant in VARIANTS:
            torch.manual_seed(reference["seed"])
            num_steps = int(hp["num_steps"]) if variant == "diff-resnet" else 0
            model = DiffResNet(2, 2, num_steps=num_steps, step_size=hp["step_size"]).to(config.device)
            start = time.perf_counter()
            for _ in range(20):
                optimizer = torch.optim.SGD(model.parameters(), lr=hp["lr"], momentum=0.9, weight_decay=5e-4)
                optimizer.zero_grad()
                F.cross_entropy(model(points, weights), labels).backward()
                optimizer.step()
            with torch.no_grad():
                correct = int((model(points, weights).argmax(1) == labels).sum())
            entry[variant] = {"correct": correct, "reference": reference[variant],
                              "seconds": time.perf_counter() - start}
        out[name] = entry
    return out


# ----------------------------------------------------------------------------------------
# report


def _xor_figure(xor: Dict, config: SyntheticConfig, run_dir: RunDirectory):
    records = xor["records"]
    shown = next((r for r in records if r["cross_edges"] == 0), records[0])
    steps = sorted(shown["positions"])
    fig = plt.figure(figsize=(3.0 * len(steps), 6.4), layout="constrained")
    grid = fig.add_gridspec(2, len(steps))
    for column, step in enumerate(steps):
        ax = fig.add_subplot(grid[0, column])
        scatter_classes(ax, shown["positions"][step], shown["labels"], title="raw data" if step == 0 else f"after {step} steps")
    axes = [fig.add_subplot(grid[1, : len(steps) // 2]), fig.add_subplot(grid[1, len(steps) // 2:])]
    x = np.arange(config.xor_steps + 1)
    for record in records:
        style = "-" if record["cross_edges"] == 0 else ":"
        label = f"seed {record['seed']}" + ("" if record["cross_edges"] == 0 else f" ({record['cross_edges']} cross edges)")
        axes[0].semilogy(x, np.maximum(record["diameter"], 1e-16), style, linewidth=1, label=label)
        with np.errstate(divide="ignore"):
            axes[1].semilogy(x, record["distance"] / np.maximum(record["diameter"], 1e-300), style, linewidth=1)
    axes[0].set_title("largest subclass diameter D(t)", fontsize=9)
    axes[1].set_title("distance-diameter ratio L(t)/D(t)", fontsize=9)
    for ax in axes:
        ax.set_xlabel("diffusion steps")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=6, ncol=2)
    fig.suptitle(f"XOR under pure diffusion (points: seed {shown['seed']})", fontsize=10)
    return save(fig, run_dir.file("xor.png")).name


def _dataset_figure(name: str, optimizer: str, classification: Dict, config: SyntheticConfig,
                    run_dir: RunDirectory) -> str:
    points, labels = classification["snapshots"][(name, "data")]
    epochs = [e for e in config.feature_epochs if e <= config.epochs]
    fig = plt.figure(figsize=(2.8 * (len(epochs) + 1), 8.0), layout="constrained")
    grid = fig.add_gridspec(3, len(epochs) + 1)
    scatter_classes(fig.add_subplot(grid[0, 0]), points, labels, title="raw data")
    ax = fig.add_subplot(grid[0, 1:])
    x = np.arange(config.epochs + 1)
    colors = {"resnet": "#7f7f7f", "diff-resnet": "#1f77b4"}
    for variant in VARIANTS:
        rows = [c for c in classification["curves"]
                if c["dataset"] == name and c["optimizer"] == optimizer and c["variant"] == variant]
        seeds = sorted({c["seed"] for c in rows})
        for key, style in (("train_accuracy", "-"), ("test_accuracy", "--")):
            matrix = np.array([[c[key] for c in rows if c["seed"] == s] for s in seeds])
            mean_band(ax, x, matrix, label=f"{variant} {key.split('_')[0]}", color=colors[variant], linestyle=style)
    ax.axvline(config.paper_epochs, color="k", linewidth=0.6, alpha=0.4)
    ax.set_ylim(0.3, 1.02)
    ax.set_xlabel("epoch")
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, loc="lower right")
    ax.grid(alpha=0.3)
    ax.set_title(f"accuracy vs epoch (mean and range over {len(config.seeds)} seeds; line: epoch {config.paper_epochs})",
                 fontsize=9)
    for row, variant in enumerate(VARIANTS, start=1):
        snaps = classification["snapshots"][(name, optimizer, variant)]
        for column, epoch in enumerate(epochs):
            sub = fig.add_subplot(grid[row, column + 1])
            if epoch in snaps:
                scatter_classes(sub, snaps[epoch], labels, title=f"{variant}, epoch {epoch}")
        fig.add_subplot(grid[row, 0]).axis("off")
        fig.axes[-1].text(0.5, 0.5, "features before\nthe classifier\n" + variant, ha="center", va="center",
                          fontsize=9)
    fig.suptitle(f"{name}: {optimizer} (seed {config.seeds[0]} features)", fontsize=10)
    return save(fig, run_dir.file(f"{name}_{optimizer}.png")).name


def _summary_figure(results: Dict, config: SyntheticConfig, run_dir: RunDirectory) -> str:
    table = results["classification"]
    groups = [(d, o) for d in config.datasets for o in config.optimizers]
    fig, ax = plt.subplots(figsize=(1.6 * len(groups) + 2, 3.4), layout="constrained")
    width = 0.38
    for offset, variant, color in ((-width / 2, "resnet", "#7f7f7f"), (width / 2, "diff-resnet", "#1f77b4")):
        means = [table[d][o][variant]["test_accuracy"]["mean"] for d, o in groups]
        stds = [table[d][o][variant]["test_accuracy"]["std"] for d, o in groups]
        ax.bar(np.arange(len(groups)) + offset, means, width, yerr=stds, label=variant, color=color, capsize=2)
    ax.set_xticks(np.arange(len(groups)), [f"{d}\n{o}" for d, o in groups], fontsize=8)
    ax.set_ylim(0.4, 1.02)
    ax.set_ylabel(f"held-out test accuracy (epoch {config.epochs})")
    ax.axhline(0.5, color="k", linewidth=0.5, alpha=0.5)
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return save(fig, run_dir.file("summary.png")).name


def _write_report(results: Dict, xor: Dict, classification: Dict, config: SyntheticConfig,
                  run_dir: RunDirectory) -> None:
    report = Report("pdenets — synthetic suite (Diff-ResNet, paper 000 §5.1 / Appendix E.1)")
    report.paragraph(
        f"Total time {results['seconds_total']:.1f} s on `{config.device}`. Weights: Gaussian kernel on the "
        f"n_top-nearest-neighbour graph (self included: {config.include_self}), `{config.normalization}` "
        "normalization; explicit diffusion with sparse operators. Configuration: `config.yaml`; all numbers: "
        "`results.json`, `runs.csv`, `curves.csv`."
    )

    report.heading("XOR: pure diffusion (Fig. 3)")
    steps = config.xor_report_steps
    rows = []
    for record in xor["records"]:
        ratio = record["distance"] / np.maximum(record["diameter"], 1e-300)
        rows.append([str(record["seed"]), record["cross_edges"], float(ratio[0])] + [float(ratio[s]) for s in steps])
    medians = results["xor"]["L_over_D_median"]
    rows.append(["**median**", "", float(np.median([r[2] for r in rows]))] + [medians[f"step_{s}"] for s in steps])
    report.table(["seed", "edges between discs", "L/D at 0"] + [f"L/D at {s}" for s in steps], rows,
                 caption="Distance-diameter ratio under diffusion (n_top "
                         f"{config.xor_n_top}, sigma {config.xor_sigma}, gamma {config.xor_step_size}).")
    report.paragraph(
        "Prop. 1 assumes that each subclass (disc) is a connected component of the graph. Where the kNN graph "
        "joins two discs (column 2 > 0) those discs diffuse toward a common point, D(t) stops shrinking and "
        "L/D levels off; where it does not, D(t) decays exponentially and L/D grows without bound."
    )
    report.figure(results["figures"]["xor"], "XOR: points after 1, 10, 20, 200 diffusion steps; D(t) and L(t)/D(t) "
                  "for every seed (dotted: graphs with edges between discs).")

    report.heading("Moon, circle, spiral: 18-parameter ResNet with and without diffusion (Fig. 4, 11, 12)")
    report.paragraph(
        f"{len(config.seeds)} seeds; each trains on {2 * config.points_per_class} points (full batch, "
        f"{config.epochs} epochs, weight decay {config.weight_decay}) and is tested on a held-out sample of "
        f"{2 * config.test_points_per_class} points from another seed, diffused on its own graph. "
        f"Accuracies: mean ± std over seeds; 'perfect' counts seeds with 100 % on that split; 'at {config.paper_epochs}' "
        "is the accuracy after the paper's 20 steps. A run whose loss, parameters or outputs become non-finite "
        "stops and keeps its last finite parameters ('diverged')."
    )
    headers = ["set", "optimizer", "model", "train acc", "test acc", f"test acc at {config.paper_epochs}",
               "perfect test", "diverged", "s/run"]
    rows = []
    for name in config.datasets:
        for optimizer in config.optimizers:
            for variant in VARIANTS:
                entry = results["classification"][name][optimizer][variant]
                rows.append([
                    name, optimizer, variant,
                    f"{entry['train_accuracy']['mean']:.3f} ± {entry['train_accuracy']['std']:.3f}",
                    f"{entry['test_accuracy']['mean']:.3f} ± {entry['test_accuracy']['std']:.3f}",
                    f"{entry['test_accuracy_at_paper_epochs']['mean']:.3f}",
                    f"{entry['perfect_test_runs']}/{entry['runs']}",
                    f"{entry['diverged_runs']}/{entry['runs']}",
                    f"{entry['seconds_per_run']:.2f}",
                ])
    report.table(headers, rows)
    report.figure(results["figures"]["summary"], "Held-out test accuracy, mean ± std over seeds.")
    for name in config.datasets:
        for optimizer in config.optimizers:
            report.figure(results["figures"][f"{name}_{optimizer}"],
                          f"{name}, {optimizer}: raw data; accuracy vs epoch (solid train, dashed test); features "
                          "before the classifier at several epochs without (middle row) and with (bottom row) diffusion.")

    if "paper_script" in results:
        report.heading("Check against the paper's scripts")
        report.paragraph(
            "The scripts' own data (evenly spaced curve parameters, NumPy legacy seed), initialization seed, "
            "row-normalized weights with self in the top-k, and 20 full-batch SGD steps with a fresh optimizer "
            "per step. Correct predictions of 1000 training points after 20 steps:"
        )
        rows = []
        for name, entry in results["paper_script"].items():
            rows.append([name, entry["resnet"]["reference"], entry["resnet"]["correct"],
                         entry["diff-resnet"]["reference"], entry["diff-resnet"]["correct"],
                         f"{entry['diff-resnet']['seconds']:.2f}"])
        report.table(["set", "ResNet (scripts)", "ResNet (pdenets)", "Diff-ResNet (scripts)", "Diff-ResNet (pdenets)",
                      "Diff-ResNet seconds (pdenets)"], rows)
    report.write(run_dir.path)


# ----------------------------------------------------------------------------------------


def run(config: SyntheticConfig, run_dir: RunDirectory, *, progress: bool = True) -> Dict:
    """Run the suite, write ``results.json``, CSVs, plots and the report into ``run_dir``."""
    config.validate()
    dtype = getattr(torch, config.dtype)
    start = time.perf_counter()
    xor = _run_xor(config, progress)
    classification = _run_classification(config, dtype, progress)

    results: Dict = {"xor": {}, "classification": {}, "figures": {}}
    steps = config.xor_report_steps
    ratios = {r["seed"]: r["distance"] / np.maximum(r["diameter"], 1e-300) for r in xor["records"]}
    results["xor"] = {
        "L_over_D_median": {f"step_{s}": float(np.median([ratios[k][s] for k in ratios])) for s in steps},
        "L_over_D_per_seed": {str(k): {f"step_{s}": float(v[s]) for s in steps} for k, v in ratios.items()},
        "D_median": {f"step_{s}": float(np.median([r["diameter"][s] for r in xor["records"]])) for s in steps},
        "L_median": {f"step_{s}": float(np.median([r["distance"][s] for r in xor["records"]])) for s in steps},
        "seeds_with_edges_between_discs": int(sum(r["cross_edges"] > 0 for r in xor["records"])),
    }
    for name in config.datasets:
        results["classification"][name] = {}
        for optimizer in config.optimizers:
            results["classification"][name][optimizer] = {}
            for variant in VARIANTS:
                rows = [r for r in classification["runs"]
                        if r["dataset"] == name and r["optimizer"] == optimizer and r["variant"] == variant]
                results["classification"][name][optimizer][variant] = {
                    "runs": len(rows),
                    "train_accuracy": _summary([r["train_accuracy"] for r in rows]),
                    "test_accuracy": _summary([r["test_accuracy"] for r in rows]),
                    "test_accuracy_at_paper_epochs": _summary([r["test_accuracy_at_paper_epochs"] for r in rows]),
                    "train_accuracy_at_paper_epochs": _summary([r["train_accuracy_at_paper_epochs"] for r in rows]),
                    "perfect_train_runs": int(sum(r["train_accuracy"] >= 1.0 for r in rows)),
                    "perfect_test_runs": int(sum(r["test_accuracy"] >= 1.0 for r in rows)),
                    "diverged_runs": int(sum(r["diverged_at_epoch"] is not None for r in rows)),
                    "seconds_per_run": float(np.mean([r["seconds"] for r in rows])),
                }
    if config.paper_script_check:
        results["paper_script"] = _run_paper_script_check(config)
    results["seconds_total"] = time.perf_counter() - start

    run_dir.write_csv("runs.csv", classification["runs"])
    run_dir.write_csv("curves.csv", classification["curves"])
    results["figures"]["xor"] = _xor_figure(xor, config, run_dir)
    for name in config.datasets:
        for optimizer in config.optimizers:
            results["figures"][f"{name}_{optimizer}"] = _dataset_figure(name, optimizer, classification, config,
                                                                        run_dir)
    results["figures"]["summary"] = _summary_figure(results, config, run_dir)
    run_dir.write_results(results)
    _write_report(results, xor, classification, config, run_dir)
    return results
