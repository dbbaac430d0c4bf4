"""Semi-supervised node classification: the Diff-ResNet protocol (Wang et al., §5.2 and Appendix E.2).

Protocol (Shchur et al. 2018, as the paper's code runs it):

* graph undirected, largest connected component, no self-loops; binary bag-of-words
  features, row-normalized (:func:`pdenets.data.transforms.preprocess_citation_graph`);
* ``num_splits`` random splits (20 labelled nodes per class for training, 30 per class for
  validation, the rest for testing) × ``num_inits`` initializations, seeded as the paper's
  code seeds them (:mod:`pdenets.data.splits`);
* Adam (lr 0.01, weight decay 5e-4); after every epoch the validation loss and accuracy;
  training stops when neither has improved for ``patience`` epochs and the best state
  (last improvement of either) is restored; test accuracy of that state.

Models (from the model registry): Diff-ResNet (graph variant ``x + ReLU(FC1 x)``, ``r``
diffusion steps with dropout, classifier; ``W = D̃^{-1/2}(A + I)D̃^{-1/2}``,
``L = diag(W1) − W``), No-Diff-ResNet (``r = 0``, hence no dropout), and the PyG baselines
GCN, GraphSAGE-mean/-maxpool, GAT.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

import torch
from torch import nn
from torch.nn import functional as F

from ..data.graphs import MISSING_FEATURES, load_graph
from ..data.splits import Split, split_and_init_seeds, split_seeds
from ..data.transforms import preprocess_citation_graph
from ..experiments.cache import process_cache
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.plots import box_per_group, errorbar_lines, plt
from ..experiments.report import Report
from ..experiments.summary import PaperValue, Stats, group_records, paper_and_ours
from ..experiments.task import Task, register_reproduction, register_task
from ..experiments.training import EarlyStopping, FitResult, accuracy, evaluation_mode, fit
from ..models.registry import create_model, list_models, model_entry
from ..operators.graph import gcn_normalize
from ..operators.laplacian import stability_bound

__all__ = ["NodeClassificationConfig", "NodeClassificationTask", "NodeJob", "DiffusionHyperparameters",
           "BaselineSettings", "TABLE6", "PAPER_TABLE1", "MODEL_NAMES", "prepared_graph", "train_node_classifier"]


@dataclass
class DiffusionHyperparameters:
    """Diff-ResNet's diffusion on one graph (Table 6: its column labels are swapped; read as γ, r, dropout)."""

    step_size: float = setting(0.25, "diffusion step size gamma")
    num_steps: int = setting(20, "diffusion layers r")
    dropout: float = setting(0.25, "dropout at each diffusion step")


@dataclass
class BaselineSettings:
    """Overrides of a registered baseline's defaults (unset: the model's own)."""

    hidden: Optional[int] = None
    heads: Optional[int] = None
    dropout: Optional[float] = None
    lr: Optional[float] = None
    weight_decay: Optional[float] = None


TABLE6: Dict[str, DiffusionHyperparameters] = {
    "cora": DiffusionHyperparameters(0.25, 20, 0.25),
    "citeseer": DiffusionHyperparameters(0.2, 20, 0.35),
    "pubmed": DiffusionHyperparameters(0.4, 10, 0.3),
    "default": DiffusionHyperparameters(0.25, 20, 0.25),
}

_TABLE1 = "Diff-ResNet paper, Table 1 (100 splits x 20 initializations)"
#: Table 1: mean and std (%) over 100 splits × 20 initializations.
PAPER_TABLE1: Dict[str, Dict[str, PaperValue]] = {
    model: {dataset: PaperValue(mean, std, _TABLE1) for dataset, (mean, std) in values.items()}
    for model, values in {
        "gcn": {"cora": (81.5, 1.3), "citeseer": (71.9, 1.9), "pubmed": (77.8, 2.9)},
        "sage-mean": {"cora": (79.2, 7.7), "citeseer": (71.6, 1.9), "pubmed": (77.4, 2.2)},
        "sage-maxpool": {"cora": (76.6, 1.9), "citeseer": (67.5, 2.3), "pubmed": (76.1, 2.3)},
        "gat": {"cora": (81.8, 1.3), "citeseer": (71.4, 1.9), "pubmed": (78.7, 2.3)},
        "no-diff-resnet": {"cora": (58.9, 1.9), "citeseer": (61.9, 2.1), "pubmed": (70.1, 2.1)},
        "diff-resnet": {"cora": (82.1, 1.1), "citeseer": (74.6, 1.8), "pubmed": (80.1, 2.0)},
    }.items()
}

MODEL_NAMES = ("diff-resnet", "no-diff-resnet", "gcn", "sage-mean", "sage-maxpool", "gat")


@dataclass
class NodeClassificationConfig(TaskConfig):
    """Configuration of ``pdenets run node-classification``.

    ``datasets`` holds names (``cora``, ``citeseer``, ``pubmed``, ``planetoid/<name>``) or
    paths of ``.npz`` graph files; ``diffusion`` maps a dataset to ``step_size``,
    ``num_steps`` and ``dropout`` (``default`` for other graphs); ``baselines`` overrides the
    registered baselines' settings (``{"gat": {"lr": 0.005}}``). ``depths`` (empty: off) runs
    the depth study; for GCN the depth is the number of layers, for Diff-ResNet the number
    ``r`` of diffusion layers (Algorithm 1 calls each step a layer).
    """

    seed: int = setting(42, "master seed of the splits (the paper code's 42)")
    datasets: List[str] = setting(["cora"], "graphs: cora, citeseer, pubmed, planetoid/<name> or a .npz path")
    models: List[str] = setting(["diff-resnet"], "models: " + ", ".join(MODEL_NAMES))
    num_splits: int = setting(100, "random splits")
    num_inits: int = setting(20, "initializations per split")
    train_per_class: int = setting(20, "labelled training nodes per class")
    val_per_class: int = setting(30, "validation nodes per class")
    max_epochs: int = setting(1000, "epochs at most")
    patience: int = setting(50, "early stopping patience (epochs)")
    lr: float = setting(0.01, "Adam learning rate of Diff-ResNet")
    weight_decay: float = setting(5e-4, "Adam weight decay of Diff-ResNet")
    diffusion: Dict[str, DiffusionHyperparameters] = setting(
        TABLE6, "per graph: step_size, num_steps, dropout (Table 6; 'default' for other graphs)")
    dropout_position: str = setting("before", "dropout 'before' each diffusion step (paper code) or 'after' (text)")
    diffuse_in: str = setting("input", "Diff-ResNet's width: 'input' (the paper: block and diffusion in the feature "
                                       "width) or 'hidden' (a linear map to diffusion_width first: O(r nnz width) "
                                       "becomes O(r nnz diffusion_width))")
    diffusion_width: int = setting(64, "width of the block and the diffusion when diffuse_in is 'hidden'")
    baselines: Dict[str, BaselineSettings] = setting({}, "per baseline: hidden, heads, dropout, lr, weight_decay")
    depths: List[int] = setting([], "depth study depths (empty: no depth study)")
    depth_models: List[str] = setting(["gcn", "diff-resnet"], "models of the depth study")
    depth_datasets: List[str] = setting(["cora"], "graphs of the depth study")
    depth_splits: int = setting(5, "splits per depth")
    depth_inits: int = setting(1, "initializations per split and depth")
    check_stability: bool = setting(True, "refuse a diffusion step size beyond the bound")
    missing_features: str = setting("identity", "features of a graph file without any: identity (one-hot node id) "
                                                "or degree")

    def validate(self) -> None:
        super().validate()
        unknown = [m for m in list(self.models) + list(self.depth_models) if m not in MODEL_NAMES]
        if unknown:
            raise ConfigError(f"unknown model(s) {unknown}; choose from {list(MODEL_NAMES)}")
        check_fields(self, non_empty=("datasets", "models"), positive=("lr",), non_negative=("weight_decay",),
                     counts=("num_splits", "num_inits", "max_epochs", "patience", "depth_splits", "depth_inits",
                             "depths", "train_per_class", "val_per_class"),
                     choices={"dropout_position": ("before", "after"), "missing_features": MISSING_FEATURES,
                              "diffuse_in": ("input", "hidden")})
        check_fields(self, counts=("diffusion_width",))
        for graph, hp in self.diffusion.items():
            check_fields(hp, positive=("step_size",), non_negative_counts=("num_steps",), probabilities=("dropout",),
                         prefix=f"diffusion.{graph}.")
        for model, settings in self.baselines.items():
            given = [name for name in ("hidden", "heads") if getattr(settings, name) is not None]
            check_fields(settings, counts=given, prefix=f"baselines.{model}.")
            for name, check in (("dropout", "probabilities"), ("lr", "positive"), ("weight_decay", "non_negative")):
                if getattr(settings, name) is not None:
                    check_fields(settings, **{check: (name,)}, prefix=f"baselines.{model}.")
        unknown = sorted(set(self.baselines) - set(list_models("message-passing")))
        if unknown:
            raise ConfigError(f"baselines has settings for {unknown}, which are not baselines; choose from "
                              f"{list_models('message-passing')}")


# ----------------------------------------------------------------------------------------
# graphs (loaded once per process)


@dataclass(frozen=True)
class PreparedGraph:
    """A preprocessed graph: features (dense and CSR), labels, edges and the diffusion weights."""

    x: torch.Tensor
    x_sparse: torch.Tensor
    y: torch.Tensor
    edge_index: torch.Tensor
    weights: torch.Tensor
    num_nodes: int
    num_edges: int
    num_features: int
    num_classes: int


def dataset_label(spec: str) -> str:
    return Path(spec).stem if spec.lower().endswith(".npz") else spec.lower()


@process_cache(maxsize=8)
def prepared_graph(spec: str, data_dir: Optional[str], missing_features: str = "identity") -> PreparedGraph:
    """Load and preprocess a graph once per process; ``W = D̃^{-1/2}(A + I)D̃^{-1/2}``."""
    data = preprocess_citation_graph(load_graph(spec, data_dir, missing_features=missing_features))
    return PreparedGraph(
        x=data.x, x_sparse=data.x.to_sparse_csr(), y=data.y, edge_index=data.edge_index,
        weights=gcn_normalize((data.edge_index, None), data.num_nodes), num_nodes=int(data.num_nodes),
        num_edges=int(data.edge_index.shape[1] // 2), num_features=int(data.x.shape[1]),
        num_classes=int(data.y.max()) + 1)


# ----------------------------------------------------------------------------------------
# one run


@dataclass(frozen=True)
class NodeJob:
    """One (graph, model, depth, split, initialization) of the protocol or the depth study.

    Split ``split`` and its ``init``-th initialization come from prefixes of seeded streams,
    the same for any number of splits and initializations: a protocol grown from 10 × 2 to
    100 × 20 keeps the runs already stored.
    """

    experiment: str
    graph: str
    dataset: str
    model: str
    depth: Optional[int]
    split: int
    init: int
    seed: int
    train_per_class: int
    val_per_class: int
    max_epochs: int
    patience: int
    hyperparameters: Mapping[str, Any]
    device: str
    data_dir: Optional[str] = field(default=None, metadata={"key": False})
    missing_features: str = "identity"


def _build_model(spec: NodeJob, graph: PreparedGraph) -> nn.Module:
    hp = spec.hyperparameters
    sizes = {"in_features": graph.num_features, "num_classes": graph.num_classes}
    if model_entry(spec.model).family == "diffusion":
        steps = 0 if spec.model == "no-diff-resnet" else int(spec.depth if spec.depth is not None else hp["num_steps"])
        return create_model(spec.model, **sizes, block="graph", num_steps=steps, step_size=float(hp["step_size"]),
                            dropout=float(hp["dropout"]) if steps else 0.0, dropout_position=hp["dropout_position"],
                            weights=graph.weights if steps else None, check_stability=hp["check_stability"],
                            hidden_features=hp.get("hidden_features"))
    architecture = {name: hp[name] for name in ("hidden", "heads", "dropout") if name in hp}
    return create_model(spec.model, **sizes, num_layers=int(spec.depth) if spec.depth is not None else 2,
                        **architecture)


def split_of(spec: NodeJob, labels: torch.Tensor) -> Tuple[Split, int]:
    """The split and the torch seed of ``spec``'s initialization (the paper code's seeding)."""
    split_seed = split_seeds(spec.seed, spec.split + 1)[spec.split]
    split, init_seeds = split_and_init_seeds(labels, split_seed, spec.init + 1, spec.train_per_class,
                                             spec.val_per_class)
    return split, init_seeds[spec.init]


def train_node_classifier(spec: NodeJob) -> Tuple[nn.Module, FitResult, Dict[str, Any]]:
    """Train one run; returns the model (best state restored), the fit history and the record.

    ``seconds`` is the time from building the model to the test accuracy (graph loading and
    preprocessing happen once per worker process and are not counted).
    """
    graph = prepared_graph(spec.graph, spec.data_dir, spec.missing_features)
    device = torch.device(spec.device)
    split, init_seed = split_of(spec, graph.y)
    start = time.perf_counter()
    torch.manual_seed(init_seed)
    model = _build_model(spec, graph).to(device)
    diffusion_family = model_entry(spec.model).family == "diffusion"
    inputs = (graph.x_sparse,) if diffusion_family else (graph.x, graph.edge_index)
    inputs = tuple(t.to(device) for t in inputs)
    labels = graph.y.to(device)
    train, val, test = (part.to(device) for part in (split.train, split.val, split.test))
    hp = spec.hyperparameters
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]), weight_decay=float(hp["weight_decay"]))

    def validation() -> Dict[str, float]:
        with evaluation_mode(model):
            logits = model(*inputs)
            return {"val_loss": float(F.cross_entropy(logits[val], labels[val])),
                    "val_accuracy": accuracy(logits[val], labels[val])}

    stopping = EarlyStopping(spec.patience, monitors={"val_loss": "min", "val_accuracy": "max"})
    result = fit(model, optimizer, lambda: F.cross_entropy(model(*inputs)[train], labels[train]),
                 max_epochs=spec.max_epochs, evaluate=validation, early_stopping=stopping)
    with evaluation_mode(model):
        logits = model(*inputs)
        record = {"accuracy": accuracy(logits[test], labels[test]), "val_accuracy": accuracy(logits[val], labels[val]),
                  "val_loss": float(F.cross_entropy(logits[val], labels[val])),
                  "test_loss": float(F.cross_entropy(logits[test], labels[test])),
                  "epochs": result.epochs, "best_epoch": result.best_epoch, "diverged_at_epoch": result.diverged_at,
                  "seconds": time.perf_counter() - start}
    return model, result, record


# ----------------------------------------------------------------------------------------
# the task


@register_task
class NodeClassificationTask(Task):
    name = "node-classification"
    description = "semi-supervised node classification: random-split protocol, Diff-ResNet and PyG baselines"
    config_class = NodeClassificationConfig
    shortcuts = {"dataset": "datasets", "model": "models", "splits": "num_splits", "inits": "num_inits"}
    columns = {"experiment": "TEXT", "dataset": "TEXT", "model": "TEXT", "depth": "INTEGER", "split": "INTEGER",
               "init": "INTEGER", "accuracy": "REAL", "val_accuracy": "REAL", "epochs": "INTEGER"}

    @classmethod
    def quick_config(cls) -> NodeClassificationConfig:
        """2 splits × 1 initialization, at most 60 epochs, no depth study."""
        return NodeClassificationConfig(num_splits=2, num_inits=1, max_epochs=60, patience=20)

    def prepare(self) -> None:
        """Load every graph first (a missing file fails before any run) and record its facts."""
        config = self.config
        self.facts = {}
        for graph_spec in dict.fromkeys(list(config.datasets) + (list(config.depth_datasets) if config.depths else [])):
            graph = prepared_graph(graph_spec, config.data_dir, config.missing_features)
            self.facts[dataset_label(graph_spec)] = {
                "nodes": graph.num_nodes, "edges": graph.num_edges, "features": graph.num_features,
                "classes": graph.num_classes, "gershgorin_bound": stability_bound(graph.weights),
                "spectral_bound": stability_bound(graph.weights, method="spectral")}

    def hyperparameters(self, model: str, graph_spec: str) -> Dict[str, Any]:
        config = self.config
        entry = model_entry(model)
        if entry.family == "diffusion":
            label = dataset_label(graph_spec)
            diffusion = config.diffusion.get(label, config.diffusion.get("default", TABLE6["default"]))
            hp = {"lr": config.lr, "weight_decay": config.weight_decay, "step_size": diffusion.step_size,
                  "num_steps": diffusion.num_steps, "dropout": diffusion.dropout,
                  "dropout_position": config.dropout_position, "check_stability": config.check_stability}
            if config.diffuse_in == "hidden":  # absent for the paper's model, so its stored runs keep their keys
                hp["hidden_features"] = config.diffusion_width
            return hp
        overrides = config.baselines.get(model)
        given = {k: v for k, v in vars(overrides).items() if v is not None} if overrides is not None else {}
        return {**entry.defaults, **entry.training, **given}

    def jobs(self) -> List[NodeJob]:
        config = self.config
        jobs = []

        def add(experiment: str, graph_spec: str, model: str, depth: Optional[int], splits: int, inits: int) -> None:
            hp = self.hyperparameters(model, graph_spec)
            for split in range(splits):
                for init in range(inits):
                    jobs.append(NodeJob(experiment, graph_spec, dataset_label(graph_spec), model, depth, split, init,
                                        config.seed, config.train_per_class, config.val_per_class, config.max_epochs,
                                        config.patience, hp, config.device, config.data_dir,
                                        config.missing_features))

        for graph_spec in config.datasets:
            for model in config.models:
                add("protocol", graph_spec, model, None, config.num_splits, config.num_inits)
        for graph_spec in (config.depth_datasets if config.depths else []):
            for model in config.depth_models:
                for depth in config.depths:
                    add("depth", graph_spec, model, depth, config.depth_splits, config.depth_inits)
        return jobs

    @staticmethod
    def run_job(spec: NodeJob) -> Dict[str, Any]:
        return train_node_classifier(spec)[2]

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"acc={100 * record['accuracy']:.1f}%"

    # -- results --------------------------------------------------------------------------

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        results: Dict[str, Any] = {"table": {}, "depth": {}, "graphs": self.facts}
        for (experiment, dataset, model, depth), members in group_records(
                records, by=("experiment", "dataset", "model", "depth")).items():
            stats = Stats.of((m.get("accuracy") for m in members), scale=100)
            entry = {"mean": stats.mean, "std": stats.std, "runs": len(members),
                     "seconds_per_run": Stats.of(m["seconds"] for m in members).mean,
                     "epochs_mean": Stats.of(m["epochs"] for m in members).mean}
            if experiment == "protocol":
                paper = PAPER_TABLE1.get(model, {}).get(dataset)
                if paper:
                    entry.update({"paper_mean": paper.mean, "paper_std": paper.std})
                results["table"].setdefault(dataset, {})[model] = entry
            else:
                results["depth"].setdefault(dataset, {}).setdefault(model, {})[str(depth)] = entry
        return results

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        config = self.config
        figures = results.setdefault("figures", {})
        datasets = [dataset_label(d) for d in config.datasets]
        protocol = [r for r in records if r["experiment"] == "protocol"]
        if protocol:
            figures["accuracy"] = _accuracy_figure(protocol, datasets, config.models, run_dir)
        if results["depth"]:
            figures["depth"] = _depth_figure(results["depth"], run_dir)
        report = Report("pdenets — semi-supervised node classification (Diff-ResNet, Table 1)")
        report.paragraph(
            f"{config.num_splits} splits × {config.num_inits} initializations per model and dataset "
            f"({config.train_per_class}/{config.val_per_class} labelled nodes per class for training/validation), "
            f"Adam lr {config.lr}, weight decay {config.weight_decay}, early stopping patience {config.patience}, at "
            f"most {config.max_epochs} epochs. {results['runs_stored']} of {results['runs_planned']} planned runs "
            f"stored in `results.sqlite`; wall time of this invocation {results['wall_seconds']:.0f} s."
            + (f" Diff-ResNet diffuses in a learned {config.diffusion_width}-wide space (`--diffuse-in hidden`), not "
               "in the input features as in the paper." if config.diffuse_in == "hidden" else ""))
        report.heading("Accuracy (%), mean ± std over all runs, next to the paper")
        headers, rows = ["model"], []
        for dataset in datasets:
            headers += [f"{dataset} (pdenets)", f"{dataset} (paper)", f"{dataset} difference"]
        for model in config.models:
            cells = [model]
            for dataset in datasets:
                cells += paper_and_ours(results["table"].get(dataset, {}).get(model),
                                        PAPER_TABLE1.get(model, {}).get(dataset))
            rows.append(cells)
        report.table(headers, rows, caption="Difference: pdenets mean minus the paper's mean (points).")
        if "accuracy" in figures:
            report.figure(figures["accuracy"], "Test accuracy of every run; red stars: the paper's means.")
        _time_section(report, results, datasets, config.models)
        _graph_section(report, results)
        if results["depth"]:
            report.heading("Depth study (Fig. 5)")
            rows = [[dataset, model] + [f"{points[str(d)]['mean']:.1f} ± {points[str(d)]['std']:.1f}"
                                        if str(d) in points else "—" for d in config.depths]
                    for dataset, by_model in results["depth"].items() for model, points in by_model.items()]
            report.table(["dataset", "model"] + [f"{d} layers" for d in config.depths], rows)
            report.figure(figures["depth"], "Accuracy against depth.")
        report.heading("Choices")
        report.bullets([
            "Graphs: the gnn-benchmark .npz files the paper's code reads; largest connected component without "
            "self-loops (Cora 2,485 nodes, CiteSeer 2,110), as that code keeps them.",
            "Diff-ResNet diffuses with W = D̃^-1/2 (A+I) D̃^-1/2 and L = diag(W1) − W, the paper code's operator; "
            f"dropout is applied `{config.dropout_position}` each diffusion step (the paper's code drops before each "
            "step, its text after).",
            "No-Diff-ResNet is the same network with r = 0, hence without dropout (dropout lives in the diffusion "
            "steps).",
            "Baselines: PyG layers with the original papers' settings (GCN 16 hidden, dropout 0.5; GraphSAGE 64 "
            "hidden; GAT 8 heads × 8, dropout 0.6, lr 0.005), trained in the same protocol.",
            "Early stopping: an epoch counts as an improvement when the validation loss does not increase or the "
            "validation accuracy does not decrease; the state of the last improvement is restored.",
        ])
        report.write(run_dir)


def _accuracy_figure(protocol, datasets: List[str], models: List[str], run_dir) -> str:
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.6), squeeze=False,
                             layout="constrained")
    for ax, dataset in zip(axes[0], datasets):
        values = {model: [100 * r["accuracy"] for r in protocol if r["dataset"] == dataset and r["model"] == model]
                  for model in models}
        values = {model: v for model, v in values.items() if v}
        reference = {model: PAPER_TABLE1[model][dataset].mean for model in values
                     if dataset in PAPER_TABLE1.get(model, {})}
        box_per_group(ax, values, reference=reference, reference_label="paper",
                      title=f"{dataset}: test accuracy per run (red star: paper mean)", ylabel="accuracy (%)")
    return run_dir.save_figure(fig, "accuracy.png")


def _depth_figure(depth: Dict[str, Dict[str, Dict[str, Dict[str, float]]]], run_dir) -> str:
    fig, axes = plt.subplots(1, len(depth), figsize=(4.5 * len(depth), 3.4), squeeze=False, layout="constrained")
    for ax, (dataset, by_model) in zip(axes[0], depth.items()):
        series = {}
        for model, points in by_model.items():
            xs = sorted(int(d) for d in points)
            series[model] = (xs, [points[str(d)]["mean"] for d in xs], [points[str(d)]["std"] for d in xs])
        errorbar_lines(ax, series, xlabel="layers (GCN: graph convolutions; Diff-ResNet: diffusion layers r)",
                       ylabel="test accuracy (%)", title=f"depth study, {dataset}", log2_x=True)
    return run_dir.save_figure(fig, "depth.png")


def _time_section(report: Report, results, datasets: List[str], models: List[str]) -> None:
    report.heading("Time per run")
    rows = []
    for dataset in datasets:
        for model in models:
            entry = results["table"].get(dataset, {}).get(model)
            if entry:
                rows.append([dataset, model, f"{entry['seconds_per_run']:.2f}", f"{entry['epochs_mean']:.0f}",
                             f"{1000 * entry['seconds_per_run'] / max(entry['epochs_mean'], 1):.1f}"])
    report.table(["dataset", "model", "seconds per run", "epochs per run", "ms per epoch"], rows,
                 caption="One worker process per run; epochs include the validation pass.")


def _graph_section(report: Report, results) -> None:
    report.heading("Graphs and stability")
    rows = [[name, f["nodes"], f["edges"], f["features"], f["classes"], f"{f['gershgorin_bound']:.3f}",
             f"{f['spectral_bound']:.3f}"] for name, f in results["graphs"].items()]
    report.table(["graph", "nodes (LCC)", "edges", "features", "classes", "gamma bound (Gershgorin)",
                  "gamma bound (2/lambda_max)"], rows,
                 caption="Explicit diffusion with W = D^-1/2 (A+I) D^-1/2 and L = diag(W1) - W is stable for "
                         "gamma up to 2/lambda_max(L); Table 6's gamma must stay below it.")


def table1_config() -> NodeClassificationConfig:
    """Table 1 on the graphs available offline (Cora, CiteSeer), plus the depth study."""
    return NodeClassificationConfig(datasets=["cora", "citeseer"], models=list(MODEL_NAMES), depths=[2, 4, 8, 16, 32])


def table1_quick_config() -> NodeClassificationConfig:
    return NodeClassificationConfig(datasets=["cora", "citeseer"], models=list(MODEL_NAMES), num_splits=1,
                                    num_inits=1, max_epochs=30, patience=10, depths=[2, 8], depth_splits=1)


register_reproduction("table1", "node-classification", full=table1_config, quick=table1_quick_config,
                      description="Diff-ResNet Table 1 (Cora, CiteSeer; 6 models; 100 splits x 20 inits) and Fig. 5")
