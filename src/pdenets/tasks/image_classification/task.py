"""Image classification and segmentation with Hamiltonian CNNs and nonlocal PIDE blocks (Bohn, Griebel &
Kannan).

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
from typing import Any, ClassVar, Dict, List, Mapping, Optional, Protocol, Union, cast

import numpy as np
import torch

from ..._cache import process_cache
from ...data.image_benchmarks import CanvasSettings, CifarSettings, load_image_benchmark
from ...data.vision import load_cifar10, load_mnist, pad_crop_flip
from ...experiments.context import RunContext
from ...experiments.records import record_from_dict
from ...experiments.summary import Stats, group_records
from ...experiments.task import Task, register_task
from ...models.image_networks import (
    PAPER_ARCHITECTURE,
    ImageArchitecture,
    NetworkCost,
    build_image_model,
    count_flops,
    flops_table,
    model_architecture,
    nonlocal_spectra,
)
from ...models.registry import model_entry
from ...models.training import evaluate_classifier, mean_iou, train_epoch
from . import report as image_report
from .config import ImageClassificationConfig
from .report import PAPER_TABLE1
from .results import ImageCell, ImageClassificationResults, MetricSpread, record_class

__all__ = [
    "ImageClassificationConfig",
    "ImageClassificationTask",
    "ImageJob",
    "PAPER_TABLE1",
    "count_flops",
    "paper_learning_rate",
]


def paper_learning_rate(step: int, steps_per_epoch: int, epochs: int, base: float = 0.1) -> float:
    """The reference code's schedule scaled to ``epochs``: 1 warm-up epoch at ``base/10``, then ``base``,
    ×0.1 at 40 %, 60 %, 80 % and 90 % of the epochs (80/120/160/180 of 200)."""
    epoch = step / steps_per_epoch
    if epoch < 1 and epochs > 5:
        return base / 10
    fractions = (0.4, 0.6, 0.8, 0.9)
    return base * 0.1 ** sum(epoch >= f * epochs for f in fractions)


@dataclass(frozen=True)
class ImageTraining:
    """The optimisation settings of one job: SGD, its L2 weight, the smoothness weight (Hamiltonian
    networks)."""

    epochs: int
    batch_size: int
    lr: float
    momentum: float
    l2: float
    smoothness: Optional[float] = None


@dataclass(frozen=True, kw_only=True)
class ImageJob:
    """One network (at the settings it uses) trained with one seed on one data set."""

    dataset: str
    model: str
    seed: int
    architecture: ImageArchitecture
    training: ImageTraining
    data: Union[CifarSettings, CanvasSettings]
    #: bfloat16 autocast for the forward passes (``--amp``); off keeps the keys stored before it existed
    amp: bool = field(default=False, metadata={"key": "unless-default"})
    #: the device left the spec for the run's context; the keys of the runs stored on the CPU stay
    stored_constants: ClassVar[Mapping[str, Any]] = {"device": "cpu"}


def _architecture(config: ImageClassificationConfig) -> ImageArchitecture:
    """The network settings of a config (each model's job key holds those it uses; the FLOPs table all)."""
    return ImageArchitecture(
        units=tuple(config.units),
        widths=tuple(config.widths),
        step_size=config.step_size,
        lam=config.lam,
        s=config.s,
        subsample=config.subsample,
        stages=config.stages,
        resnet_depth=config.resnet_depth,
        resnet_widths=tuple(config.resnet_widths),
    )


def _training(config: ImageClassificationConfig, model: str) -> ImageTraining:
    """The optimisation settings of one model's jobs, by the architecture settings it declares.

    The networks built with a step size ``h`` (the Hamiltonian networks and their nonlocal variants) take
    ``l2`` and the smoothness penalty ``‖𝒦_{j+1} − 𝒦_j‖² / h`` (eq. 4.8); the others — the ResNet baselines,
    ResNet-44 and PreResNet-20, He et al.'s CIFAR networks — take ``l2_resnet`` and no smoothness."""
    hamiltonian = "step_size" in model_entry(model).settings
    return ImageTraining(
        config.epochs,
        config.batch_size,
        config.lr,
        config.momentum,
        l2=config.l2 if hamiltonian else config.l2_resnet,
        smoothness=config.smoothness if hamiltonian else None,
    )


def _data(config: ImageClassificationConfig, dataset: str) -> Union[CifarSettings, CanvasSettings]:
    """The settings data set ``dataset`` is read with."""
    if dataset == "cifar10":
        return CifarSettings(config.train_limit, config.test_limit)
    digits = None if config.canvas_digits is None else tuple(sorted(set(config.canvas_digits)))
    return CanvasSettings(
        canvas_train=config.canvas_train,
        canvas_test=config.canvas_test,
        canvas_size=config.canvas_size,
        min_distance=config.min_distance,
        canvas_label=config.canvas_label,
        canvas_digits=digits,
    )


_benchmark = process_cache(maxsize=2)(load_image_benchmark)  # loaded once per worker process


class _Regularized(Protocol):
    """The penalties of an image network (``smoothness_penalty``: the networks with a step size; asked only
    when the smoothness weight is set)."""

    def l2_penalty(self) -> torch.Tensor: ...

    def smoothness_penalty(self) -> torch.Tensor: ...


def run_image_job(spec: ImageJob, context: RunContext = RunContext()) -> Any:
    """Train one network on one data set in ``context`` (under ``torchrun`` each process's own device, the
    network wrapped in DDP); its test accuracies (and mean IoU), curve and nonlocal spectra."""
    training = spec.training
    benchmark = _benchmark(spec.dataset, spec.data, context.data_dir)
    device, processes = context.device, context.distributed
    torch.manual_seed(spec.seed)
    head = "pool" if spec.dataset == "cifar10" else "global"  # on the canvases every network pools globally
    model = build_image_model(
        spec.model,
        spec.architecture,
        channels=benchmark.channels,
        classes=benchmark.classes,
        size=benchmark.size,
        segmentation=benchmark.segmentation,
        head=head,
    ).to(device)
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)
    trained = processes.wrap(model)
    optimizer = torch.optim.SGD(trained.parameters(), lr=training.lr, momentum=training.momentum)
    train = benchmark.train
    steps_per_epoch = -(-len(train) // training.batch_size)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: paper_learning_rate(step, steps_per_epoch, training.epochs, 1.0)
    )

    # the regularizers are methods of the network, which nn.Module's attribute typing does not know
    regularized = cast(_Regularized, model)

    def penalty() -> torch.Tensor:
        total = training.l2 * regularized.l2_penalty()
        if training.smoothness:
            total = total + training.smoothness * regularized.smoothness_penalty()
        return total

    generator = torch.Generator().manual_seed(spec.seed)
    augment = (lambda x, g: pad_crop_flip(x, g)) if benchmark.augment else None
    curve = []
    start = time.perf_counter()
    for epoch in range(training.epochs):
        metrics = train_epoch(
            trained,
            optimizer,
            train.images,
            train.labels,
            batch_size=training.batch_size,
            generator=generator,
            augment=augment,
            penalty=penalty,
            scheduler=scheduler,
            device=device,
            shard=processes.shard,
            reduce=processes.reduce,
            amp=spec.amp,
        )
        curve.append(metrics)
    seconds = time.perf_counter() - start
    record: Dict[str, Any] = {
        "parameters": parameters,
        "train_curve": curve,
        "seconds": seconds,
        "tests": {},
        "test_losses": {},
    }
    for name, test in benchmark.tests.items():
        evaluation = evaluate_classifier(model, test.images, test.labels, device=device, amp=spec.amp)
        entry = {"accuracy": evaluation["accuracy"]}
        record["test_losses"][name] = evaluation["loss"]
        if benchmark.segmentation:
            entry["mean_iou"] = mean_iou(evaluation["predictions"], test.labels, benchmark.classes)
        record["tests"][name] = entry
    record["spectra"] = nonlocal_spectra(model)
    return record_from_dict(record_class(spec.dataset), record)


# ----------------------------------------------------------------------------------------
# the task


@register_task
class ImageClassificationTask(Task[ImageClassificationConfig]):
    name = "image-classification"
    description = "Hamiltonian CNNs with nonlocal PIDE blocks: CIFAR-10, a field-of-view task, segmentation"
    config_class = ImageClassificationConfig
    shortcuts = {"dataset": "datasets", "model": "models"}
    columns = {"dataset": "TEXT", "model": "TEXT", "seed": "INTEGER"}

    def record_type_of(self, spec: ImageJob, record: Mapping[str, Any]) -> type:
        return record_class(spec.dataset)

    @classmethod
    def quick_config(cls) -> ImageClassificationConfig:
        """Tiny networks, 1,000 CIFAR images, 2 epochs, one seed."""
        return ImageClassificationConfig(
            units=[1, 1, 1],
            widths=[8, 16, 28],
            resnet_depth=8,
            resnet_widths=[8, 16, 32],
            epochs=2,
            seeds=[0],
            train_limit=1000,
            models=["resnet-44", "hamiltonian-74", "hamiltonian-74-diffusion"],
        )

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
        return [
            ImageJob(
                dataset=dataset,
                model=model,
                seed=seed,
                architecture=model_architecture(model, architecture),
                training=_training(config, model),
                data=_data(config, dataset),
                amp=config.amp,
            )
            for dataset in config.datasets
            for model in config.models
            for seed in config.seeds
        ]

    @staticmethod
    def run_job(spec: ImageJob, context: RunContext) -> Any:
        return run_image_job(spec, context)

    def progress_note(self, record: Dict[str, Any]) -> str:
        first = next(iter(record["tests"].values()))
        return f"acc={100 * first['accuracy']:.1f}%"

    def summarize(self, records: List[Dict[str, Any]]) -> ImageClassificationResults:
        table: Dict[str, Dict[str, ImageCell]] = {}
        for (dataset, model), members in group_records(records, by=("dataset", "model")).items():
            metrics = {}
            for test in members[0]["tests"]:
                for metric in members[0]["tests"][test]:
                    stats = Stats.of((100 * m["tests"][test][metric] for m in members))
                    metrics[f"{test} {metric}"] = MetricSpread(stats.median, stats.mean, stats.min, stats.max)
            table.setdefault(dataset, {})[model] = ImageCell(
                members[0]["parameters"],
                len(members),
                float(np.mean([m["seconds"] for m in members])),
                metrics,
            )
        return ImageClassificationResults(table=table, flops=self.flops())

    def flops(self) -> Dict[str, Dict[str, NetworkCost]]:
        """FLOPs (multiply-adds) of the paper-scale networks at 32×32 and of the configured ones."""
        scales = {"paper scale": PAPER_ARCHITECTURE, "this run": _architecture(self.config)}
        return flops_table(self.config.flops_models, scales)

    def report(self, results: ImageClassificationResults, records: List[Dict[str, Any]], run_dir) -> None:
        report = self.new_report(results, "pdenets — Hamiltonian CNNs with nonlocal PIDE blocks")
        image_report.add_sections(report, self.config, results, records, run_dir)
        self.write_report(report, run_dir)
