"""The weight-decay study of the geodesic-curve paper (Gai & Zhang): plain network vs ResNet, LSS every epoch,
OTS/LSR, robustness, ablation.

For each weight decay ``γ`` a plain network and a ResNet that differ only by the identity
(:mod:`pdenets.models.transport_pairs`, blocks ``v(x) = W₂σ(W₁σ(x))``) are trained with SGD (momentum)
and weight decay ``γ``:

* MNIST: the MLP ``784 → width``, ``blocks`` blocks in ``R^width``, ``→ 10`` (paper: 1000, 5);
* CIFAR-10, ``K = 1``: a stride-2 stem ``3×32×32 → 32×16×16``, 10 convolutional blocks, ``→ 10``;
* CIFAR-10, ``K = 4``: stages ``k4_widths × 32², 16², 8², 4²`` of 5 blocks (paper: 64/128/256/512).

CIFAR-10 is trained on the first 40,000 training images; the last 10,000 are the test set ("held-out"),
and the 1,000 official test images we have are a second test set. After every epoch the tracks of a fixed
set of ``track_points`` training images give the mean LSS (per stage for ``K > 1``); after training:
LSR, LSS, OTS (exact assignment between each stage's input and output) and the segment-length
proportions per block (Tables 2–3), train/test accuracy, robustness to Gaussian noise and FGSM with the
per-layer variation rate (appendix 7.2), the unit ablation of one block (appendix 7.1) and the 2-D random
projection of some test tracks (Fig. 3). Paper values sit beside ours: MNIST ResNet LSS 1.12 and OTS 0.96
at ``γ = 5·10⁻⁴``; Tables 4 (CIFAR-10, ``K = 1``) and 6 (``K = 4``).
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import torch

from ..._cache import process_cache
from ..._checks import NonFiniteError
from ...analysis.ablation import unit_ablation
from ...analysis.robustness import robustness_curve
from ...analysis.tracks import project_tracks, record_tracks, select_blocks
from ...analysis.transport import (
    line_shape_ratio,
    line_shape_score,
    optimal_transport_score,
    segment_proportions,
)
from ...data.vision import load_train_and_tests, pad_crop_flip
from ...experiments.context import RunContext
from ...experiments.records import record_from_dict
from ...experiments.summary import Stats, group_records
from ...experiments.task import Task, register_task
from ...models.registry import create_model
from ...models.training import evaluate_classifier, train_epoch
from ...models.transport_pairs import TransportBlock
from .config import KINDS, GeodesicConfig
from .report import PAPER, add_sections
from .results import DivergedRecord, GeodesicCell, GeodesicResults, StageScores, record_class

__all__ = ["GeodesicConfig", "GeodesicTask", "GeodesicJob", "PAPER"]


@dataclass(frozen=True, kw_only=True)
class GeodesicJob:
    """One network of the pair (plain or ResNet) trained on one data set at one weight decay and seed, and
    the analyses run on it; built by keyword."""

    dataset: str
    architecture: str
    kind: str
    weight_decay: float
    seed: int
    width: Optional[int]
    blocks: Optional[int]
    k4_widths: Optional[Tuple[int, ...]]
    init: str
    epochs: int
    batch_size: int
    lr: float
    momentum: float
    augment: bool
    train_limit: Optional[int]
    test_limit: Optional[int]
    track_points: int
    noise_levels: Tuple[float, ...]
    fgsm_levels: Tuple[float, ...]
    robustness_points: int
    ablation_block: int
    ablation_counts: Tuple[int, ...]
    projection_points: int
    #: mixed precision (bfloat16 autocast) of the training and the accuracies; a run without it keeps its key
    amp: bool = field(default=False, metadata={"key": "unless-default"})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


#: the training images and the test sets of a dataset, kept per process (image sets are large: only the last
#: one)
_load = process_cache(maxsize=1)(load_train_and_tests)


def build_pair_member(spec: GeodesicJob) -> torch.nn.Module:
    """The registered plain/ResNet network of a job."""
    if spec.architecture == "mlp":
        return create_model(
            f"{spec.kind}-mlp",
            in_features=784,
            num_classes=10,
            width=spec.width,
            num_blocks=spec.blocks,
            init=spec.init,
        )
    options = {"widths": spec.k4_widths} if spec.architecture == "k4" else {}
    return create_model(
        f"{spec.kind}-cnn-{spec.architecture}", in_features=3, num_classes=10, init=spec.init, **options
    )


def _stage_scores(model, points, with_ots: bool) -> List[Dict[str, Any]]:
    scores = []
    for stage in record_tracks(model, points, blocks=TransportBlock):
        entry: Dict[str, Any] = {
            "width": stage.width,
            "blocks": len(stage.blocks),
            "lss": float(line_shape_score(stage.tracks).clamp_max(1e6).mean()),
            "lsr": float(line_shape_ratio(stage.tracks).clamp_max(1e6).mean()),
        }
        if with_ots:
            entry["ots"] = optimal_transport_score(stage.tracks[:, 0], stage.tracks[:, -1])
            entry["proportions"] = [float(v) for v in segment_proportions(stage.tracks)]
        scores.append(entry)
    return scores


def _mean_over_stages(stages: List[Dict[str, Any]], metric: str) -> float:
    return float(np.mean([stage[metric] for stage in stages]))


def run_geodesic_job(spec: GeodesicJob, context: RunContext = RunContext()) -> DivergedRecord:
    """Train one network of the pair in ``context``; its curve, scores, accuracies, robustness, unit
    ablation and track projection."""
    train, tests = _load(spec.dataset, spec.train_limit, spec.test_limit, context.data_dir)
    test = tests["test"]
    torch.manual_seed(spec.seed)
    device = context.device
    model = build_pair_member(spec).to(device)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=spec.lr, momentum=spec.momentum, weight_decay=spec.weight_decay
    )
    generator = torch.Generator().manual_seed(spec.seed)
    tracked = train.images[
        torch.randperm(len(train.labels), generator=torch.Generator().manual_seed(1234))[: spec.track_points]
    ]
    augment = pad_crop_flip if spec.dataset == "cifar10" and spec.augment else None
    curve: List[Dict[str, Any]] = []
    start = time.perf_counter()
    diverged = False
    for epoch in range(spec.epochs):
        try:
            metrics = train_epoch(
                model,
                optimizer,
                train.images,
                train.labels,
                batch_size=spec.batch_size,
                generator=generator,
                augment=augment,
                device=device,
                amp=spec.amp,
            )
        except NonFiniteError:
            diverged = True
            break
        stages = _stage_scores(model, tracked, False)
        curve.append(
            {
                "epoch": epoch + 1,
                "loss": metrics["loss"],
                "train_accuracy_running": metrics["accuracy"],
                "lss": _mean_over_stages(stages, "lss"),
                "lss_stages": [s["lss"] for s in stages],
            }
        )
    record: Dict[str, Any] = {"curve": curve, "diverged": diverged, "seconds": time.perf_counter() - start}
    if diverged:
        return record_from_dict(DivergedRecord, record)
    stages = _stage_scores(model, tracked, True)
    record["stages"] = stages
    for metric in ("lss", "lsr", "ots"):
        record[metric] = _mean_over_stages(stages, metric)
    for name, images in {"train": train, **tests}.items():  # train_accuracy, test_accuracy, official_accuracy
        record[f"{name}_accuracy"] = evaluate_classifier(
            model, images.images, images.labels, batch_size=1000, device=device, amp=spec.amp
        )["accuracy"]
    probe_x, probe_y = test.images[: spec.robustness_points], test.labels[: spec.robustness_points]
    record["robustness"] = {
        attack: robustness_curve(
            model, probe_x, probe_y, levels, attack=attack, blocks=TransportBlock, seed=spec.seed
        )
        for attack, levels in (("gaussian", spec.noise_levels), ("fgsm", spec.fgsm_levels))
    }
    blocks = select_blocks(model, TransportBlock)
    block_name = blocks[min(spec.ablation_block, len(blocks)) - 1][0]
    reference = min(len(train.labels), 5000)
    ablation_width = _block_width(model, block_name, probe_x[:1])
    counts = sorted({min(int(k), ablation_width) for k in spec.ablation_counts})
    record["ablation"] = unit_ablation(
        model, block_name, train.images[:reference], train.labels[:reference], probe_x, probe_y, counts
    )
    (first_stage, *_) = record_tracks(model, test.images[: spec.projection_points], blocks=TransportBlock)
    record["projection"] = {
        "points": project_tracks(first_stage.tracks, 2, seed=0).to(torch.float32).tolist(),
        "labels": test.labels[: spec.projection_points].tolist(),
    }
    record["seconds_total"] = time.perf_counter() - start
    return record_from_dict(record_class(spec.dataset, False), record)


def _stats(runs: Sequence[Mapping[str, Any]], metric: str, stage: Optional[int] = None) -> Stats:
    """Statistics of ``metric`` over the finished ``runs``: the run's value, or its ``stage``-th stage's."""
    return Stats.of(run.get(metric) if stage is None else run["stages"][stage][metric] for run in runs)


def _block_width(model, block_name: str, example: torch.Tensor) -> int:
    sizes: List[int] = []
    handle = model.get_submodule(block_name).register_forward_hook(
        lambda m, a, out: sizes.append(out[0].numel())
    )
    try:
        with torch.no_grad():
            model.eval()
            model(example.to(next(model.parameters()).device))
    finally:
        handle.remove()
    return sizes[0]


@register_task
class GeodesicTask(Task[GeodesicConfig]):
    name = "geodesic"
    description = (
        "geodesic analysis (Gai & Zhang, Learn the Geodesic Curve): plain vs ResNet under weight decay "
        "on MNIST and CIFAR-10 — LSS/LSR/OTS, robustness, unit ablation, track plots"
    )
    config_class = GeodesicConfig
    shortcuts = {
        "dataset": "datasets",
        "gamma": "weight_decays",
        "kind": "kinds",
        "architecture": "architectures",
    }
    columns = {"architecture": "TEXT", "kind": "TEXT", "weight_decay": "REAL", "seed": "INTEGER"}

    def record_type_of(self, spec: GeodesicJob, record: Mapping[str, Any]) -> type:
        return record_class(spec.dataset, record.get("diverged"))

    @classmethod
    def quick_config(cls) -> GeodesicConfig:
        """MNIST, width 64, 3,000 images, 2 epochs, three weight decays, small robustness/ablation probes."""
        return GeodesicConfig(
            weight_decays=[0.0, 5e-4, 1e-2],
            width=64,
            epochs=2,
            train_limit=3000,
            test_limit=1000,
            track_points=300,
            robustness_points=300,
            ablation_counts=[0, 8, 16, 32, 64],
            noise_levels=[0.0, 0.5, 1.0],
            fgsm_levels=[0.0, 0.05, 0.1],
            projection_points=50,
        )

    def prepare(self) -> None:
        for dataset in self.config.datasets:
            _load(dataset, self.config.train_limit, self.config.test_limit, self.config.data_dir)

    def jobs(self) -> List[GeodesicJob]:
        c = self.config
        out = []
        for dataset in c.datasets:
            for architecture in ("mlp",) if dataset == "mnist" else tuple(c.architectures):
                mlp = architecture == "mlp"
                for gamma, kind, seed in itertools.product(c.weight_decays, c.kinds, c.seeds):
                    out.append(
                        GeodesicJob(
                            dataset=dataset,
                            architecture=architecture,
                            kind=kind,
                            weight_decay=float(gamma),
                            seed=seed,
                            width=c.width if mlp else None,
                            blocks=c.blocks if mlp else None,
                            k4_widths=tuple(c.k4_widths) if architecture == "k4" else None,
                            init=c.init,
                            epochs=c.epochs,
                            batch_size=c.batch_size,
                            lr=c.lr,
                            momentum=c.momentum,
                            augment=c.augment and dataset == "cifar10",
                            train_limit=c.train_limit,
                            test_limit=c.test_limit,
                            track_points=c.track_points,
                            noise_levels=tuple(float(v) for v in c.noise_levels),
                            fgsm_levels=tuple(float(v) for v in c.fgsm_levels),
                            robustness_points=c.robustness_points,
                            ablation_block=c.ablation_block,
                            ablation_counts=tuple(int(k) for k in c.ablation_counts),
                            projection_points=c.projection_points,
                            amp=c.amp,
                        )
                    )
        return out

    @staticmethod
    def run_job(spec: GeodesicJob, context: RunContext) -> DivergedRecord:
        return run_geodesic_job(spec, context)

    def progress_note(self, record: Dict[str, Any]) -> str:
        if record["diverged"]:
            return "diverged"
        return f"LSS={record['lss']:.2f} OTS={record['ots']:.2f} test={100 * record['test_accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> GeodesicResults:
        table: Dict[str, Dict[str, Dict[str, GeodesicCell]]] = {}
        for (dataset, architecture, gamma, kind), members in group_records(
            records, by=("dataset", "architecture", "weight_decay", "kind")
        ).items():
            done = [m for m in members if not m["diverged"]]
            stages = None
            if done and len(done[0]["stages"]) > 1:
                stages = [
                    StageScores(
                        ots=_stats(done, "ots", stage),
                        lsr=_stats(done, "lsr", stage),
                        lss=_stats(done, "lss", stage),
                        width=done[0]["stages"][stage]["width"],
                    )
                    for stage in range(len(done[0]["stages"]))
                ]
            cell = GeodesicCell(
                runs=len(members),
                diverged=len(members) - len(done),
                train_accuracy=_stats(done, "train_accuracy"),
                test_accuracy=_stats(done, "test_accuracy"),
                official_accuracy=_stats(done, "official_accuracy"),
                ots=_stats(done, "ots"),
                lsr=_stats(done, "lsr"),
                lss=_stats(done, "lss"),
                stages=stages,
            )
            table.setdefault(f"{dataset}/{architecture}", {}).setdefault(f"{gamma:g}", {})[kind] = cell
        return GeodesicResults(table=table)

    def report(self, results: GeodesicResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(
            results, "pdenets — geodesic analysis: plain network vs ResNet under weight decay"
        )
        add_sections(report, self.config, results, records, run_dir, kind_order=KINDS)
        self.write_report(report, run_dir)
