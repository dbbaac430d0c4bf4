"""The results of ``pdenets run geodesic``: per dataset and network, weight decay and network kind, the
statistics of the runs' accuracies and scores (``results.json`` is :meth:`GeodesicResults.to_dict`).

Examples:
    >>> from pdenets.experiments.summary import Stats
    >>> scores = {name: Stats.of([1.5, 2.5]) for name in ("ots", "lsr", "lss")}
    >>> cell = GeodesicCell(3, 1, Stats.of([0.9, 0.7]), Stats.of([0.8, 0.6]), Stats.of([]), **scores)
    >>> cell.finished, round(cell.test_accuracy.mean, 3), cell.lss.std
    (2, 0.7, 0.5)
    >>> plain = GeodesicResults(table={"mnist/mlp": {"0": {"resnet": cell}}}).to_dict()
    >>> list(plain["table"]["mnist/mlp"]["0"]["resnet"])
    ['runs', 'diverged', 'train_accuracy', 'test_accuracy', 'official_accuracy', 'ots', 'lsr', 'lss']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ...experiments.results import OMIT_NONE, TaskResults
from ...experiments.summary import Stats

__all__ = [
    "GeodesicResults",
    "GeodesicCell",
    "StageScores",
    "EpochScore",
    "StageRecord",
    "RobustnessRecord",
    "AblationRecord",
    "DivergedRecord",
    "FinishedRecord",
    "CifarRecord",
    "record_class",
]


@dataclass(frozen=True)
class EpochScore:
    """One epoch of a run: the mean training loss and running accuracy, and the line-shape score of the
    tracked images (mean over stages, and per stage; ``None`` where it is not finite)."""

    epoch: int
    lss: Optional[float]
    loss: float = field(metadata={"read": False})
    train_accuracy_running: float = field(metadata={"read": False})
    lss_stages: List[Optional[float]] = field(metadata={"read": False})


@dataclass(frozen=True)
class StageRecord:
    """One stage's scores after training: OTS, LSR and LSS, its width, its blocks and the segment proportions
    of its tracks."""

    ots: float
    lsr: float
    lss: float
    width: int
    proportions: List[float]
    blocks: int = field(metadata={"read": False})


@dataclass(frozen=True)
class RobustnessCurve:
    """Accuracy and variation rates per noise level of one attack
    (:func:`~pdenets.analysis.robustness.robustness_curve`)."""

    levels: List[float]
    accuracy: List[float] = field(metadata={"kind": ["fraction"]})
    variation: List[Any] = field(metadata={"kind": "list"})
    attack: str = field(metadata={"read": False})


@dataclass(frozen=True)
class RobustnessRecord:
    """Both attacks' curves."""

    gaussian: RobustnessCurve
    fgsm: RobustnessCurve


@dataclass(frozen=True)
class AblationRecord:
    """The unit ablation of one block (:func:`~pdenets.analysis.ablation.unit_ablation`)."""

    counts: List[int]
    accuracy: List[float] = field(metadata={"kind": ["fraction"]})
    block: str
    width: int = field(metadata={"read": False})


@dataclass(frozen=True)
class ProjectionRecord:
    """The tracked test images' first stage projected on two dimensions, and their labels."""

    points: List[Any] = field(metadata={"kind": "list"})
    labels: List[int]


@dataclass(frozen=True)
class DivergedRecord:
    """What a run returns and the store keeps: its curve, whether it diverged, its seconds of training."""

    curve: List[EpochScore]
    diverged: bool
    seconds: float = field(metadata={"read": False})


@dataclass(frozen=True)
class FinishedRecord(DivergedRecord):
    """A finished run: its scores per stage and their means, its accuracies, robustness, unit ablation and
    projected tracks, and its seconds in all."""

    stages: List[StageRecord]
    lss: float
    lsr: float
    ots: float
    train_accuracy: float = field(metadata={"kind": "fraction"})
    test_accuracy: float = field(metadata={"kind": "fraction"})
    robustness: RobustnessRecord
    ablation: AblationRecord
    projection: ProjectionRecord
    seconds_total: float = field(metadata={"read": False})


@dataclass(frozen=True)
class CifarRecord(FinishedRecord):
    """A finished run on CIFAR-10: the accuracy on its official test images too."""

    official_accuracy: float = field(metadata={"kind": "fraction"})


def record_class(dataset: str, diverged: Any) -> type:
    """The record dataclass of a run on ``dataset`` (``diverged``: the stored flag; not ``False``: the run's
    fields are those of a diverged run)."""
    if diverged is not False:
        return DivergedRecord
    return CifarRecord if dataset == "cifar10" else FinishedRecord


@dataclass(frozen=True)
class StageScores:
    """The scores of one stage of a network of several stages (CIFAR-10, ``K = 4``), over the finished runs
    of a cell.

    Each statistic is over the runs; a run's value is the mean over the tracked training images.

    Args:
        ots: the optimal transport score of the stage (fraction in ``[0, 1]`` of the tracked images the stage
            sends where the optimal assignment between its input and output does).
        lsr: the line-shape ratio of the stage's tracks (``≥ 1``; 1 on straight tracks).
        lss: the line-shape score of the stage's tracks (``≥ 1``; 1 on straight tracks).
        width: the number of features of the stage's points (channels × height × width for a CNN).
    """

    ots: Stats
    lsr: Stats
    lss: Stats
    width: int


@dataclass(frozen=True)
class GeodesicCell:
    """One network kind (plain or ResNet) at one weight decay: its runs, their accuracies and scores.

    Every statistic is over the finished (not diverged) runs, one value per run (seed); with none finished,
    every statistic is NaN and its count ``0``.

    Args:
        runs: the stored runs of the cell (one per seed).
        diverged: of those, the runs whose training diverged (a non-finite loss); they have no scores.
        train_accuracy: accuracy on the training images (fraction in ``[0, 1]``).
        test_accuracy: accuracy on the test images (fraction; CIFAR-10: the last 10,000 training images,
            held out).
        official_accuracy: accuracy on the official CIFAR-10 test images (fraction; count ``0`` on MNIST).
        ots: the optimal transport score of the tracks (fraction in ``[0, 1]``), mean over the stages.
        lsr: the line-shape ratio of the tracks (``≥ 1``), mean over the stages.
        lss: the line-shape score of the tracks (``≥ 1``), mean over the stages.
        stages: the scores of each stage, first to last, for a network of several stages (``K = 4``);
            ``None`` (left out of ``results.json``) for one stage or when no run finished.
    """

    runs: int
    diverged: int
    train_accuracy: Stats
    test_accuracy: Stats
    official_accuracy: Stats
    ots: Stats
    lsr: Stats
    lss: Stats
    stages: Optional[List[StageScores]] = field(default=None, metadata=OMIT_NONE)

    @property
    def finished(self) -> int:
        """The runs that trained to the end (not diverged)."""
        return self.runs - self.diverged


@dataclass(frozen=True)
class GeodesicResults(TaskResults):
    """The geodesic study's results: one cell per dataset and network, weight decay and network kind.

    Args:
        table: ``"dataset/architecture"`` (e.g. ``"mnist/mlp"``, ``"cifar10/k4"``) → weight decay ``γ``
            written with ``:g`` (e.g. ``"0.0005"``) → network kind (``"plain"``, ``"resnet"``) → the cell, in
            the order the runs were grouped.
    """

    table: Dict[str, Dict[str, Dict[str, GeodesicCell]]]
