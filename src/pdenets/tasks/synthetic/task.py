"""The synthetic suite of Diff-ResNet (Wang et al., §5.1 and Appendix E.1): XOR diffusion and 2-D
classification.

Three parts, each a set of independent jobs (docs/synthetic.md describes them in full): **XOR under pure
diffusion** (Fig. 3): ``D(t)``, ``L(t)`` and ``L/D`` after every step, per seed, with the graph edges between
    discs
that Prop. 1 assumes absent; **moon / circle / spiral** (Figs. 4, 11, 12; Table 4): the 18-parameter network
with and without diffusion, tested on a held-out sample with its own graph (Remark 1), trained by full-batch
SGD with momentum 0.9 as the paper states and without, as its scripts effectively run (a new optimizer every
step); and a **check against the paper's scripts**: their data, initialization and 20 steps must give the
counts they print.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Tuple

import numpy as np
import torch
from torch.nn import functional as F

from ...analysis.diffusion_path import diffusion_path, edges_between_groups
from ...data.synthetic import SyntheticSet, make_synthetic
from ...experiments.context import RunContext
from ...experiments.summary import group_records
from ...experiments.task import Task, register_task
from ...models.synthetic_diffresnet import (
    PAPER_SCRIPT_REFERENCE,
    TABLE4,
    VARIANTS,
    SyntheticHyperparameters,
    synthetic_network,
)
from ...models.training import accuracy, evaluation_mode, fit
from ...operators.weights import knn_gaussian_weights
from . import report as synthetic_report
from .config import SyntheticConfig
from .results import (
    ClassificationCell,
    ClassificationRecord,
    PaperScriptCount,
    PaperScriptRecord,
    ScriptCount,
    SnapshotRecord,
    SyntheticResults,
    XorDiffusion,
    XorRecord,
)

__all__ = [
    "SyntheticConfig",
    "SyntheticTask",
    "SyntheticHyperparameters",
    "TABLE4",
    "PAPER_SCRIPT_REFERENCE",
    "VARIANTS",
]


#: Seed offset of each held-out test sample (test data of seed s: seed 10,000 + s).
TEST_SEED_OFFSET = 10_000


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


@dataclass(frozen=True, kw_only=True)
class XorJob:
    """The XOR diffusion of one seed: distance and diameter along the diffusion path."""

    seed: int
    points_per_disc: int
    n_top: int
    sigma: float
    step_size: float
    steps: int
    report_steps: Tuple[int, ...]
    graph: GraphConvention
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


@dataclass(frozen=True, kw_only=True)
class ClassificationJob:
    """One network variant trained on one synthetic set with one optimizer and seed."""

    dataset: str
    seed: int
    optimizer: str
    momentum: float
    variant: str
    hyperparameters: SyntheticHyperparameters
    protocol: TrainingProtocol
    graph: GraphConvention
    snapshot_epochs: Tuple[int, ...]
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


@dataclass(frozen=True, kw_only=True)
class PaperScriptJob:
    """The paper scripts' data, seeds and steps on one set."""

    dataset: str
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


def _on_graph(data: SyntheticSet, kernel, graph: GraphConvention, device: torch.device, dtype: torch.dtype):
    """Points (in ``dtype``) and labels on ``device``, and the kNN Gaussian weights (``kernel.n_top``,
    ``.sigma``)."""
    points = data.points.to(device, dtype)
    weights = knn_gaussian_weights(
        points,
        kernel.n_top,
        sigma=kernel.sigma,
        include_self=graph.include_self,
        normalization=graph.normalization,
    )
    return points, data.labels.to(device), weights


def _run_xor(spec: XorJob, device: torch.device) -> Dict[str, Any]:
    data = make_synthetic("xor", spec.points_per_disc, seed=spec.seed)
    points, _, weights = _on_graph(data, spec, spec.graph, device, torch.float64)  # analysis: full precision
    path = diffusion_path(points, data.groups, weights, spec.step_size, spec.steps, keep=spec.report_steps)
    return {
        "labels": data.labels.numpy(),
        "cross_edges": edges_between_groups(weights.cpu(), data.groups),
        "distance": path.distance,
        "diameter": path.diameter,
        "positions": path.positions,
    }


def _run_classification(spec: ClassificationJob, device: torch.device) -> Dict[str, Any]:
    """Full-batch SGD on the training sample; train and held-out test accuracy after every epoch."""
    hp, protocol, dtype = spec.hyperparameters, spec.protocol, getattr(torch, spec.protocol.dtype)
    train = make_synthetic(spec.dataset, protocol.points_per_class, seed=spec.seed)
    train_points, train_labels, train_weights = _on_graph(train, hp, spec.graph, device, dtype)
    test = make_synthetic(spec.dataset, protocol.test_points_per_class, seed=TEST_SEED_OFFSET + spec.seed)
    test_points, test_labels, test_weights = _on_graph(test, hp, spec.graph, device, dtype)
    torch.manual_seed(spec.seed)
    model = synthetic_network(spec.variant, hp).to(device, dtype)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=hp.lr, momentum=spec.momentum, weight_decay=protocol.weight_decay
    )
    snapshots: Dict[int, np.ndarray] = {}
    epochs = itertools.count()

    def evaluate(epoch: int, last: Optional[int] = None) -> Dict[str, float]:
        """Accuracies now; the features stand for the epochs ``epoch … last`` in the snapshots."""
        with evaluation_mode(model):
            features = model.features(train_points, train_weights)
            metrics = {
                "train": accuracy(model.classifier(features), train_labels),
                "test": accuracy(model(test_points, test_weights), test_labels),
            }
        for snapshot in spec.snapshot_epochs:
            if epoch <= snapshot <= (epoch if last is None else last):
                snapshots[snapshot] = features.cpu().numpy()
        return metrics

    start = time.perf_counter()
    history = [evaluate(next(epochs))]
    result = fit(
        model,
        optimizer,
        lambda: F.cross_entropy(model(train_points, train_weights), train_labels),
        max_epochs=protocol.epochs,
        evaluate=lambda: evaluate(next(epochs)),
        restore_on_divergence=True,
    )
    history += result.history
    if result.diverged_at is not None:  # the last finite parameters carry on to the last epoch
        history += [evaluate(result.diverged_at, last=protocol.epochs)] * (protocol.epochs + 1 - len(history))
    paper_epoch = min(protocol.paper_epochs, protocol.epochs)
    record = {
        "train_curve": [h["train"] for h in history],
        "test_curve": [h["test"] for h in history],
        "losses": result.losses,
        "train_accuracy": history[-1]["train"],
        "test_accuracy": history[-1]["test"],
        "train_accuracy_at_paper_epochs": history[paper_epoch]["train"],
        "test_accuracy_at_paper_epochs": history[paper_epoch]["test"],
        "diverged_at_epoch": result.diverged_at,
        "seconds": time.perf_counter() - start,
    }
    if spec.snapshot_epochs:
        record.update(snapshots=snapshots, points=train.points.numpy(), labels=train.labels.numpy())
    return record


def _run_paper_script(spec: PaperScriptJob, device: torch.device) -> Dict[str, Any]:
    """The paper scripts' data, seeds and 20 full-batch SGD steps in float32. The scripts build a new
    optimizer (momentum 0.9, weight decay 5e-4) every step, so each step is a plain SGD step: no momentum
    carries over."""
    reference, hp = PAPER_SCRIPT_REFERENCE[spec.dataset], TABLE4[spec.dataset]
    data = make_synthetic(spec.dataset, 500, grid=True, seed=np.random.RandomState(reference["seed"]))
    points, labels, weights = _on_graph(data, hp, GraphConvention(True, "row"), device, torch.float32)
    record = {}
    for variant in VARIANTS:
        torch.manual_seed(reference["seed"])
        model = synthetic_network(variant, hp).to(device)
        start = time.perf_counter()
        fit(
            model,
            torch.optim.SGD(model.parameters(), lr=hp.lr, weight_decay=5e-4),
            lambda: F.cross_entropy(model(points, weights), labels),
            max_epochs=20,
        )
        with torch.no_grad():
            correct = int((model(points, weights).argmax(1) == labels).sum())
        record[variant] = {
            "correct": correct,
            "reference": reference[variant],
            "seconds": time.perf_counter() - start,
        }
    return record


#: job type → (part of the suite, how to run it)
#: the result's ``part`` and the function running a job, per job type
_PARTS: Dict[type, Tuple[str, Callable[[Any, torch.device], Dict[str, Any]]]] = {
    XorJob: ("xor", _run_xor),
    ClassificationJob: ("classification", _run_classification),
    PaperScriptJob: ("paper-script", _run_paper_script),
}


def _record_class(spec: Any) -> type:
    """The record dataclass of a job of the suite."""
    if isinstance(spec, XorJob):
        return XorRecord
    if isinstance(spec, PaperScriptJob):
        return PaperScriptRecord
    return SnapshotRecord if spec.snapshot_epochs else ClassificationRecord


@register_task
class SyntheticTask(Task[SyntheticConfig]):
    name = "synthetic"
    description = (
        "Diff-ResNet synthetic suite: XOR diffusion (L/D), moon/circle/spiral with and without diffusion"
    )
    config_class = SyntheticConfig
    shortcuts = {"dataset": "datasets"}
    columns = {
        "part": "TEXT",
        "dataset": "TEXT",
        "variant": "TEXT",
        "optimizer": "TEXT",
        "seed": "INTEGER",
        "test_accuracy": "REAL",
    }

    def record_type_of(self, spec: Any, record: Mapping[str, Any]) -> type:
        return _record_class(spec)

    @classmethod
    def quick_config(cls) -> SyntheticConfig:
        """One seed, 20 epochs (the paper's step count), all three sets, two XOR seeds."""
        return SyntheticConfig(seeds=[0], epochs=20, feature_epochs=[0, 5, 20], xor_seeds=[0, 1])

    def jobs(self) -> List[Any]:
        config = self.config
        graph = GraphConvention(config.include_self, config.normalization)
        jobs: List[Any] = [
            XorJob(
                seed=config.seed + seed,
                points_per_disc=config.xor_points_per_disc,
                n_top=config.xor_n_top,
                sigma=config.xor_sigma,
                step_size=config.xor_step_size,
                steps=config.xor_steps,
                report_steps=tuple(config.xor_report_steps),
                graph=graph,
            )
            for seed in config.xor_seeds
        ]
        protocol = TrainingProtocol(
            config.points_per_class,
            config.test_points_per_class,
            config.epochs,
            config.paper_epochs,
            config.weight_decay,
            config.dtype,
        )
        shown = tuple(e for e in config.feature_epochs if e <= config.epochs)
        jobs += [
            ClassificationJob(
                dataset=name,
                seed=config.seed + seed,
                optimizer=optimizer,
                momentum=settings.momentum,
                variant=variant,
                hyperparameters=config.hyperparameters[name],
                protocol=protocol,
                graph=graph,
                snapshot_epochs=shown if seed == config.seeds[0] else (),
            )
            for name in config.datasets
            for seed in config.seeds
            for optimizer, settings in config.optimizers.items()
            for variant in VARIANTS
        ]
        if config.paper_script_check:
            jobs += [PaperScriptJob(dataset=name) for name in config.datasets]
        return jobs

    @staticmethod
    def run_job(spec, context: RunContext) -> Any:
        part, run = _PARTS[type(spec)]
        values = run(spec, context.device)
        if isinstance(spec, PaperScriptJob):
            counts = {variant.replace("-", "_"): ScriptCount(**values[variant]) for variant in VARIANTS}
            return PaperScriptRecord(part=part, **counts)
        return _record_class(spec)(part=part, **values)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return f"test={record['test_accuracy']:.3f}" if "test_accuracy" in record else ""

    def summarize(self, records: List[Dict[str, Any]]) -> SyntheticResults:
        xor = [r for r in records if r["part"] == "xor"]
        runs = [r for r in records if r["part"] == "classification"]
        table: Dict[str, Dict[str, Dict[str, ClassificationCell]]] = {}
        for (name, optimizer, variant), members in group_records(
            runs, by=("dataset", "optimizer", "variant")
        ).items():
            table.setdefault(name, {}).setdefault(optimizer, {})[variant] = ClassificationCell.of(members)
        scripts = {
            r["dataset"]: {variant: PaperScriptCount.of(r[variant]) for variant in VARIANTS}
            for r in records
            if r["part"] == "paper-script"
        }
        return SyntheticResults(
            xor=XorDiffusion.of(xor, self.config.xor_report_steps) if xor else None,
            classification=table,
            paper_script=scripts or None,
        )

    def report(self, results: SyntheticResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(results, "pdenets — synthetic suite (Diff-ResNet §5.1 / Appendix E.1)")
        synthetic_report.add_sections(report, self.config, results, records, run_dir, VARIANTS)
        self.write_report(report, run_dir)
