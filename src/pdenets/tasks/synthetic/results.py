"""The results of ``pdenets run synthetic`` (``results.json``): the XOR diffusion statistics, the
classification table (set → optimizer → network → one cell) and the check against the paper's scripts.

Examples:
    >>> record = {"train_accuracy": 1.0, "test_accuracy": 0.9, "train_accuracy_at_paper_epochs": 0.8,
    ...           "test_accuracy_at_paper_epochs": 0.7, "diverged_at_epoch": None, "seconds": 2.0}
    >>> cell = ClassificationCell.of([record, {**record, "test_accuracy": 1.0, "seconds": 4.0}])
    >>> cell.runs, cell.test_accuracy.mean, cell.perfect_test_runs, cell.seconds_per_run
    (2, 0.95, 1, 3.0)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Sequence

import numpy as np

from ...analysis.diffusion_path import path_statistics
from ...experiments.results import OMIT_NONE, TaskResults
from ...experiments.summary import Stats

__all__ = [
    "XorDiffusion",
    "ClassificationCell",
    "PaperScriptCount",
    "SyntheticResults",
    "XorRecord",
    "ClassificationRecord",
    "SnapshotRecord",
    "ScriptCount",
    "PaperScriptRecord",
]


@dataclass(frozen=True)
class XorRecord:
    """What one XOR diffusion run returns and the store keeps: the distance ``L(t)`` between the classes and
    the largest disc diameter ``D(t)`` at every step, the kNN graph's edges between discs, the points at the
    reported steps (``"step_<s>"`` → ``(N, 2)``) and their labels."""

    part: str
    labels: Sequence[int]
    cross_edges: int
    distance: Sequence[float]
    diameter: Sequence[float]
    positions: Mapping[str, Any]


@dataclass(frozen=True)
class ClassificationRecord:
    """What one classification run returns and the store keeps: the accuracies after the last epoch and
    after the paper's epochs, the curves after every epoch (``None`` where a run diverged before), the
    losses, the epoch it diverged at (``None``: it did not) and the seconds."""

    part: str
    train_curve: Sequence[Optional[float]]
    test_curve: Sequence[Optional[float]]
    losses: Sequence[float] = field(metadata={"read": False})
    train_accuracy: float = field(metadata={"kind": "fraction"})
    test_accuracy: float = field(metadata={"kind": "fraction"})
    train_accuracy_at_paper_epochs: float = field(metadata={"kind": "fraction"})
    test_accuracy_at_paper_epochs: float = field(metadata={"kind": "fraction"})
    diverged_at_epoch: Optional[int]
    seconds: float


@dataclass(frozen=True)
class SnapshotRecord(ClassificationRecord):
    """A classification run that takes snapshots: the training points' features at the snapshot epochs
    (``epoch`` → ``(N, d)``), the training points and their labels too."""

    snapshots: Mapping[str, Any] = field(default_factory=dict)
    points: Sequence[Any] = field(default=(), metadata={"kind": "list"})
    labels: Sequence[int] = ()


@dataclass(frozen=True)
class ScriptCount:
    """One network of the paper's script: its correct points, the paper code's count, the seconds."""

    correct: int
    reference: int
    seconds: float


@dataclass(frozen=True)
class PaperScriptRecord:
    """What the run of the paper's scripts returns and the store keeps: each network's count."""

    part: str
    resnet: ScriptCount
    diff_resnet: ScriptCount = field(metadata={"stored_as": "diff-resnet"})


@dataclass(frozen=True)
class XorDiffusion:
    """XOR under pure diffusion (Fig. 3): the distance-diameter ratio over the XOR data seeds.

    Every mapping below is keyed ``"step_<s>"`` for each reported diffusion step ``s``
    (``xor_report_steps``).

    Args:
        L_over_D_median: the median over seeds of ``L(t)/D(t)``, the distance between the two classes
            over the largest subclass (disc) diameter.
        L_over_D_per_seed: ``str(seed)`` → that seed's ``L(t)/D(t)`` at each step.
        D_median: the median over seeds of the largest subclass diameter ``D(t)`` (in the data's units).
        L_median: the median over seeds of the distance ``L(t)`` between the classes (in the data's units).
        seeds_with_edges_between_discs: how many seeds' kNN graphs join two discs (Prop. 1 assumes none).
    """

    L_over_D_median: Dict[str, float]
    L_over_D_per_seed: Dict[str, Dict[str, float]]
    D_median: Dict[str, float]
    L_median: Dict[str, float]
    seeds_with_edges_between_discs: int

    @classmethod
    def of(cls, records: Sequence[Mapping[str, Any]], steps: Sequence[int]) -> "XorDiffusion":
        """The statistics of the XOR runs ``records`` (each with ``seed``, ``distance``, ``diameter`` and
        ``cross_edges``) at the diffusion ``steps``."""
        statistics = path_statistics({r["seed"]: (r["distance"], r["diameter"]) for r in records}, steps)
        return cls(
            L_over_D_median=statistics["L_over_D_median"],
            L_over_D_per_seed=statistics["L_over_D_per_seed"],
            D_median=statistics["D_median"],
            L_median=statistics["L_median"],
            seeds_with_edges_between_discs=int(sum(r["cross_edges"] > 0 for r in records)),
        )


@dataclass(frozen=True)
class ClassificationCell:
    """One set, optimizer and network of the classification table, over its seeds.

    Accuracies are fractions (0 to 1) of the points classified correctly; their statistics run over the
    seeds.

    Args:
        runs: the runs (seeds) in the cell.
        train_accuracy: accuracy on the training sample after the last epoch.
        test_accuracy: accuracy on the held-out test sample after the last epoch.
        test_accuracy_at_paper_epochs: held-out test accuracy after the paper's 20 steps (``paper_epochs``).
        train_accuracy_at_paper_epochs: training accuracy after the paper's 20 steps.
        perfect_train_runs: the runs with a training accuracy of 1 after the last epoch.
        perfect_test_runs: the runs with a held-out test accuracy of 1 after the last epoch.
        diverged_runs: the runs whose loss, parameters or outputs became non-finite (they keep their last
            finite parameters).
        seconds_per_run: the mean wall-clock seconds of a run's training.
    """

    runs: int
    train_accuracy: Stats
    test_accuracy: Stats
    test_accuracy_at_paper_epochs: Stats
    train_accuracy_at_paper_epochs: Stats
    perfect_train_runs: int
    perfect_test_runs: int
    diverged_runs: int
    seconds_per_run: float

    @classmethod
    def of(cls, members: Sequence[Mapping[str, Any]]) -> "ClassificationCell":
        """The cell of the classification runs ``members`` (one per seed)."""

        def stats(metric: str) -> Stats:
            return Stats.of(r[metric] for r in members)

        return cls(
            runs=len(members),
            train_accuracy=stats("train_accuracy"),
            test_accuracy=stats("test_accuracy"),
            test_accuracy_at_paper_epochs=stats("test_accuracy_at_paper_epochs"),
            train_accuracy_at_paper_epochs=stats("train_accuracy_at_paper_epochs"),
            perfect_train_runs=int(sum(r["train_accuracy"] >= 1.0 for r in members)),
            perfect_test_runs=int(sum(r["test_accuracy"] >= 1.0 for r in members)),
            diverged_runs=int(sum(r["diverged_at_epoch"] is not None for r in members)),
            seconds_per_run=float(np.mean([r["seconds"] for r in members])),
        )


@dataclass(frozen=True)
class PaperScriptCount:
    """One network on one set under the paper scripts' protocol (their data, seed and 20 SGD steps).

    Args:
        correct: the correct predictions of pdenets' network on the 1000 training points.
        reference: the count the paper's scripts print.
        seconds: wall-clock seconds of pdenets' 20 steps.
    """

    correct: int
    reference: int
    seconds: float

    @classmethod
    def of(cls, entry: Mapping[str, Any]) -> "PaperScriptCount":
        """The counts of one network in a paper-script run's record (``correct``, ``reference``,
        ``seconds``)."""
        return cls(correct=entry["correct"], reference=entry["reference"], seconds=entry["seconds"])


@dataclass(frozen=True)
class SyntheticResults(TaskResults):
    """The results of the synthetic suite: its three parts (XOR and the paper scripts only when they ran).

    Args:
        xor: XOR under pure diffusion (``None`` without XOR runs).
        classification: set → optimizer → network (``resnet``, ``diff-resnet``) → its cell, in the order
            of the runs.
        paper_script: set → network → the counts under the paper scripts' protocol (``None`` without
            that check).
    """

    xor: Optional[XorDiffusion] = field(metadata=OMIT_NONE)
    classification: Dict[str, Dict[str, Dict[str, ClassificationCell]]]
    paper_script: Optional[Dict[str, Dict[str, PaperScriptCount]]] = field(metadata=OMIT_NONE)
