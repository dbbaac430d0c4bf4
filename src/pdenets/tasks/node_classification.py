"""Semi-supervised node classification: the Diff-ResNet protocol (paper 000 §5.2, Appendix E.2).

Protocol (Shchur et al. 2018, as the paper's code runs it):

* graph undirected, largest connected component, no self-loops; binary bag-of-words
  features, row-normalized (:func:`pdenets.data.transforms.preprocess_citation_graph`);
* ``num_splits`` random splits (20 labelled nodes per class for training, 30 per class for
  validation, the rest for testing) × ``num_inits`` initializations, seeded as the paper's
  code seeds them (:mod:`pdenets.data.splits`);
* Adam (lr 0.01, weight decay 5e-4); after every epoch the validation loss and accuracy;
  training stops when neither has improved for ``patience`` epochs and the best state
  (last improvement of either) is restored; test accuracy of that state.

Models: Diff-ResNet (graph variant ``x + ReLU(FC1 x)``, ``r`` diffusion steps with dropout,
classifier; ``W = D̃^{-1/2}(A + I)D̃^{-1/2}``, ``L = diag(W1) − W``), No-Diff-ResNet (``r = 0``,
hence no dropout), and the PyG baselines GCN, GraphSAGE-mean/-maxpool, GAT.

Every finished run is written to ``results.sqlite`` at once; rerunning the command skips
what is stored. Runs execute in a process pool (or on Ray with ``ray_address``).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch
from torch.nn import functional as F

from ..data.graphs import load_graph
from ..data.splits import split_and_init_seeds, split_seeds
from ..data.transforms import preprocess_citation_graph
from ..experiments.parallel import Job, run_jobs
from ..experiments.plots import plt, save
from ..experiments.report import Report
from ..experiments.rundir import RunDirectory
from ..experiments.store import STORE_FILENAME, ResultsStore
from ..models.diffresnet import DiffResNet
from ..models.gnn import GAT, GCN, GNN_DEFAULTS, GraphSAGE
from ..operators.graph import gcn_normalize
from ..operators.laplacian import stability_bound

__all__ = ["NodeClassificationConfig", "run", "quick_config", "table1_config", "run_single", "TABLE6",
           "PAPER_TABLE1", "MODEL_NAMES"]

#: Paper 000, Table 6 (its column labels are swapped; read as γ, r, dropout).
TABLE6: Dict[str, Dict[str, float]] = {
    "cora": {"step_size": 0.25, "num_steps": 20, "dropout": 0.25},
    "citeseer": {"step_size": 0.2, "num_steps": 20, "dropout": 0.35},
    "pubmed": {"step_size": 0.4, "num_steps": 10, "dropout": 0.3},
    "default": {"step_size": 0.25, "num_steps": 20, "dropout": 0.25},
}

#: Paper 000, Table 1: mean and std (%) over 100 splits × 20 initializations.
PAPER_TABLE1: Dict[str, Dict[str, Tuple[float, float]]] = {
    "gcn": {"cora": (81.5, 1.3), "citeseer": (71.9, 1.9), "pubmed": (77.8, 2.9)},
    "sage-mean": {"cora": (79.2, 7.7), "citeseer": (71.6, 1.9), "pubmed": (77.4, 2.2)},
    "sage-maxpool": {"cora": (76.6, 1.9), "citeseer": (67.5, 2.3), "pubmed": (76.1, 2.3)},
    "gat": {"cora": (81.8, 1.3), "citeseer": (71.4, 1.9), "pubmed": (78.7, 2.3)},
    "no-diff-resnet": {"cora": (58.9, 1.9), "citeseer": (61.9, 2.1), "pubmed": (70.1, 2.1)},
    "diff-resnet": {"cora": (82.1, 1.1), "citeseer": (74.6, 1.8), "pubmed": (80.1, 2.0)},
}

MODEL_NAMES = ("diff-resnet", "no-diff-resnet", "gcn", "sage-mean", "sage-maxpool", "gat")


@dataclass
class NodeClassificationConfig:
    """Configuration of ``pdenets run node-classification`` (``--set key=value`` for any field).

    ``datasets`` holds names (``cora``, ``citeseer``, ``pubmed``, ``planetoid/<name>``) or
    paths of ``.npz`` graph files; ``diffusion`` maps a dataset to ``step_size``,
    ``num_steps`` and ``dropout`` (``default`` for other graphs); ``baselines`` overrides
    the PyG models' settings (``{"gat": {"lr": 0.005}}``). ``depths`` (empty: off) runs the
    depth study on ``depth_datasets`` for ``depth_models`` with ``depth_splits`` ×
    ``depth_inits`` runs per point; for GCN the depth is the number of layers, for
    Diff-ResNet the number ``r`` of diffusion layers (Algorithm 1 calls each step a layer).
    """

    datasets: List[str] = field(default_factory=lambda: ["cora"])
    models: List[str] = field(default_factory=lambda: ["diff-resnet"])
    num_splits: int = 100
    num_inits: int = 20
    seed: int = 42
    train_per_class: int = 20
    val_per_class: int = 30
    max_epochs: int = 1000
    patience: int = 50
    lr: float = 0.01
    weight_decay: float = 5e-4
    diffusion: Dict[str, Dict[str, float]] = field(default_factory=lambda: copy.deepcopy(TABLE6))
    dropout_position: str = "before"
    baselines: Dict[str, Dict[str, float]] = field(default_factory=dict)
    depths: List[int] = field(default_factory=list)
    depth_models: List[str] = field(default_factory=lambda: ["gcn", "diff-resnet"])
    depth_datasets: List[str] = field(default_factory=lambda: ["cora"])
    depth_splits: int = 5
    depth_inits: int = 1
    workers: int = 0
    threads_per_worker: int = 0
    ray_address: Optional[str] = None
    data_dir: Optional[str] = None
    device: str = "cpu"
    check_stability: bool = True
    #: build the report from the runs already stored, without running the missing ones
    report_only: bool = False

    def validate(self) -> None:
        unknown = [m for m in list(self.models) + list(self.depth_models) if m not in MODEL_NAMES]
        if unknown:
            raise ValueError(f"unknown model(s) {unknown}; choose from {list(MODEL_NAMES)}")
        for name, value in (("num_splits", self.num_splits), ("num_inits", self.num_inits),
                            ("max_epochs", self.max_epochs), ("patience", self.patience)):
            if value < 1:
                raise ValueError(f"{name} must be >= 1, got {value}")
        if not self.datasets or not self.models:
            raise ValueError("give at least one dataset and one model")
        if self.dropout_position not in ("before", "after"):
            raise ValueError("dropout_position must be 'before' or 'after'")
        if any(depth < 1 for depth in self.depths):
            raise ValueError("depths must be >= 1")


def quick_config() -> NodeClassificationConfig:
    """A small version: 2 splits × 1 initialization, at most 60 epochs, no depth study."""
    return NodeClassificationConfig(num_splits=2, num_inits=1, max_epochs=60, patience=20)


def table1_config() -> NodeClassificationConfig:
    """Paper 000, Table 1 on the graphs available offline (Cora, CiteSeer), plus the depth study."""
    return NodeClassificationConfig(datasets=["cora", "citeseer"], models=list(MODEL_NAMES),
                                    depths=[2, 4, 8, 16, 32])


def table1_quick_config() -> NodeClassificationConfig:
    return NodeClassificationConfig(datasets=["cora", "citeseer"], models=list(MODEL_NAMES), num_splits=1,
                                    num_inits=1, max_epochs=30, patience=10, depths=[2, 8], depth_splits=1)


# ----------------------------------------------------------------------------------------
# one run (executed in worker processes)

_GRAPHS: Dict[Tuple[str, Optional[str]], Dict[str, Any]] = {}


def dataset_label(spec: str) -> str:
    return Path(spec).stem if spec.lower().endswith(".npz") else spec.lower()


def prepared_graph(spec: str, data_dir: Optional[str]) -> Dict[str, Any]:
    """Load and preprocess a graph once per process: features (dense and CSR), labels, edges, W."""
    key = (spec, data_dir)
    if key not in _GRAPHS:
        data = preprocess_citation_graph(load_graph(spec, data_dir))
        weights = gcn_normalize((data.edge_index, None), data.num_nodes)
        _GRAPHS[key] = {
            "x": data.x,
            "x_sparse": data.x.to_sparse_csr(),
            "y": data.y,
            "edge_index": data.edge_index,
            "weights": weights,
            "num_nodes": int(data.num_nodes),
            "num_edges": int(data.edge_index.shape[1] // 2),
            "num_features": int(data.x.shape[1]),
            "num_classes": int(data.y.max()) + 1,
        }
    return _GRAPHS[key]


def _build_model(name: str, graph: Dict[str, Any], hp: Dict[str, Any], depth: Optional[int]):
    in_features, classes = graph["num_features"], graph["num_classes"]
    if name in ("diff-resnet", "no-diff-resnet"):
        steps = 0 if name == "no-diff-resnet" else int(depth if depth is not None else hp["num_steps"])
        return DiffResNet(in_features, classes, block="graph", num_steps=steps, step_size=float(hp["step_size"]),
                          dropout=float(hp["dropout"]) if steps else 0.0, dropout_position=hp["dropout_position"],
                          weights=graph["weights"] if steps else None, check_stability=hp["check_stability"])
    layers = int(depth) if depth is not None else 2
    if name == "gcn":
        return GCN(in_features, classes, hidden=int(hp["hidden"]), num_layers=layers, dropout=float(hp["dropout"]))
    if name in ("sage-mean", "sage-maxpool"):
        return GraphSAGE(in_features, classes, aggregator=name.split("-")[1], hidden=int(hp["hidden"]),
                         num_layers=layers, dropout=float(hp["dropout"]))
    if name == "gat":
        return GAT(in_features, classes, hidden=int(hp["hidden"]), heads=int(hp["heads"]), num_layers=layers,
                   dropout=float(hp["dropout"]))
    raise ValueError(f"unknown model {name!r}")


def run_single(payload: Dict[str, Any]) -> Dict[str, Any]:
    """Train and test one (dataset, model, split, initialization); returns the run record.

    ``seconds`` is the time from building the model to the test accuracy (graph loading and
    preprocessing happen once per worker process and are not counted).
    """
    graph = prepared_graph(payload["dataset"], payload["data_dir"])
    device = torch.device(payload["device"])
    seeds = split_seeds(payload["seed"], payload["num_splits"])
    split, init_seeds = split_and_init_seeds(graph["y"], seeds[payload["split"]], payload["num_inits"],
                                             payload["train_per_class"], payload["val_per_class"])
    start = time.perf_counter()
    torch.manual_seed(init_seeds[payload["init"]])
    hp = payload["hyperparameters"]
    model = _build_model(payload["model"], graph, hp, payload.get("depth")).to(device)
    diffusion_family = payload["model"] in ("diff-resnet", "no-diff-resnet")
    inputs = (graph["x_sparse"],) if diffusion_family else (graph["x"], graph["edge_index"])
    inputs = tuple(t.to(device) for t in inputs)
    labels = graph["y"].to(device)
    train, val, test = (part.to(device) for part in (split.train, split.val, split.test))
    optimizer = torch.optim.Adam(model.parameters(), lr=float(hp["lr"]), weight_decay=float(hp["weight_decay"]))

    best_loss, best_acc, best_state, best_epoch, waiting = math.inf, -1.0, None, 0, 0
    epoch = 0
    for epoch in range(1, payload["max_epochs"] + 1):
        model.train()
        optimizer.zero_grad()
        F.cross_entropy(model(*inputs)[train], labels[train]).backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = model(*inputs)
            val_loss = float(F.cross_entropy(logits[val], labels[val]))
            val_acc = float((logits[val].argmax(1) == labels[val]).double().mean())
        if val_loss <= best_loss or val_acc >= best_acc:
            best_loss, best_acc = min(val_loss, best_loss), max(val_acc, best_acc)
            best_state = copy.deepcopy(model.state_dict())
            best_epoch, waiting = epoch, 0
        else:
            waiting += 1
            if waiting >= payload["patience"]:
                break
    model.load_state_dict(best_state)
    model.eval()
    with torch.no_grad():
        logits = model(*inputs)
        accuracy = float((logits[test].argmax(1) == labels[test]).double().mean())
        val_accuracy = float((logits[val].argmax(1) == labels[val]).double().mean())
    return {
        "experiment": payload["experiment"], "dataset": payload["dataset_label"], "model": payload["model"],
        "depth": payload.get("depth"), "split": payload["split"], "init": payload["init"], "accuracy": accuracy,
        "val_accuracy": val_accuracy, "epochs": epoch, "best_epoch": best_epoch,
        "seconds": time.perf_counter() - start, "params": hp,
    }


# ----------------------------------------------------------------------------------------
# jobs


def _hyperparameters(config: NodeClassificationConfig, model: str, dataset: str) -> Dict[str, Any]:
    if model in ("diff-resnet", "no-diff-resnet"):
        diffusion = config.diffusion.get(dataset_label(dataset), config.diffusion.get("default", TABLE6["default"]))
        return {"lr": config.lr, "weight_decay": config.weight_decay, "step_size": diffusion["step_size"],
                "num_steps": diffusion["num_steps"], "dropout": diffusion["dropout"],
                "dropout_position": config.dropout_position, "check_stability": config.check_stability}
    return {**GNN_DEFAULTS[model], **config.baselines.get(model, {})}


def _protocol_hash(config: NodeClassificationConfig, hp: Dict[str, Any]) -> str:
    """What makes two runs of the same (split, init) the same run.

    The numbers of splits and initializations are not part of it: split ``i`` and its
    ``j``-th initialization come from prefixes of seeded streams, the same for any count, so
    a protocol grown from 10 × 2 to 100 × 20 keeps the 10 × 2 runs already stored.
    """
    identity = {"hp": hp, "seed": config.seed, "train": config.train_per_class, "val": config.val_per_class,
                "max_epochs": config.max_epochs, "patience": config.patience}
    return hashlib.sha1(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:10]


def make_jobs(config: NodeClassificationConfig) -> List[Job]:
    jobs = []

    def add(experiment, dataset, model, depth, splits, inits):
        hp = _hyperparameters(config, model, dataset)
        digest = _protocol_hash(config, hp)
        for split in range(splits):
            for init in range(inits):
                key = f"{experiment}|{dataset_label(dataset)}|{model}|depth={depth}|{digest}|s{split}|i{init}"
                jobs.append(Job(key, {
                    "experiment": experiment, "dataset": dataset, "dataset_label": dataset_label(dataset),
                    "data_dir": config.data_dir, "model": model, "depth": depth, "split": split, "init": init,
                    "num_splits": splits, "num_inits": inits, "seed": config.seed,
                    "train_per_class": config.train_per_class, "val_per_class": config.val_per_class,
                    "max_epochs": config.max_epochs, "patience": config.patience, "hyperparameters": hp,
                    "device": config.device,
                }))

    for dataset in config.datasets:
        for model in config.models:
            add("protocol", dataset, model, None, config.num_splits, config.num_inits)
    for dataset in (config.depth_datasets if config.depths else []):
        for model in config.depth_models:
            for depth in config.depths:
                add("depth", dataset, model, depth, config.depth_splits, config.depth_inits)
    return jobs


# ----------------------------------------------------------------------------------------
# report


def _graph_facts(config: NodeClassificationConfig) -> Dict[str, Dict[str, Any]]:
    facts = {}
    for dataset in dict.fromkeys(list(config.datasets) + (list(config.depth_datasets) if config.depths else [])):
        graph = prepared_graph(dataset, config.data_dir)
        facts[dataset_label(dataset)] = {
            "nodes": graph["num_nodes"], "edges": graph["num_edges"], "features": graph["num_features"],
            "classes": graph["num_classes"],
            "gershgorin_bound": stability_bound(graph["weights"]),
            "spectral_bound": stability_bound(graph["weights"], method="spectral"),
        }
    return facts


def _summaries(rows: List[Dict[str, Any]], keys: Tuple[str, ...]) -> Dict[tuple, Dict[str, float]]:
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(tuple(row[k] for k in keys), []).append(row)
    out = {}
    for group, members in groups.items():
        accuracy = np.array([m["accuracy"] for m in members]) * 100
        out[group] = {"mean": float(accuracy.mean()), "std": float(accuracy.std()), "runs": len(members),
                      "seconds_per_run": float(np.mean([m["seconds"] for m in members])),
                      "epochs_mean": float(np.mean([m["epochs"] for m in members]))}
    return out


def _figures(results, config, run_dir: RunDirectory, rows) -> Dict[str, str]:
    figures = {}
    protocol = [r for r in rows if r["experiment"] == "protocol"]
    datasets = [dataset_label(d) for d in config.datasets]
    if protocol:
        fig, axes = plt.subplots(1, len(datasets), figsize=(4.2 * len(datasets), 3.6), squeeze=False,
                                 layout="constrained")
        for ax, dataset in zip(axes[0], datasets):
            models = [m for m in config.models if any(r["dataset"] == dataset and r["model"] == m for r in protocol)]
            data = [[r["accuracy"] * 100 for r in protocol if r["dataset"] == dataset and r["model"] == m]
                    for m in models]
            ax.boxplot(data, showfliers=True)
            ax.set_xticks(range(1, len(models) + 1), models, rotation=30, ha="right", fontsize=8)
            for index, model in enumerate(models, start=1):
                if dataset in PAPER_TABLE1.get(model, {}):
                    ax.plot(index, PAPER_TABLE1[model][dataset][0], marker="*", color="#d62728", markersize=10,
                            linestyle="none", label="paper" if index == 1 else None)
            ax.set_title(f"{dataset}: test accuracy per run (red star: paper mean)", fontsize=9)
            ax.set_ylabel("accuracy (%)")
            ax.grid(axis="y", alpha=0.3)
        figures["accuracy"] = save(fig, run_dir.file("accuracy.png")).name
    depth = results.get("depth", {})
    if depth:
        fig, axes = plt.subplots(1, len(depth), figsize=(4.5 * len(depth), 3.4), squeeze=False, layout="constrained")
        for ax, (dataset, by_model) in zip(axes[0], depth.items()):
            for model, points in by_model.items():
                xs = sorted(int(d) for d in points)
                ax.errorbar(xs, [points[str(d)]["mean"] for d in xs], yerr=[points[str(d)]["std"] for d in xs],
                            marker="o", capsize=3, label=model)
            ax.set_xscale("log", base=2)
            ax.set_xlabel("layers (GCN: graph convolutions; Diff-ResNet: diffusion layers r)")
            ax.set_ylabel("test accuracy (%)")
            ax.set_title(f"depth study, {dataset}", fontsize=9)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
        figures["depth"] = save(fig, run_dir.file("depth.png")).name
    return figures


def _write_report(results, config, run_dir: RunDirectory) -> None:
    report = Report("pdenets — semi-supervised node classification (paper 000, Table 1)")
    runs_done = results["runs_stored"]
    report.paragraph(
        f"{config.num_splits} splits × {config.num_inits} initializations per model and dataset "
        f"({config.train_per_class}/{config.val_per_class} labelled nodes per class for training/validation), "
        f"Adam lr {config.lr}, weight decay {config.weight_decay}, early stopping patience {config.patience}, at most "
        f"{config.max_epochs} epochs. {runs_done} of {results['runs_planned']} planned runs stored in "
        f"`{STORE_FILENAME}`; wall time of this invocation "
        f"{results['wall_seconds']:.0f} s."
    )
    report.heading("Accuracy (%), mean ± std over all runs, next to the paper")
    datasets = [dataset_label(d) for d in config.datasets]
    headers = ["model"] + [f"{d} (pdenets)" for d in datasets] + [f"{d} (paper)" for d in datasets]
    rows = []
    for model in config.models:
        cells = [model]
        for dataset in datasets:
            entry = results["table"].get(dataset, {}).get(model)
            cells.append(f"{entry['mean']:.1f} ± {entry['std']:.1f} (n={entry['runs']})" if entry else "—")
        for dataset in datasets:
            paper = PAPER_TABLE1.get(model, {}).get(dataset)
            cells.append(f"{paper[0]:.1f} ± {paper[1]:.1f}" if paper else "—")
        rows.append(cells)
    report.table(headers, rows)
    if "accuracy" in results["figures"]:
        report.figure(results["figures"]["accuracy"], "Test accuracy of every run; red stars: the paper's means.")
    report.heading("Time per run")
    rows = []
    for dataset in datasets:
        for model in config.models:
            entry = results["table"].get(dataset, {}).get(model)
            if entry:
                rows.append([dataset, model, f"{entry['seconds_per_run']:.2f}", f"{entry['epochs_mean']:.0f}",
                             f"{1000 * entry['seconds_per_run'] / max(entry['epochs_mean'], 1):.1f}"])
    report.table(["dataset", "model", "seconds per run", "epochs per run", "ms per epoch"], rows,
                 caption="One worker process per run; epochs include the validation pass.")
    report.heading("Graphs and stability")
    rows = [[name, f["nodes"], f["edges"], f["features"], f["classes"], f"{f['gershgorin_bound']:.3f}",
             f"{f['spectral_bound']:.3f}"] for name, f in results["graphs"].items()]
    report.table(["graph", "nodes (LCC)", "edges", "features", "classes", "gamma bound (Gershgorin)",
                  "gamma bound (2/lambda_max)"], rows,
                 caption="Explicit diffusion with W = D^-1/2 (A+I) D^-1/2 and L = diag(W1) - W is stable for "
                         "gamma up to 2/lambda_max(L); Table 6's gamma must stay below it.")
    if results.get("depth"):
        report.heading("Depth study (Fig. 5)")
        rows = []
        for dataset, by_model in results["depth"].items():
            for model, points in by_model.items():
                rows.append([dataset, model] + [f"{points[str(d)]['mean']:.1f} ± {points[str(d)]['std']:.1f}"
                                                if str(d) in points else "—" for d in config.depths])
        report.table(["dataset", "model"] + [f"{d} layers" for d in config.depths], rows)
        report.figure(results["figures"]["depth"], "Accuracy against depth.")
    report.heading("Choices")
    report.bullets([
        "Graphs: the gnn-benchmark .npz files the paper's code reads; largest connected component without "
        "self-loops (Cora 2,485 nodes, CiteSeer 2,110), as that code keeps them.",
        "Diff-ResNet diffuses with W = D̃^-1/2 (A+I) D̃^-1/2 and L = diag(W1) − W, the paper code's operator; "
        f"dropout is applied `{config.dropout_position}` each diffusion step (the paper's code drops before each "
        "step, its text after).",
        "No-Diff-ResNet is the same network with r = 0, hence without dropout (dropout lives in the diffusion steps).",
        "Baselines: PyG layers with the original papers' settings (GCN 16 hidden, dropout 0.5; GraphSAGE 64 hidden; "
        "GAT 8 heads × 8, dropout 0.6, lr 0.005), trained in the same protocol.",
        "Early stopping: an epoch counts as an improvement when the validation loss does not increase or the "
        "validation accuracy does not decrease; the state of the last improvement is restored.",
    ])
    report.write(run_dir.path)


def _planned_rows(jobs: List[Job], store: ResultsStore) -> List[Dict[str, Any]]:
    """The stored runs that belong to ``jobs`` (a store may hold runs of other protocols)."""
    wanted = {job.key for job in jobs}
    return [r for r in store.rows() if r["key"] in wanted]


def summarize(config: NodeClassificationConfig, store: ResultsStore) -> Dict[str, Any]:
    """Table and depth-study figures from the stored runs of ``config``'s protocol."""
    jobs = make_jobs(config)
    return _summarize_rows(_planned_rows(jobs, store), len(jobs))


def _summarize_rows(rows: List[Dict[str, Any]], planned: int) -> Dict[str, Any]:
    results: Dict[str, Any] = {"runs_stored": len(rows), "runs_planned": planned, "table": {}, "depth": {}}
    for (dataset, model), entry in _summaries([r for r in rows if r["experiment"] == "protocol"],
                                              ("dataset", "model")).items():
        paper = PAPER_TABLE1.get(model, {}).get(dataset)
        if paper:
            entry.update({"paper_mean": paper[0], "paper_std": paper[1]})
        results["table"].setdefault(dataset, {})[model] = entry
    for (dataset, model, depth), entry in _summaries([r for r in rows if r["experiment"] == "depth"],
                                                     ("dataset", "model", "depth")).items():
        results["depth"].setdefault(dataset, {}).setdefault(model, {})[str(depth)] = entry
    return results


def run(config: NodeClassificationConfig, run_dir: RunDirectory, *, progress: bool = True) -> Dict[str, Any]:
    """Run the protocol (resuming from ``run_dir/results.sqlite``) and write the report."""
    config.validate()
    start = time.perf_counter()
    facts = _graph_facts(config)  # loads every graph first: a missing file fails before any run
    jobs = make_jobs(config)
    with ResultsStore(run_dir.file(STORE_FILENAME)) as store:
        if not config.report_only:
            run_jobs(jobs, run_single, store=store, workers=config.workers or None,
                     threads_per_worker=config.threads_per_worker or None, ray_address=config.ray_address,
                     progress=progress, description="node classification")
        rows = _planned_rows(jobs, store)
    results = _summarize_rows(rows, len(jobs))
    results["graphs"] = facts
    results["wall_seconds"] = time.perf_counter() - start
    results["figures"] = _figures(results, config, run_dir, rows)
    run_dir.write_csv("runs.csv", [{k: v for k, v in r.items() if k != "params"} for r in rows])
    run_dir.write_results(results)
    _write_report(results, config, run_dir)
    return results
