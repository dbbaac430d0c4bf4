"""The typed results of image classification: per data set and model, the spread of every test metric over
seeds; per scale and model, the cost of one forward pass.

``results.json`` is :meth:`ImageClassificationResults.to_dict`, built by the engine's rule
(:mod:`pdenets.experiments.results`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping

from ...experiments.results import FLATTEN, TaskResults
from ...models.image_networks import NetworkCost

__all__ = [
    "MetricSpread",
    "ImageCell",
    "ImageClassificationResults",
    "TestScore",
    "SegmentationScore",
    "Spectrum",
    "CifarRecord",
    "CanvasRecord",
    "SegmentationRecord",
    "record_class",
]


@dataclass(frozen=True)
class TestScore:
    """A network's accuracy on one test set (a fraction)."""

    accuracy: float = field(metadata={"kind": "fraction"})


@dataclass(frozen=True)
class SegmentationScore(TestScore):
    """A segmentation network's pixel accuracy and mean intersection over union on one test set."""

    mean_iou: float = field(metadata={"kind": "fraction"})


@dataclass(frozen=True)
class Spectrum:
    """The eigenvalues of one nonlocal block's 1×1 convolution ``𝒦`` and of its symmetric part
    (:func:`~pdenets.models.image_networks.nonlocal_spectra`)."""

    real: List[float]
    symmetric: List[float]
    unit: int = field(metadata={"read": False})
    stage: int = field(metadata={"read": False})
    imag: List[float] = field(metadata={"read": False})
    positive_fraction: float = field(metadata={"read": False})
    symmetric_positive_fraction: float = field(metadata={"read": False})


@dataclass(frozen=True)
class _ImageRecord:
    """What one run returns and the store keeps: the trainable parameters, the training curve, the seconds of
    training, each test set's loss and the nonlocal blocks' spectra; its subclass adds the test scores of its
    data set (``tests``)."""

    parameters: int
    train_curve: List[Mapping[str, Any]] = field(metadata={"read": False})
    seconds: float
    test_losses: Mapping[str, float] = field(metadata={"read": False})
    spectra: List[Spectrum]


@dataclass(frozen=True)
class CifarTests:
    """The scores on CIFAR-10's held-out training images and on its official test images."""

    held_out: TestScore = field(metadata={"stored_as": "held-out"})
    official: TestScore


@dataclass(frozen=True)
class CanvasTests:
    """The scores on the test canvases."""

    test_canvases: TestScore = field(metadata={"stored_as": "test canvases"})


@dataclass(frozen=True)
class SegmentationTests:
    """The scores of a segmentation on the test canvases."""

    test_canvases: SegmentationScore = field(metadata={"stored_as": "test canvases"})


@dataclass(frozen=True)
class CifarRecord(_ImageRecord):
    """A run on CIFAR-10."""

    tests: CifarTests


@dataclass(frozen=True)
class CanvasRecord(_ImageRecord):
    """A run on the field-of-view canvases."""

    tests: CanvasTests


@dataclass(frozen=True)
class SegmentationRecord(_ImageRecord):
    """A run of the canvas segmentation."""

    tests: SegmentationTests


def record_class(dataset: str) -> type:
    """The record dataclass of a run on ``dataset``."""
    if dataset == "cifar10":
        return CifarRecord
    return SegmentationRecord if dataset == "canvas-segmentation" else CanvasRecord


@dataclass(frozen=True)
class MetricSpread:
    """One test metric over the seeds, in percent.

    Args:
        median: the median over seeds.
        mean: the mean over seeds.
        min: the lowest seed's value.
        max: the highest seed's value.
    """

    median: float
    mean: float
    min: float
    max: float


@dataclass(frozen=True)
class ImageCell:
    """One model on one data set.

    Args:
        parameters: trainable parameters of the network.
        runs: seeds stored.
        seconds_per_run: mean wall time of one training run.
        metrics: ``"<test set> <metric>"`` (e.g. ``"held-out accuracy"``, ``"test mean_iou"``) → its spread
            over seeds; flattened beside the other fields in ``results.json``.
    """

    parameters: int
    runs: int
    seconds_per_run: float
    metrics: Dict[str, MetricSpread] = field(default_factory=dict, metadata=FLATTEN)


@dataclass(frozen=True)
class ImageClassificationResults(TaskResults):
    """The results of ``pdenets run image-classification``.

    Args:
        table: data set → model → :class:`ImageCell`.
        flops: scale (``"paper scale"``, ``"this run"``) → model → :class:`~pdenets.models.image_networks.
            NetworkCost` of one 32 × 32 RGB image.
    """

    table: Dict[str, Dict[str, ImageCell]]
    flops: Dict[str, Dict[str, NetworkCost]]
