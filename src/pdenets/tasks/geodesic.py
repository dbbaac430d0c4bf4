"""The weight-decay study of papers 002/003 on MNIST: plain network vs ResNet, LSS every epoch, OTS and LSR after.

For each weight decay ``γ`` a plain MLP and a ResNet MLP that differ only by the identity
(:mod:`pdenets.models.transport_pairs`: ``784 → width``, ``blocks`` blocks ``v(x) = W₂σ(W₁σ(x))``, ``→ 10``)
are trained with SGD (momentum) and weight decay ``γ``. After every epoch the tracks of a fixed set of
``track_points`` training images through the blocks give the mean LSS; after training, LSR, LSS and
OTS (exact assignment between the blocks' input and output, ``R^width``) and train/test accuracy. The
paper's MNIST result to compare with: ResNet LSS 1.12 and OTS 0.96 at ``γ = 5·10⁻⁴``; ResNet LSS
≈ 1.1–1.9 with OTS near 1 against plain LSS ≈ 3.4–4.7 with OTS near 0.

Not here yet: CIFAR-10 (K = 1, K = 4), robustness to noise/FGSM, the unit ablation and track plots.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np
import torch

from ..analysis.tracks import record_tracks
from ..analysis.transport import line_shape_ratio, line_shape_score, optimal_transport_score
from ..data.vision import load_mnist
from ..experiments.config import TaskConfig, check_fields, setting
from ..experiments.plots import plt
from ..experiments.report import Report
from ..experiments.summary import PaperValue, Stats, group_records
from ..experiments.task import Task, register_task
from ..experiments.training import evaluate_classifier, train_epoch
from .._checks import NonFiniteError
from ..models.registry import create_model
from ..models.transport_pairs import TransportBlock

__all__ = ["GeodesicConfig", "GeodesicTask", "GeodesicJob"]

KINDS = ("plain", "resnet")
_PAPER = "papers 002/003, MNIST (ResNet, γ = 5e-4)"
PAPER_MNIST = {("resnet", 5e-4): {"lss": PaperValue(1.12, None, _PAPER), "ots": PaperValue(0.96, None, _PAPER)}}


@dataclass
class GeodesicConfig(TaskConfig):
    """Configuration of ``pdenets run geodesic``."""

    datasets: List[str] = setting(["mnist"], "mnist (CIFAR-10 not implemented yet)")
    weight_decays: List[float] = setting([0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 1e-1], "weight decays gamma")
    kinds: List[str] = setting(list(KINDS), "plain and/or resnet")
    seeds: List[int] = setting([0], "seeds")
    width: int = setting(1000, "block width (paper: 1000)")
    blocks: int = setting(5, "blocks (paper: 5)")
    epochs: int = setting(10, "training epochs")
    batch_size: int = setting(128, "batch size")
    lr: float = setting(0.01, "SGD learning rate")
    momentum: float = setting(0.9, "SGD momentum")
    train_limit: Optional[int] = setting(None, "training images used (default all 60,000)")
    track_points: int = setting(1000, "training images whose tracks are scored")

    def validate(self) -> None:
        super().validate()
        check_fields(self, non_empty=("datasets", "weight_decays", "kinds", "seeds"),
                     choices={"datasets": ("mnist",), "kinds": KINDS},
                     counts=("width", "blocks", "epochs", "batch_size", "track_points"), positive=("lr",),
                     non_negative=("weight_decays", "momentum"), non_negative_counts=("seeds",))


@dataclass(frozen=True)
class GeodesicJob:
    dataset: str
    kind: str
    weight_decay: float
    seed: int
    width: int
    blocks: int
    epochs: int
    batch_size: int
    lr: float
    momentum: float
    train_limit: Optional[int]
    track_points: int
    device: str
    data_dir: Optional[str] = field(default=None, metadata={"key": False})


def _scores(model, points, with_ots: bool) -> Dict[str, float]:
    (stage,) = record_tracks(model, points, blocks=TransportBlock)
    out = {"lss": float(line_shape_score(stage.tracks).clamp_max(1e6).mean()),
           "lsr": float(line_shape_ratio(stage.tracks).clamp_max(1e6).mean())}
    if with_ots:
        out["ots"] = optimal_transport_score(stage.tracks[:, 0], stage.tracks[:, -1])
    return out


def run_geodesic_job(spec: GeodesicJob) -> Dict[str, Any]:
    train, test = load_mnist("train", spec.data_dir), load_mnist("test", spec.data_dir)
    images, labels = train.images.flatten(1), train.labels
    if spec.train_limit:
        images, labels = images[:spec.train_limit], labels[:spec.train_limit]
    torch.manual_seed(spec.seed)
    model = create_model(f"{spec.kind}-mlp", in_features=784, num_classes=10, width=spec.width,
                         num_blocks=spec.blocks).to(spec.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=spec.lr, momentum=spec.momentum,
                                weight_decay=spec.weight_decay)
    generator = torch.Generator().manual_seed(spec.seed)
    tracked = images[torch.randperm(len(labels), generator=torch.Generator().manual_seed(1234))[:spec.track_points]]
    curve = []
    start = time.perf_counter()
    diverged = False
    for epoch in range(spec.epochs):
        try:
            metrics = train_epoch(model, optimizer, images, labels, batch_size=spec.batch_size, generator=generator,
                                  device=spec.device)
        except NonFiniteError:
            diverged = True
            break
        curve.append({"epoch": epoch + 1, "loss": metrics["loss"], **_scores(model, tracked, False)})
    record: Dict[str, Any] = {"curve": curve, "diverged": diverged, "seconds": time.perf_counter() - start}
    if not diverged:
        record.update(_scores(model, tracked, True))
        with torch.no_grad():
            record["train_accuracy"] = evaluate_classifier(model, images, labels, batch_size=2000,
                                                           device=spec.device)["accuracy"]
            record["test_accuracy"] = evaluate_classifier(model, test.images.flatten(1), test.labels,
                                                          batch_size=2000, device=spec.device)["accuracy"]
    return record


@register_task
class GeodesicTask(Task):
    name = "geodesic"
    description = "geodesic analysis (papers 002/003): plain vs ResNet under weight decay, LSS/LSR/OTS, MNIST"
    config_class = GeodesicConfig
    shortcuts = {"dataset": "datasets", "gamma": "weight_decays", "kind": "kinds"}
    columns = {"kind": "TEXT", "weight_decay": "REAL", "seed": "INTEGER"}

    @classmethod
    def quick_config(cls) -> GeodesicConfig:
        """Width 64, 3,000 images, 2 epochs, three weight decays."""
        return GeodesicConfig(weight_decays=[0.0, 5e-4, 1e-2], width=64, epochs=2, train_limit=3000,
                              track_points=300)

    def prepare(self) -> None:
        load_mnist("test", self.config.data_dir)

    def jobs(self) -> List[GeodesicJob]:
        c = self.config
        return [GeodesicJob(dataset, kind, float(gamma), seed, c.width, c.blocks, c.epochs, c.batch_size, c.lr,
                            c.momentum, c.train_limit, c.track_points, c.device, c.data_dir)
                for dataset in c.datasets for gamma in c.weight_decays for kind in c.kinds for seed in c.seeds]

    @staticmethod
    def run_job(spec: GeodesicJob) -> Dict[str, Any]:
        return run_geodesic_job(spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        return "diverged" if record["diverged"] else f"LSS={record['lss']:.2f} OTS={record['ots']:.2f}"

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        table: Dict[str, Any] = {}
        for (dataset, gamma, kind), members in group_records(records, by=("dataset", "weight_decay",
                                                                            "kind")).items():
            done = [m for m in members if not m["diverged"]]
            entry = {"runs": len(members), "diverged": len(members) - len(done)}
            for metric in ("train_accuracy", "test_accuracy", "ots", "lsr", "lss"):
                entry[metric] = Stats.of(m.get(metric) for m in done).as_dict()
            table.setdefault(dataset, {}).setdefault(f"{gamma:g}", {})[kind] = entry
        return {"table": table}

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        c = self.config
        report = Report("pdenets — geodesic analysis: plain network vs ResNet under weight decay")
        report.paragraph(
            f"MLP pairs 784 → {c.width}, {c.blocks} blocks v(x) = W₂σ(W₁σ(x)) (ResNet: x + v(x)), → 10; SGD lr {c.lr}, "
            f"momentum {c.momentum}, batch {c.batch_size}, {c.epochs} epochs, weight decay γ; "
            f"{c.train_limit or 60000:,} training images; scores on the tracks of {c.track_points} fixed training "
            f"images through the blocks (OTS: exact assignment between the blocks' input and output). Seeds "
            f"{c.seeds}. {results['runs_stored']} of {results['runs_planned']} runs stored; wall time "
            f"{results['wall_seconds']:.0f} s.")
        for dataset, gammas in results["table"].items():
            report.heading(f"{dataset}: plain vs ResNet per weight decay (the paper's Table layout)")
            rows = []
            for gamma, kinds in gammas.items():
                for kind in KINDS:
                    if kind not in kinds:
                        continue
                    e = kinds[kind]
                    paper = PAPER_MNIST.get((kind, float(gamma)), {})
                    rows.append([gamma, kind] + [f"{100 * e[m]['mean']:.2f}" if e[m]["count"] else "—"
                                                 for m in ("train_accuracy", "test_accuracy")] +
                                [f"{e[m]['mean']:.3f}" if e[m]["count"] else "—" for m in ("ots", "lsr", "lss")] +
                                [", ".join(f"{k.upper()} {v.format(2)}" for k, v in paper.items()) or "—",
                                 f"{e['runs'] - e['diverged']}/{e['runs']}"])
            report.table(["γ", "network", "train acc (%)", "test acc (%)", "OTS", "LSR", "LSS", "paper",
                          "runs finished"], rows)
        results.setdefault("figures", {})["lss"] = _lss_figure(records, run_dir)
        report.figure("lss.png", "Mean LSS of the tracked training images after every epoch (Fig. 2 layout), one "
                                 "line per weight decay; solid ResNet, dashed plain.")
        report.write(run_dir)


def _lss_figure(records, run_dir) -> str:
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    gammas = sorted({r["weight_decay"] for r in records})
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(gammas))))
    for record in sorted(records, key=lambda r: (r["weight_decay"], r["kind"], r["seed"])):
        if record["seed"] != min(r["seed"] for r in records) or not record["curve"]:
            continue
        color = colors[gammas.index(record["weight_decay"])]
        epochs = [point["epoch"] for point in record["curve"]]
        ax.plot(epochs, [point["lss"] for point in record["curve"]], "-" if record["kind"] == "resnet" else "--",
                color=color, marker="o", markersize=3,
                label=f"{record['kind']} γ={record['weight_decay']:g}")
    ax.set_xlabel("epoch")
    ax.set_ylabel("LSS")
    ax.set_yscale("log")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    return run_dir.save_figure(fig, "lss.png")
