"""Image classification and segmentation with Hamiltonian CNNs and nonlocal PIDE blocks (Bohn, Griebel & Kannan).

Datasets:

* ``cifar10`` — the 50,000 training images of the offline PNG chunks: the first 40,000 train
  (``train_limit`` fewer on a CPU), **the last 10,000 are held out as the test set** (the
  9,000 other official test images are not available offline), and the 1,000 official test
  images are a second test set. Per-pixel mean subtraction, pad 4 + random crop + flip.
* ``canvas`` — the field-of-view task: two MNIST digits far apart on a 96 × 96 canvas,
  label = their sum mod 10, or with ``canvas_label="same"`` whether they are the same digit
  (:mod:`pdenets.data.canvas`). Hamiltonian networks end in global
  average pooling here (the ResNets always do): a linear layer over the whole final map would
  itself see both digits, and the comparison is about what the blocks can see.
* ``canvas-segmentation`` — the same canvases labelled per pixel (background, or the sum
  class on the strokes); the networks keep the resolution (no pooling) and end in a 1×1
  convolution; pixel accuracy and mean IoU.

Models come from the registry (``resnet-44``, ``preresnet-20``, ``hamiltonian-74`` and its
nonlocal variants) with the architecture settings of the config (``units``, ``widths``,
``resnet_depth``; the defaults are the paper's full scale). Training: SGD with momentum, the
paper's piecewise learning rate scaled to ``epochs``, L2 weight decay on convolution kernels
(eq. 4.7) and, for Hamiltonian networks, weight smoothness decay (eq. 4.8). The report gives
the median over seeds, parameter counts, FLOPs (Table 4 layout, counted by
``torch.utils.flop_counter``) and the eigenvalues of the nonlocal blocks' ``𝒦₁, 𝒦₂`` (Figs. 7–8).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import torch

from ..data.canvas import LABELS, canvas_classes, two_digit_canvases
from ..data.vision import ImageData, load_cifar10, load_cifar10_centred, load_mnist, pad_crop_flip
from ..experiments.cache import process_cache
from ..experiments.config import ConfigError, TaskConfig, check_fields, setting
from ..experiments.distributed import distributed_context
from ..experiments.plots import plt
from ..experiments.report import Report
from ..experiments.summary import PaperValue, Stats, group_records
from ..experiments.task import Task, register_task
from ..experiments.training import evaluate_classifier, mean_iou, train_epoch
from ..models.registry import create_model, list_models, model_entry
from ..nn.nonlocal_block import NonlocalBlock

__all__ = ["ImageClassificationConfig", "ImageClassificationTask", "ImageJob", "PAPER_TABLE1", "count_flops",
           "paper_learning_rate"]

DATASETS = ("cifar10", "canvas", "canvas-segmentation")
_T1 = "PIDE paper, Table 1 (CIFAR-10, median of 5 seeds, 200 epochs)"
PAPER_TABLE1 = {"resnet-44": PaperValue(92.64, None, _T1), "preresnet-20": PaperValue(92.35, None, _T1),
                "hamiltonian-74": PaperValue(92.75, None, _T1), "hamiltonian-74-diffusion": PaperValue(93.27, None, _T1),
                "hamiltonian-74-fractional": PaperValue(93.21, None, _T1),
                "hamiltonian-74-inverse-fractional": PaperValue(93.08, None, _T1),
                "hamiltonian-74-log": PaperValue(92.88, None, _T1)}
_T4 = "PIDE paper, Table 4 (CIFAR-10, M multiply-adds)"
PAPER_FLOPS = {"resnet-44": PaperValue(98.3, None, _T4), "hamiltonian-74": PaperValue(159.6, None, _T4),
               "hamiltonian-74-diffusion": PaperValue(192.9, None, _T4),
               "hamiltonian-74-fractional": PaperValue(193.4, None, _T4),
               "hamiltonian-74-inverse-fractional": PaperValue(193.2, None, _T4),
               "hamiltonian-74-log": PaperValue(193.6, None, _T4)}


def paper_learning_rate(step: int, steps_per_epoch: int, epochs: int, base: float = 0.1) -> float:
    """The reference code's schedule scaled to ``epochs``: 1 warm-up epoch at ``base/10``, then ``base``,
    ×0.1 at 40 %, 60 %, 80 % and 90 % of the epochs (80/120/160/180 of 200)."""
    epoch = step / steps_per_epoch
    if epoch < 1 and epochs > 5:
        return base / 10
    fractions = (0.4, 0.6, 0.8, 0.9)
    return base * 0.1 ** sum(epoch >= f * epochs for f in fractions)


@dataclass
class ImageClassificationConfig(TaskConfig):
    """Configuration of ``pdenets run image-classification``."""

    datasets: List[str] = setting(["cifar10"], "cifar10, canvas or canvas-segmentation")
    models: List[str] = setting(["resnet-44", "hamiltonian-74", "hamiltonian-74-diffusion",
                                 "hamiltonian-74-fractional", "hamiltonian-74-inverse-fractional",
                                 "hamiltonian-74-log"], "registered image models")
    seeds: List[int] = setting([0, 1, 2], "seeds (the report gives the median)")
    units: List[int] = setting([6, 6, 6], "Hamiltonian blocks per unit (6-6-6: Hamiltonian-74)")
    widths: List[int] = setting([32, 64, 112], "Hamiltonian channels per unit")
    resnet_depth: int = setting(44, "ResNet v1 depth (6n+2); PreResNet uses 20")
    resnet_widths: List[int] = setting([16, 32, 64], "ResNet v1 stage widths")
    step_size: float = setting(0.06, "h of the Hamiltonian and nonlocal blocks")
    lam: float = setting(0.1, "lambda of the nonlocal kernels")
    s: float = setting(0.5, "fractional order of (-Delta)^s and (-Delta)^-s")
    subsample: int = setting(2, "max-pooling of keys and values in the nonlocal blocks (CIFAR 2, STL 4)")
    stages: int = setting(2, "stages of each nonlocal block")
    epochs: int = setting(200, "training epochs")
    batch_size: int = setting(100, "global batch size")
    lr: float = setting(0.1, "peak learning rate (the paper's piecewise schedule, scaled to the epochs)")
    momentum: float = setting(0.9, "SGD momentum")
    l2: float = setting(2e-4, "L2 penalty r * sum K^2 on convolution kernels (alpha1 = 2r; ResNets: l2_resnet)")
    l2_resnet: float = setting(1e-4, "L2 penalty of the ResNet baselines")
    smoothness: float = setting(1e-8, "alpha2 of the weight smoothness decay (Hamiltonian networks)")
    train_limit: Optional[int] = setting(None, "training images used (CIFAR; default all 40,000)")
    test_limit: Optional[int] = setting(None, "held-out images evaluated (CIFAR; default all 10,000)")
    canvas_train: int = setting(20000, "training canvases")
    canvas_test: int = setting(2000, "test canvases (from MNIST test digits)")
    canvas_size: int = setting(96, "canvas side")
    min_distance: float = setting(48.0, "least distance between the two digits' corners")
    canvas_label: str = setting("sum", "canvas label: sum (of the two digits, mod 10) or same (same digit or not)")
    canvas_digits: Optional[List[int]] = setting(None, "digit classes drawn on the canvases (default all ten)")
    flops_models: List[str] = setting(["resnet-44", "hamiltonian-74", "hamiltonian-74-diffusion",
                                       "hamiltonian-74-fractional", "hamiltonian-74-inverse-fractional",
                                       "hamiltonian-74-log"], "networks of the FLOPs table (paper scale, 32x32)")

    def validate(self) -> None:
        super().validate()
        image_models = set(list_models("image"))
        check_fields(self, non_empty=("datasets", "models", "seeds"), choices={"datasets": DATASETS,
                                                                               "models": sorted(image_models),
                                                                               "canvas_label": sorted(LABELS)},
                     counts=("units", "widths", "resnet_widths", "subsample", "stages", "epochs", "batch_size",
                             "canvas_train", "canvas_test", "canvas_size"),
                     positive=("step_size", "lam", "s", "lr"),
                     non_negative=("momentum", "l2", "l2_resnet", "smoothness", "min_distance"),
                     non_negative_counts=("seeds",))
        if len(self.units) != len(self.widths):
            raise ConfigError(f"units {self.units} and widths {self.widths} need the same length")
        if any(w % 2 for w in self.widths):
            raise ConfigError(f"widths must be even, got {self.widths}")
        if (self.resnet_depth - 2) % 6:
            raise ConfigError(f"resnet_depth must be 6n + 2, got {self.resnet_depth}")
        if self.train_limit is not None and self.train_limit < self.batch_size:
            raise ConfigError("train_limit must be at least one batch")
        if self.test_limit is not None and self.test_limit < 1:
            raise ConfigError("test_limit must be a positive count")
        if self.canvas_digits is not None:
            if len(set(self.canvas_digits)) < 2 or not all(0 <= digit <= 9 for digit in self.canvas_digits):
                raise ConfigError(f"canvas_digits must name at least two distinct digits 0-9, got {self.canvas_digits}")


@dataclass(frozen=True)
class ImageJob:
    dataset: str
    model: str
    seed: int
    architecture: Tuple[Tuple[str, Any], ...]
    training: Tuple[Tuple[str, Any], ...]
    data: Tuple[Tuple[str, Any], ...]
    device: str
    data_dir: Optional[str] = field(default=None, metadata={"key": False})


# ----------------------------------------------------------------------------------------
# data (cached per process)

@process_cache(maxsize=2)
def _dataset(name: str, data: Dict[str, Any], data_dir: Optional[str]) -> Dict[str, Any]:
    if name == "cifar10":
        train, tests = load_cifar10_centred(data_dir, train_limit=data.get("train_limit"),
                                            test_limit=data.get("test_limit"))
        result = {"train": train, "tests": tests,
                  "classes": 10, "channels": 3, "size": 32, "augment": True, "segmentation": False,
                  "head": "pool"}
    else:
        segmentation = name == "canvas-segmentation"
        train_digits, test_digits = load_mnist("train", data_dir), load_mnist("test", data_dir)
        label = data.get("canvas_label", "sum")
        options = {"size": data["canvas_size"], "min_distance": data["min_distance"], "label": label,
                   "digit_classes": data.get("canvas_digits")}
        train = two_digit_canvases(train_digits, data["canvas_train"], seed=1, **options)
        test = two_digit_canvases(test_digits, data["canvas_test"], seed=2, **options)
        target = "masks" if segmentation else "labels"
        result = {"train": ImageData(train.images, getattr(train, target), "canvas-train"),
                  "tests": {"test canvases": ImageData(test.images, getattr(test, target), "canvas-test")},
                  "classes": canvas_classes(label, segmentation), "channels": 1, "size": data["canvas_size"],
                  "augment": False, "segmentation": segmentation, "head": "global"}
    return result


def model_architecture(name: str, architecture: Dict[str, Any]) -> Dict[str, Any]:
    """The settings of ``architecture`` that network ``name`` is built with (and so its job key holds)."""
    if name.startswith("hamiltonian"):
        used = ["units", "widths", "step_size"]
        if name != "hamiltonian-74":  # the nonlocal variants
            used += ["lam", "subsample", "stages"] + (["s"] if name.endswith("fractional") else [])
    else:
        used = ["resnet_depth", "resnet_widths"] if name == "resnet-44" else []
    return {key: architecture[key] for key in used}


def build_model(name: str, architecture: Dict[str, Any], *, channels: int, classes: int, size: int,
                segmentation: bool, head: str = "pool"):
    """A registered image model at the config's scale (``head`` of Hamiltonian networks unless segmenting)."""
    used = model_architecture(name, architecture)
    if name.startswith("hamiltonian"):
        options = {key: used[key] for key in ("subsample", "stages", "lam", "s") if key in used}
        return create_model(name, in_channels=channels, num_classes=classes, units=tuple(used["units"]),
                            widths=tuple(used["widths"]), step_size=used["step_size"],
                            image_size=size, head="segmentation" if segmentation else head,
                            nonlocal_options=options)
    if name == "resnet-44":
        return create_model(name, in_channels=channels, num_classes=classes, depth=used["resnet_depth"],
                            widths=tuple(used["resnet_widths"]), segmentation=segmentation)
    return create_model(name, in_channels=channels, num_classes=classes, segmentation=segmentation)


def _architecture(config: ImageClassificationConfig) -> Dict[str, Any]:
    """The network settings of a config (each model's job key holds those it uses; the FLOPs table all)."""
    return {"units": tuple(config.units), "widths": tuple(config.widths), "step_size": config.step_size,
            "lam": config.lam, "s": config.s, "subsample": config.subsample, "stages": config.stages,
            "resnet_depth": config.resnet_depth, "resnet_widths": tuple(config.resnet_widths)}


def _training(config: ImageClassificationConfig, model: str) -> Dict[str, Any]:
    """The optimisation settings of one model's jobs: its own L2 weight; the smoothness penalty only for
    Hamiltonian networks."""
    training = {"epochs": config.epochs, "batch_size": config.batch_size, "lr": config.lr,
                "momentum": config.momentum, "l2": config.l2_resnet if model == "resnet-44" else config.l2}
    if model.startswith("hamiltonian"):
        training["smoothness"] = config.smoothness
    return training


def count_flops(model: torch.nn.Module, shape: Tuple[int, ...]) -> int:
    """Multiply-adds of one forward pass at batch size 1 (``FlopCounterMode`` counts 2 flops per multiply-add)."""
    from torch.utils.flop_counter import FlopCounterMode

    model.eval()
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(torch.zeros(1, *shape))
    return counter.get_total_flops() // 2


def _spectra(model: torch.nn.Module) -> List[Dict[str, Any]]:
    """Eigenvalues of ``𝒦₁, 𝒦₂`` (the 1×1 convolutions of each nonlocal block) and of their symmetric parts."""
    out = []
    for unit, block in enumerate(m for m in model.modules() if isinstance(m, NonlocalBlock)):
        for stage, outer in enumerate(block.outer):
            matrix = outer[0].weight.detach()[:, :, 0, 0].double()
            eigenvalues = torch.linalg.eigvals(matrix)
            symmetric = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
            out.append({"unit": unit + 1, "stage": stage + 1, "real": eigenvalues.real.tolist(),
                        "imag": eigenvalues.imag.tolist(), "symmetric": symmetric.tolist(),
                        "positive_fraction": float((eigenvalues.real > 0).double().mean()),
                        "symmetric_positive_fraction": float((symmetric > 0).double().mean())})
    return out


def run_image_job(spec: ImageJob) -> Dict[str, Any]:
    architecture, training, data = dict(spec.architecture), dict(spec.training), dict(spec.data)
    bundle = _dataset(spec.dataset, data, spec.data_dir)
    device = torch.device(spec.device)
    context = distributed_context(spec.device)
    torch.manual_seed(spec.seed)
    model = build_model(spec.model, architecture, channels=bundle["channels"], classes=bundle["classes"],
                        size=bundle["size"], segmentation=bundle["segmentation"], head=bundle["head"]).to(device)
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    trained = context.wrap(model)
    optimizer = torch.optim.SGD(trained.parameters(), lr=training["lr"], momentum=training["momentum"])
    train = bundle["train"]
    steps_per_epoch = -(-len(train) // training["batch_size"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: paper_learning_rate(
        step, steps_per_epoch, training["epochs"], 1.0))
    l2 = training["l2"]

    def penalty():
        total = l2 * model.l2_penalty()
        if training.get("smoothness"):
            total = total + training["smoothness"] * model.smoothness_penalty()
        return total

    generator = torch.Generator().manual_seed(spec.seed)
    augment = (lambda x, g: pad_crop_flip(x, g)) if bundle["augment"] else None
    curve = []
    start = time.perf_counter()
    for epoch in range(training["epochs"]):
        metrics = train_epoch(trained, optimizer, train.images, train.labels, batch_size=training["batch_size"],
                              generator=generator, augment=augment, penalty=penalty, scheduler=scheduler,
                              device=spec.device, shard=context.shard, reduce=context.reduce)
        curve.append(metrics)
    seconds = time.perf_counter() - start
    record: Dict[str, Any] = {"parameters": parameters, "train_curve": curve, "seconds": seconds, "tests": {},
                              "test_losses": {}}
    for name, test in bundle["tests"].items():
        evaluation = evaluate_classifier(model, test.images, test.labels, device=spec.device)
        entry = {"accuracy": evaluation["accuracy"]}
        record["test_losses"][name] = evaluation["loss"]
        if bundle["segmentation"]:
            entry["mean_iou"] = mean_iou(evaluation["predictions"], test.labels, bundle["classes"])
        record["tests"][name] = entry
    record["spectra"] = _spectra(model)
    context.close()
    return record


# ----------------------------------------------------------------------------------------
# the task


@register_task
class ImageClassificationTask(Task):
    name = "image-classification"
    description = "Hamiltonian CNNs with nonlocal PIDE blocks: CIFAR-10, a field-of-view task, segmentation"
    config_class = ImageClassificationConfig
    shortcuts = {"dataset": "datasets", "model": "models"}
    columns = {"dataset": "TEXT", "model": "TEXT", "seed": "INTEGER"}

    @classmethod
    def quick_config(cls) -> ImageClassificationConfig:
        """Tiny networks, 1,000 CIFAR images, 2 epochs, one seed."""
        return ImageClassificationConfig(units=[1, 1, 1], widths=[8, 16, 28], resnet_depth=8, resnet_widths=[8, 16, 32],
                                         epochs=2, seeds=[0], train_limit=1000, models=["resnet-44", "hamiltonian-74",
                                                                                      "hamiltonian-74-diffusion"])

    def prepare(self) -> None:
        config = self.config
        for dataset in config.datasets:  # fail on a missing file before any run
            if dataset == "cifar10":
                load_cifar10("official", config.data_dir)
            else:
                load_mnist("test", config.data_dir)
        for model in config.models:
            model_entry(model)

    def jobs(self) -> List[ImageJob]:
        config = self.config
        architecture = _architecture(config)
        jobs = []
        for dataset in config.datasets:
            data = {"train_limit": config.train_limit, "test_limit": config.test_limit} if dataset == "cifar10" else {
                "canvas_train": config.canvas_train, "canvas_test": config.canvas_test,
                "canvas_size": config.canvas_size, "min_distance": config.min_distance}
            if dataset != "cifar10":  # options at their defaults stay out of the keys of earlier runs
                if config.canvas_label != "sum":
                    data["canvas_label"] = config.canvas_label
                if config.canvas_digits is not None:
                    data["canvas_digits"] = tuple(sorted(set(config.canvas_digits)))
            for model in config.models:
                for seed in config.seeds:
                    jobs.append(ImageJob(dataset, model, seed,
                                         tuple(sorted(model_architecture(model, architecture).items())),
                                         tuple(sorted(_training(config, model).items())),
                                         tuple(sorted(data.items())), config.device, config.data_dir))
        return jobs

    @staticmethod
    def run_job(spec: ImageJob) -> Dict[str, Any]:
        return run_image_job(spec)

    def progress_note(self, record: Dict[str, Any]) -> str:
        first = next(iter(record["tests"].values()))
        return f"acc={100 * first['accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> Dict[str, Any]:
        results: Dict[str, Any] = {"table": {}, "flops": self.flops()}
        for (dataset, model), members in group_records(records, by=("dataset", "model")).items():
            entry = {"parameters": members[0]["parameters"], "runs": len(members),
                     "seconds_per_run": float(np.mean([m["seconds"] for m in members]))}
            for test in members[0]["tests"]:
                for metric in members[0]["tests"][test]:
                    stats = Stats.of((100 * m["tests"][test][metric] for m in members))
                    entry[f"{test} {metric}"] = {"median": stats.median, "mean": stats.mean, "min": stats.min,
                                                 "max": stats.max}
            results["table"].setdefault(dataset, {})[model] = entry
        return results

    def flops(self) -> Dict[str, Any]:
        """FLOPs (multiply-adds) of the paper-scale networks at 32×32 and of the configured ones."""
        paper = {"units": (6, 6, 6), "widths": (32, 64, 112), "step_size": 0.06, "lam": 0.1, "s": 0.5,
                 "subsample": 2, "stages": 2, "resnet_depth": 44, "resnet_widths": (16, 32, 64)}
        config = self.config
        configured = _architecture(config)
        out = {}
        for label, architecture in (("paper scale", paper), ("this run", configured)):
            for model in config.flops_models:
                network = build_model(model, architecture, channels=3, classes=10, size=32, segmentation=False)
                out.setdefault(label, {})[model] = {
                    "mflops": count_flops(network, (3, 32, 32)) / 1e6,
                    "parameters": sum(p.numel() for p in network.parameters())}
        return out

    def report(self, results: Dict[str, Any], records: List[Dict[str, Any]], run_dir) -> None:
        _write_report(self, results, records, run_dir)


def _write_report(task: ImageClassificationTask, results, records, run_dir) -> None:
    config = task.config
    figures = results.setdefault("figures", {})
    report = Report("pdenets — Hamiltonian CNNs with nonlocal PIDE blocks")
    report.paragraph(
        f"Units {config.units}, widths {config.widths}, h = {config.step_size}, λ = {config.lam}, s = {config.s}, "
        f"subsampling {config.subsample}, {config.stages} stages; ResNet v1 depth {config.resnet_depth} (widths "
        f"{config.resnet_widths}); {config.epochs} epochs, batch {config.batch_size}, SGD (momentum {config.momentum}) "
        f"with the paper's piecewise learning rate scaled to the epochs, L2 {config.l2} (ResNets {config.l2_resnet}), "
        f"smoothness {config.smoothness}; seeds {config.seeds}. {results['runs_stored']} of {results['runs_planned']} "
        f"runs stored; wall time {results['wall_seconds']:.0f} s.")
    for dataset, models in results["table"].items():
        report.heading(f"{dataset}: median over seeds")
        if dataset == "cifar10":
            limit = config.test_limit or 10_000
            report.paragraph(f"Test sets: *held-out* = the first {min(limit, 10_000):,} of the **last 10,000 training "
                             "images, held out** from training (the offline data lacks 9,000 of the official test "
                             "images); *official* = the 1,000 official test images available.")
        tests = [key for key in next(iter(models.values())) if isinstance(next(iter(models.values()))[key], dict)]
        rows = []
        for model, entry in models.items():
            row = [model, f"{entry['parameters'] / 1e6:.3f}"]
            row += [f"{entry[t]['median']:.2f} ({entry[t]['min']:.2f}–{entry[t]['max']:.2f})" for t in tests]
            paper = PAPER_TABLE1.get(model) if dataset == "cifar10" else None
            rows.append(row + [paper.format(2) if paper else "—", f"{entry['seconds_per_run']:.0f}", entry["runs"]])
        report.table(["model", "parameters (M)"] + [f"{t} (%)" for t in tests] +
                     ["paper (full scale)", "s per run", "seeds"], rows,
                     caption="Median (min–max) over seeds. The paper's column is its full-scale 200-epoch result on the "
                             "official test set, for orientation only.")
    if config.flops_models:
        report.heading("FLOPs (Table 4 layout): multiply-adds of one 32×32 image")
        rows = []
        for model in config.flops_models:
            paper = PAPER_FLOPS.get(model)
            rows.append([model] + [f"{results['flops'][scale][model]['mflops']:.1f}" for scale in results["flops"]]
                        + [paper.format(1) if paper else "—"])
        report.table(["model"] + [f"{scale} (M)" for scale in results["flops"]] + ["paper (M)"], rows,
                     caption="Counted with torch.utils.flop_counter.FlopCounterMode (which sees the nonlocal blocks' "
                             "matrix products), halved to multiply-adds.")
    spectra = [(r["dataset"], r["model"], r["seed"], r["spectra"]) for r in records if r.get("spectra")]
    if spectra:
        figures["eigenvalues"] = _eigenvalue_figure(spectra[0], run_dir)
        report.heading("Eigenvalues of the nonlocal blocks' 𝒦₁, 𝒦₂ (Figs. 7–8)")
        report.figure(figures["eigenvalues"], f"{spectra[0][1]} on {spectra[0][0]} (seed {spectra[0][2]}): real "
                                              "parts of the eigenvalues of each 1×1 convolution 𝒦 (top) and the "
                                              "eigenvalues of its symmetric part (bottom); + = fraction positive.")
    report.write(run_dir)


def _eigenvalue_figure(spectrum, run_dir) -> str:
    _, _, _, blocks = spectrum
    fig, axes = plt.subplots(2, len(blocks), figsize=(2.6 * len(blocks), 5), squeeze=False, layout="constrained")
    for column, block in enumerate(blocks):
        for row, (key, fraction) in enumerate((("real", "positive_fraction"),
                                               ("symmetric", "symmetric_positive_fraction"))):
            ax = axes[row][column]
            values = np.sort(np.asarray(block[key]))
            ax.plot(values, "o", markersize=3)
            ax.axhline(0, color="k", linewidth=0.6)
            ax.set_title(f"unit {block['unit']} K{block['stage']} {'Re' if row == 0 else 'sym'}: "
                         f"+{block[fraction]:.2f}", fontsize=8)
            ax.grid(alpha=0.3)
    return run_dir.save_figure(fig, "eigenvalues.png")

