"""The weight-decay study of the geodesic-curve paper (Gai & Zhang): plain network vs ResNet, LSS every epoch, OTS/LSR, robustness, ablation.

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

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from ..analysis.ablation import unit_ablation
from ..analysis.robustness import robustness_curve
from ..analysis.tracks import project_tracks, record_tracks, select_blocks
from ..analysis.transport import (line_shape_ratio, line_shape_score, optimal_transport_score,
                                  segment_proportions)
from ..data.vision import ImageData, load_cifar10_centred, load_mnist, pad_crop_flip
from ..experiments.cache import process_cache
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.plots import plt
from ..experiments.report import Report
from ..experiments.summary import PaperValue, Stats, group_records
from ..experiments.task import Task, register_task
from ..experiments.training import evaluate_classifier, train_epoch
from .._checks import NonFiniteError
from ..models.registry import create_model
from ..models.transport_pairs import INITS, TransportBlock

__all__ = ["GeodesicConfig", "GeodesicTask", "GeodesicJob", "PAPER"]

KINDS = ("plain", "resnet")
DATASETS = ("mnist", "cifar10")
CIFAR_ARCHITECTURES = ("k1", "k4")
METRICS = ("train_accuracy", "test_accuracy", "official_accuracy", "ots", "lsr", "lss")


def _paper_rows(source: str, names: Tuple[str, ...], rows: Dict[float, Tuple[float, ...]]):
    """``{(kind, γ): {metric: PaperValue}}`` from rows of plain/ResNet pairs in the order of ``names``."""
    table: Dict[Tuple[str, float], Dict[str, PaperValue]] = {}
    for gamma, values in rows.items():
        for offset, kind in enumerate(KINDS):
            table[(kind, gamma)] = {name: PaperValue(values[2 * i + offset], None, source)
                                    for i, name in enumerate(names)}
    return table


#: The papers' numbers: MNIST (text of §5.2), CIFAR-10 K = 1 (Table 4), CIFAR-10 K = 4 (Table 6; means over
#: the four stages). Table 4's last row is printed as γ = 2·10⁻² after 10⁻¹; it is read here as 2·10⁻¹.
PAPER: Dict[Tuple[str, str], Dict[Tuple[str, float], Dict[str, PaperValue]]] = {
    ("mnist", "mlp"): {("resnet", 5e-4): {"lss": PaperValue(1.12, None, "geodesic paper §5.2"),
                                          "ots": PaperValue(0.96, None, "geodesic paper §5.2")}},
    ("cifar10", "k1"): _paper_rows("geodesic paper, Table 4", ("train_accuracy", "test_accuracy", "ots", "lsr", "lss"), {
        0.0: (52.1, 63.0, 53.5, 66.3, 9.0e-4, 0.681, 78.5, 3.71, 20.2, 3.79),
        1e-4: (53.0, 64.6, 54.9, 67.5, 2.3e-3, 0.329, 67.9, 3.30, 19.1, 3.60),
        5e-4: (55.6, 64.9, 57.0, 67.7, 2.1e-3, 0.753, 51.2, 3.57, 18.9, 3.68),
        1e-3: (55.6, 67.5, 57.0, 70.3, 1.0e-3, 0.826, 28.8, 3.81, 15.4, 3.90),
        5e-3: (86.2, 85.9, 82.4, 82.9, 8.0e-4, 0.0242, 2.26, 2.07, 7.26, 2.70),
        1e-2: (97.2, 96.6, 88.9, 88.5, 9.0e-4, 0.0119, 1.27, 1.24, 6.71, 2.25),
        5e-2: (86.6, 93.7, 81.9, 88.1, 1.1e-3, 0.0155, 1.07, 1.19, 7.94, 2.28),
        1e-1: (92.1, 89.1, 88.0, 86.1, 5.0e-4, 0.0272, 1.04, 1.22, 5.77, 2.66),
        2e-1: (81.0, 78.8, 79.0, 78.2, 2.4e-3, 0.009, 1.04, 1.17, 5.08, 3.15)}),
    ("cifar10", "k4"): _paper_rows("geodesic paper, Table 6", ("test_accuracy", "ots", "lsr", "lss"), {
        0.0: (89.3, 94.1, 5.5e-3, 1.0, 3.40, 1.30, 4.66, 1.40),
        5e-4: (92.6, 95.2, 1.75e-3, 1.0, 3.33, 1.17, 3.87, 1.21),
        1e-3: (94.0, 95.4, 0.0, 0.813, 2.55, 1.16, 3.62, 1.18),
        5e-3: (92.2, 95.5, 1.25e-3, 0.760, 2.13, 1.49, 3.36, 1.70),
        1e-2: (91.2, 95.0, 0.0188, 0.950, 1.88, 1.56, 3.63, 1.87)}),
}


@dataclass
class GeodesicConfig(TaskConfig):
    """Configuration of ``pdenets run geodesic``."""

    datasets: List[str] = setting(["mnist"], "mnist and/or cifar10")
    architectures: List[str] = setting(["k1"], "CIFAR-10 networks: k1 (32×16×16, 10 blocks) and/or k4 (4 stages "
                                       "of 5 blocks); MNIST always uses the MLP")
    weight_decays: List[float] = setting([0.0, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 1e-1], "weight decays gamma")
    kinds: List[str] = setting(list(KINDS), "plain and/or resnet")
    seeds: List[int] = setting([0], "seeds")
    width: int = setting(1000, "MLP block width (paper: 1000)")
    blocks: int = setting(5, "MLP blocks (paper: 5)")
    k4_widths: List[int] = setting([64, 128, 256, 512], "channels of the four K = 4 stages (paper: 64,128,256,512)")
    init: str = setting("auto", "weight initialization: auto (plain: kaiming, ResNet: torch), kaiming (He normal, "
                        "zero bias) or torch (its default)")
    epochs: int = setting(10, "training epochs")
    batch_size: int = setting(128, "batch size")
    lr: float = setting(0.01, "SGD learning rate")
    momentum: float = setting(0.9, "SGD momentum")
    augment: bool = setting(True, "pad-4 random crop and flip on CIFAR-10")
    train_limit: Optional[int] = setting(None, "training images used (default all: MNIST 60,000, CIFAR-10 40,000)")
    test_limit: Optional[int] = setting(None, "test images scored (default all: MNIST 10,000, CIFAR-10 10,000)")
    track_points: int = setting(1000, "training images whose tracks are scored")
    noise_levels: List[float] = setting([0.0, 0.1, 0.2, 0.3, 0.5, 1.0], "Gaussian noise sigma (robustness)")
    fgsm_levels: List[float] = setting([0.0, 0.01, 0.02, 0.05, 0.1, 0.2], "FGSM epsilon (robustness)")
    robustness_points: int = setting(1000, "test images for robustness and unit ablation")
    ablation_block: int = setting(3, "block whose units are ablated (1-based; paper: 3)")
    ablation_counts: List[int] = setting([0, 10, 20, 50, 100, 200, 500, 1000], "numbers of eliminated units")
    projection_points: int = setting(150, "test images whose tracks are drawn in 2-D (Fig. 3)")
    figure_weight_decay: float = setting(5e-4, "weight decay shown in the robustness, ablation and track figures")

    def validate(self) -> None:
        super().validate()
        check_fields(self, non_empty=("datasets", "architectures", "weight_decays", "kinds", "seeds", "k4_widths",
                                      "noise_levels", "fgsm_levels", "ablation_counts"),
                     choices={"datasets": DATASETS, "architectures": CIFAR_ARCHITECTURES, "kinds": KINDS,
                              "init": INITS},
                     counts=("width", "blocks", "epochs", "batch_size", "track_points", "k4_widths",
                             "robustness_points", "ablation_block", "projection_points"),
                     positive=("lr",), non_negative=("weight_decays", "momentum", "noise_levels", "fgsm_levels",
                                                     "figure_weight_decay"),
                     non_negative_counts=("seeds", "ablation_counts"))
        for name in ("train_limit", "test_limit"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1 (or null for all images), got {getattr(self, name)}")
        if len(self.k4_widths) != 4:
            raise ConfigError(f"k4_widths must list 4 stage widths, got {self.k4_widths}")
        if self.ablation_block > self.blocks and "mnist" in self.datasets:
            raise ConfigError(f"ablation_block={self.ablation_block} exceeds the MLP's {self.blocks} blocks")


@dataclass(frozen=True)
class GeodesicJob:
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
    device: str
    data_dir: Optional[str] = field(default=None, metadata={"key": False})


@process_cache(maxsize=1)  # image sets are large: keep only the last one
def _load(dataset: str, train_limit: Optional[int], test_limit: Optional[int], data_dir: Optional[str]
          ) -> Dict[str, Any]:
    """Training images and the test sets of ``dataset`` (cached per process)."""
    if dataset == "mnist":
        train, test = load_mnist("train", data_dir), load_mnist("test", data_dir)
        train = ImageData(train.images[:train_limit], train.labels[:train_limit], train.name)
        tests = {"test": ImageData(test.images[:test_limit], test.labels[:test_limit], test.name)}
    else:
        train, centred = load_cifar10_centred(data_dir, train_limit=train_limit, test_limit=test_limit)
        tests = {"test": centred["held-out"], "official": centred["official"]}
    return {"train": train, "tests": tests}


def build_pair_member(spec: GeodesicJob) -> torch.nn.Module:
    """The registered plain/ResNet network of a job."""
    if spec.architecture == "mlp":
        return create_model(f"{spec.kind}-mlp", in_features=784, num_classes=10, width=spec.width,
                            num_blocks=spec.blocks, init=spec.init)
    options = {"widths": spec.k4_widths} if spec.architecture == "k4" else {}
    return create_model(f"{spec.kind}-cnn-{spec.architecture}", in_features=3, num_classes=10, init=spec.init,
                        **options)


def _stage_scores(model, points, with_ots: bool) -> List[Dict[str, Any]]:
    scores = []
    for stage in record_tracks(model, points, blocks=TransportBlock):
        entry = {"width": stage.width, "blocks": len(stage.blocks),
                 "lss": float(line_shape_score(stage.tracks).clamp_max(1e6).mean()),
                 "lsr": float(line_shape_ratio(stage.tracks).clamp_max(1e6).mean())}
        if with_ots:
            entry["ots"] = optimal_transport_score(stage.tracks[:, 0], stage.tracks[:, -1])
            entry["proportions"] = [float(v) for v in segment_proportions(stage.tracks)]
        scores.append(entry)
    return scores


def _mean_over_stages(stages: List[Dict[str, Any]], metric: str) -> float:
    return float(np.mean([stage[metric] for stage in stages]))


def run_geodesic_job(spec: GeodesicJob) -> Dict[str, Any]:
    data = _load(spec.dataset, spec.train_limit, spec.test_limit, spec.data_dir)
    train, test = data["train"], data["tests"]["test"]
    torch.manual_seed(spec.seed)
    model = build_pair_member(spec).to(spec.device)
    optimizer = torch.optim.SGD(model.parameters(), lr=spec.lr, momentum=spec.momentum,
                                weight_decay=spec.weight_decay)
    generator = torch.Generator().manual_seed(spec.seed)
    tracked = train.images[torch.randperm(len(train.labels), generator=torch.Generator().manual_seed(1234))
                           [:spec.track_points]]
    augment = pad_crop_flip if spec.dataset == "cifar10" and spec.augment else None
    curve: List[Dict[str, Any]] = []
    start = time.perf_counter()
    diverged = False
    for epoch in range(spec.epochs):
        try:
            metrics = train_epoch(model, optimizer, train.images, train.labels, batch_size=spec.batch_size,
                                  generator=generator, augment=augment, device=spec.device)
        except NonFiniteError:
            diverged = True
            break
        stages = _stage_scores(model, tracked, False)
        curve.append({"epoch": epoch + 1, "loss": metrics["loss"], "train_accuracy_running": metrics["accuracy"],
                      "lss": _mean_over_stages(stages, "lss"), "lss_stages": [s["lss"] for s in stages]})
    record: Dict[str, Any] = {"curve": curve, "diverged": diverged, "seconds": time.perf_counter() - start}
    if diverged:
        return record
    stages = _stage_scores(model, tracked, True)
    record["stages"] = stages
    for metric in ("lss", "lsr", "ots"):
        record[metric] = _mean_over_stages(stages, metric)
    record["train_accuracy"] = evaluate_classifier(model, train.images, train.labels, batch_size=1000,
                                                   device=spec.device)["accuracy"]
    for name, images in data["tests"].items():
        key = "test_accuracy" if name == "test" else f"{name}_accuracy"
        record[key] = evaluate_classifier(model, images.images, images.labels, batch_size=1000,
                                          device=spec.device)["accuracy"]
    probe_x, probe_y = test.images[:spec.robustness_points], test.labels[:spec.robustness_points]
    record["robustness"] = {
        attack: robustness_curve(model, probe_x, probe_y, levels, attack=attack, blocks=TransportBlock,
                                 seed=spec.seed)
        for attack, levels in (("gaussian", spec.noise_levels), ("fgsm", spec.fgsm_levels))}
    blocks = select_blocks(model, TransportBlock)
    block_name = blocks[min(spec.ablation_block, len(blocks)) - 1][0]
    reference = min(len(train.labels), 5000)
    ablation_width = _block_width(model, block_name, probe_x[:1])
    counts = sorted({min(int(k), ablation_width) for k in spec.ablation_counts})
    record["ablation"] = unit_ablation(model, block_name, train.images[:reference], train.labels[:reference],
                                       probe_x, probe_y, counts)
    (first_stage, *_) = record_tracks(model, test.images[:spec.projection_points], blocks=TransportBlock)
    record["projection"] = {"points": project_tracks(first_stage.tracks, 2, seed=0).to(torch.float32).tolist(),
                            "labels": test.labels[:spec.projection_points].tolist()}
    record["seconds_total"] = time.perf_counter() - start
    return record


def _block_width(model, block_name: str, example: torch.Tensor) -> int:
    sizes: List[int] = []
    handle = model.get_submodule(block_name).register_forward_hook(lambda m, a, out: sizes.append(out[0].numel()))
    try:
        with torch.no_grad():
            model.eval()
            model(example.to(next(model.parameters()).device))
    finally:
        handle.remove()
    return sizes[0]


@register_task
class GeodesicTask(Task):
    name = "geodesic"
    description = ("geodesic analysis (Gai & Zhang, Learn the Geodesic Curve): plain vs ResNet under weight decay on MNIST and CIFAR-10 — "
                   "LSS/LSR/OTS, robustness, unit ablation, track plots")
    config_class = GeodesicConfig
    shortcuts = {"dataset": "datasets", "gamma": "weight_decays", "kind": "kinds", "architecture": "architectures"}
    columns = {"architecture": "TEXT", "kind": "TEXT", "weight_decay": "REAL", "seed": "INTEGER"}

    @classmethod
    def quick_config(cls) -> GeodesicConfig:
        """MNIST, width 64, 3,000 images, 2 epochs, three weight decays, small robustness/ablation probes."""
        return GeodesicConfig(weight_decays=[0.0, 5e-4, 1e-2], width=64, epochs=2, train_limit=3000, test_limit=1000,
                              track_points=300, robustness_points=300, ablation_counts=[0, 8, 16, 32, 64],
                              noise_levels=[0.0, 0.5, 1.0], fgsm_levels=[0.0, 0.05, 0.1], projection_points=50)

    def prepare(self) -> None:
        for dataset in self.config.datasets:
            _load(dataset, self.config.train_limit, self.config.test_limit, self.config.data_dir)

    def jobs(self) -> List[GeodesicJob]:
        c = self.config
        out = []
        for dataset in c.datasets:
            for architecture in (("mlp",) if dataset == "mnist" else tuple(c.architectures)):
                mlp = architecture == "mlp"
                for gamma in c.weight_decays:
                    for kind in c.kinds:
                        for seed in c.seeds:
                            out.append(GeodesicJob(
                                dataset, architecture, kind, float(gamma), seed, c.width if mlp else None,
                                c.blocks if mlp else None, tuple(c.k4_widths) if architecture == "k4" else None,
                                c.init, c.epochs, c.batch_size, c.lr, c.momentum,
                                c.augment and dataset == "cifar10", c.train_limit, c.test_limit, c.track_points,
                                tuple(float(v) for v in c.noise_levels), tuple(float(v) for v in c.fgsm_levels),
                                c.robustness_points, c.ablation_block, tuple(int(k) for k in c.ablation_counts),
                                c.projection_points, c.device, c.data_dir))
        return out

    @staticmethod
    def run_job(spec: GeodesicJob) -> Dict[str, Any]:
        return run_geodesic_job(spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        if record["diverged"]:
            return "diverged"
        return f"LSS={record['lss']:.2f} OTS={record['ots']:.2f} test={100 * record['test_accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        table: Dict[str, Any] = {}
        for (dataset, architecture, gamma, kind), members in group_records(
                records, by=("dataset", "architecture", "weight_decay", "kind")).items():
            done = [m for m in members if not m["diverged"]]
            entry: Dict[str, Any] = {"runs": len(members), "diverged": len(members) - len(done)}
            for metric in METRICS:
                entry[metric] = Stats.of(m.get(metric) for m in done).as_dict()
            if done and len(done[0]["stages"]) > 1:
                entry["stages"] = [{metric: Stats.of(m["stages"][i][metric] for m in done).as_dict()
                                    for metric in ("ots", "lsr", "lss")} | {"width": done[0]["stages"][i]["width"]}
                                   for i in range(len(done[0]["stages"]))]
            table.setdefault(f"{dataset}/{architecture}", {}).setdefault(f"{gamma:g}", {})[kind] = entry
        return {"table": table}

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        write_report(self.config, results, records, run_dir)


_ARCHITECTURE_TEXT = {
    "mlp": "MLP 784 → {width}, {blocks} blocks v(x) = W₂σ(W₁σ(x)) (ResNet: x + v(x)), → 10",
    "k1": "CNN K = 1: stride-2 3×3 stem 3×32×32 → 32×16×16, 10 blocks of two 3×3 convolutions, global pool, → 10",
    "k4": "CNN K = 4: stages {k4} channels at 32², 16², 8², 4², 5 blocks each, stride-2 1×1 projections, → 10",
}


def _cell(entry: Dict[str, Any], metric: str, percent: bool) -> str:
    stats = entry.get(metric)
    if not stats or not stats["count"]:
        return "—"
    value = stats["mean"] * (100 if percent else 1)
    text = f"{value:.1f}" if percent else (f"{value:.3g}" if metric == "ots" else f"{value:.2f}")
    return text + (f" ± {stats['std'] * (100 if percent else 1):.1f}" if percent and stats["count"] > 1 else "")


def _paper_cell(paper: Dict[str, PaperValue]) -> str:
    labels = {"train_accuracy": "train", "test_accuracy": "test", "ots": "OTS", "lsr": "LSR", "lss": "LSS"}
    return " · ".join(f"{labels[m]} {paper[m].mean:.3g}" for m in labels if m in paper) or "—"


def _nearest(values: List[float], target: float) -> float:
    return min(values, key=lambda value: (abs(np.log10(value + 1e-12) - np.log10(target + 1e-12)), value))


def write_report(c: GeodesicConfig, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
    """Tables in the papers' layout (ours beside theirs) and the figures; see the module docstring."""
    report = Report("pdenets — geodesic analysis: plain network vs ResNet under weight decay")
    report.paragraph(
        f"SGD lr {c.lr}, momentum {c.momentum}, batch {c.batch_size}, {c.epochs} epochs, weight decay γ, "
        f"{c.init} initialization; {c.train_limit or 'all'} training images"
        f"{' (CIFAR-10: pad-4 crop + flip)' if c.augment and 'cifar10' in c.datasets else ''}. Scores on the "
        f"tracks of {c.track_points} fixed training images through the blocks (OTS: exact assignment between a "
        f"stage's input and output; K = 4: means over the four stages). Seeds {c.seeds}. "
        f"{results['runs_stored']} of {results['runs_planned']} runs stored; "
        f"{sum(r.get('seconds_total', r['seconds']) for r in records) / 60:.0f} min of run time in all (one "
        f"core per run).")
    if "cifar10" in c.datasets:
        report.paragraph("CIFAR-10: trained on the first 40,000 training images; **test = the last 10,000 training "
                         "images, held out**; 'official' = the 1,000 official test images available.")
    figures = results.setdefault("figures", {})
    for group, gammas in results["table"].items():
        dataset, architecture = group.split("/")
        report.heading(f"{dataset}, {architecture.upper() if architecture != 'mlp' else 'MLP'}: plain vs ResNet per "
                       "weight decay")
        report.paragraph(_ARCHITECTURE_TEXT[architecture].format(width=c.width, blocks=c.blocks,
                                                                 k4="/".join(map(str, c.k4_widths))) + ".")
        paper = PAPER.get((dataset, architecture), {})
        accuracies = METRICS[:3] if dataset == "cifar10" else METRICS[:2]
        rows = []
        for gamma, kinds in gammas.items():
            for kind in KINDS:
                if kind in kinds:
                    e = kinds[kind]
                    rows.append([gamma, kind] + [_cell(e, m, True) for m in accuracies] +
                                [_cell(e, m, False) for m in METRICS[3:]] +
                                [_paper_cell(paper.get((kind, float(gamma)), {})),
                                 f"{e['runs'] - e['diverged']}/{e['runs']}"])
        report.table(["γ", "network", "train acc (%)", "test acc (%)"] +
                     (["official test (%)"] if dataset == "cifar10" else []) +
                     ["OTS", "LSR", "LSS", "paper", "runs finished"], rows)
        stage_rows = [[gamma, kind, stage["width"]] + [f"{stage[m]['mean']:.3g}" for m in ("ots", "lsr", "lss")]
                      for gamma, kinds in gammas.items() for kind in KINDS if kind in kinds
                      for stage in kinds[kind].get("stages", [])]
        if stage_rows:
            report.table(["γ", "network", "stage width", "OTS", "LSR", "LSS"], stage_rows,
                         caption="Per stage (Fig. 5–6 layout).")
        members = [r for r in records if r["dataset"] == dataset and r["architecture"] == architecture]
        name = f"{dataset}-{architecture}"
        figures[f"{name}-lss"] = _lss_figure(members, run_dir, f"{name}-lss.png")
        report.figure(figures[f"{name}-lss"], "Mean LSS of the tracked training images after every epoch (Fig. 2 "
                                              "layout), one line per weight decay; solid ResNet, dashed plain.")
        done = [r for r in members if not r["diverged"]]
        if not done:
            continue
        gamma = _nearest(sorted({r["weight_decay"] for r in done}), c.figure_weight_decay)
        chosen = {kind: next((r for r in done if r["weight_decay"] == gamma and r["kind"] == kind), None)
                  for kind in KINDS}
        chosen = {kind: r for kind, r in chosen.items() if r is not None}
        report.heading(f"Robustness, unit ablation, tracks (γ = {gamma:g}, seed {min(r['seed'] for r in done)})", 3)
        proportion_rows = [[kind, stage_index + 1] + [f"{v:.3f}" for v in stage["proportions"]]
                           for kind, r in chosen.items() for stage_index, stage in enumerate(r["stages"])]
        width = max(len(row) for row in proportion_rows) - 2
        report.table(["network", "stage"] + [f"segment {i + 1}" for i in range(width)],
                     [row + [""] * (width + 2 - len(row)) for row in proportion_rows],
                     caption="Mean share of each segment in its track's length (Tables 2–3 layout).")
        figures[f"{name}-robustness"] = _robustness_figure(chosen, run_dir, f"{name}-robustness.png")
        report.figure(figures[f"{name}-robustness"],
                      "Accuracy on test images with Gaussian noise σ and FGSM ε (top), and the variation rate of the "
                      "last block's output V(n) (bottom; eq. 49, appendix 7.2, Fig. 8 layout).")
        figures[f"{name}-variation"] = _variation_figure(chosen, run_dir, f"{name}-variation.png")
        report.figure(figures[f"{name}-variation"], "Variation rate along the tracks (l = 0 is the first block's "
                                                    "input) at the largest noise level of each attack.")
        ablation = {kind: r["ablation"] for kind, r in chosen.items()}
        figures[f"{name}-ablation"] = _ablation_figure(ablation, run_dir, f"{name}-ablation.png")
        report.figure(figures[f"{name}-ablation"],
                      f"Unit ablation of block {c.ablation_block} (appendix 7.1, Fig. 7 layout): test accuracy when "
                      "the k most important units of each class (largest class means) are set back to their values "
                      "before the block; the class of a point is the intact network's prediction.")
        report.table(["k eliminated"] + list(ablation),
                     [[k] + [f"{100 * ablation[kind]['accuracy'][i]:.1f}" for kind in ablation]
                      for i, k in enumerate(next(iter(ablation.values()))["counts"])])
        figures[f"{name}-tracks"] = _tracks_figure(chosen, run_dir, f"{name}-tracks.png")
        report.figure(figures[f"{name}-tracks"], "Tracks of test images through the first stage, projected to 2-D by "
                                                 "one random Gaussian matrix (Fig. 3 layout); colour = class, "
                                                 "dot = input of the first block.")
    report.write(run_dir)


def _lss_figure(records, run_dir, filename: str) -> str:
    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    gammas = sorted({r["weight_decay"] for r in records})
    colors = plt.cm.viridis(np.linspace(0, 0.9, max(1, len(gammas))))
    first_seed = min((r["seed"] for r in records), default=0)
    for record in sorted(records, key=lambda r: (r["weight_decay"], r["kind"], r["seed"])):
        if record["seed"] != first_seed or not record["curve"]:
            continue
        color = colors[gammas.index(record["weight_decay"])]
        epochs = [point["epoch"] for point in record["curve"]]
        ax.plot(epochs, [point["lss"] for point in record["curve"]], "-" if record["kind"] == "resnet" else "--",
                color=color, marker="o", markersize=3, label=f"{record['kind']} γ={record['weight_decay']:g}")
    ax.set_xlabel("epoch")
    ax.xaxis.set_major_locator(plt.MaxNLocator(integer=True))
    ax.set_ylabel("LSS")
    ax.set_yscale("log")  # LSS ≥ 1 spans orders of magnitude across weight decays; ticks read as plain numbers
    from matplotlib.ticker import FuncFormatter

    plain_numbers = FuncFormatter(lambda value, _: f"{value:g}")
    ax.yaxis.set_major_formatter(plain_numbers)
    ax.yaxis.set_minor_formatter(plain_numbers)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2, loc="best", framealpha=0.9)
    return run_dir.save_figure(fig, filename)


_STYLE = {"plain": ("tab:red", "--"), "resnet": ("tab:blue", "-")}


def _robustness_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(2, 2, figsize=(8, 6), layout="constrained", sharex="col")
    for column, (attack, label) in enumerate((("gaussian", "Gaussian noise σ"), ("fgsm", "FGSM ε"))):
        for kind, record in chosen.items():
            curve = record["robustness"][attack]
            color, style = _STYLE[kind]
            axes[0, column].plot(curve["levels"], [100 * a for a in curve["accuracy"]], style, color=color,
                                 marker="o", label=kind)
            axes[1, column].plot(curve["levels"], [v[-1] for v in curve["variation"]], style, color=color,
                                 marker="o", label=kind)
        axes[0, column].set_ylabel("test accuracy (%)")
        axes[1, column].set_ylabel("variation rate V(n)")
        axes[1, column].set_xlabel(label)
        for ax in axes[:, column]:
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
    return run_dir.save_figure(fig, filename)


def _variation_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2), layout="constrained")
    for ax, (attack, label) in zip(axes, (("gaussian", "σ"), ("fgsm", "ε"))):
        for kind, record in chosen.items():
            curve = record["robustness"][attack]
            color, style = _STYLE[kind]
            rates = curve["variation"][-1]
            ax.plot(range(len(rates)), rates, style, color=color, marker="o",
                    label=f"{kind}, {label} = {curve['levels'][-1]:g}")
        ax.set_xlabel("layer l along the tracks")
        ax.set_ylabel("variation rate")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    return run_dir.save_figure(fig, filename)


def _ablation_figure(ablation, run_dir, filename: str) -> str:
    fig, ax = plt.subplots(figsize=(5, 3.4), layout="constrained")
    for kind, curve in ablation.items():
        color, style = _STYLE[kind]
        ax.plot(curve["counts"], [100 * a for a in curve["accuracy"]], style, color=color, marker="o", label=kind)
    ax.set_xlabel(f"eliminated units of {next(iter(ablation.values()))['block']}")
    ax.set_ylabel("test accuracy (%)")
    ax.grid(alpha=0.3)
    ax.legend()
    return run_dir.save_figure(fig, filename)


def _tracks_figure(chosen, run_dir, filename: str) -> str:
    fig, axes = plt.subplots(1, len(chosen), figsize=(4.2 * len(chosen), 4), layout="constrained", squeeze=False)
    colors = plt.cm.tab10(np.arange(10))
    for ax, (kind, record) in zip(axes[0], chosen.items()):
        points = np.asarray(record["projection"]["points"])
        for track, label in zip(points, record["projection"]["labels"]):
            ax.plot(track[:, 0], track[:, 1], "-", color=colors[label % 10], linewidth=0.7, alpha=0.7)
            ax.plot(track[0, 0], track[0, 1], "o", color=colors[label % 10], markersize=2)
        ax.set_title(f"{kind}: {points.shape[1] - 1} segments")
        ax.set_xticks([])
        ax.set_yticks([])
    return run_dir.save_figure(fig, filename)
