"""The results of ``pdenets run node-classification``: test accuracy per graph and model (Table 1), per
graph, model and depth (the depth study), and the facts of each graph (``results.json`` is
:meth:`NodeClassificationResults.to_dict`).

Examples:
    >>> cell = AccuracyCell(80.0, 2.0, 2, 1.5, 60.0, paper_mean=82.1, paper_std=1.1)
    >>> results = NodeClassificationResults(table={"cora": {"diff-resnet": cell}}, depth={}, graphs={})
    >>> plain = results.to_dict()
    >>> plain["table"]["cora"]["diff-resnet"]  # doctest: +NORMALIZE_WHITESPACE
    {'mean': 80.0, 'std': 2.0, 'runs': 2, 'seconds_per_run': 1.5, 'epochs_mean': 60.0, 'paper_mean': 82.1,
     'paper_std': 1.1}
    >>> from pdenets.experiments.results import results_to_dict
    >>> list(results_to_dict(AccuracyCell(75.0, 0.0, 1, 2.0, 40.0)))  # a depth-study cell: no paper value
    ['mean', 'std', 'runs', 'seconds_per_run', 'epochs_mean']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Optional

from ...analysis.calibration import CalibrationSummary
from ...experiments.results import OMIT_NONE, TaskResults

__all__ = ["NodeClassificationResults", "AccuracyCell", "GraphFacts", "NodeRecord"]


@dataclass(frozen=True)
class NodeRecord:
    """What one run returns and the store keeps: the test ``accuracy`` (a fraction), the validation and test
    losses, the epochs trained and the best one, the epoch it diverged at (``None``: it did not) and the
    seconds from building the model to the test accuracy, and its calibration. The summary reads
    ``accuracy``, ``epochs`` and ``seconds``; the calibration is read where a record holds it, the others are
    stored, not read (a record stored before them still reports)."""

    accuracy: float = field(metadata={"kind": "fraction"})
    val_accuracy: float = field(metadata={"read": False})
    val_loss: float = field(metadata={"read": False})
    test_loss: float = field(metadata={"read": False})
    epochs: int
    best_epoch: int = field(metadata={"read": False})
    diverged_at_epoch: Optional[int] = field(metadata={"read": False})
    seconds: float
    #: the calibration on the test nodes, as trained and with the temperature fitted on the validation nodes
    #: (:func:`~pdenets.analysis.calibration.held_out_calibration`); absent from a record stored before it
    temperature: Optional[float] = field(default=None, metadata={"read": False})
    ece: Optional[float] = field(default=None, metadata={"read": False})
    calibrated_ece: Optional[float] = field(default=None, metadata={"read": False})
    reliability: Optional[Dict[str, Any]] = field(default=None, metadata={"read": False})
    calibrated_reliability: Optional[Dict[str, Any]] = field(default=None, metadata={"read": False})


@dataclass(frozen=True)
class AccuracyCell:
    """The runs of one model on one graph (at one depth in the depth study): test accuracy, time, epochs.

    The statistics are over the cell's runs (splits × initializations); a run without an accuracy is left
    out of ``mean`` and ``std``, which are NaN when no run has one.

    Args:
        mean: mean test accuracy (percent).
        std: population standard deviation of the test accuracy (percentage points).
        runs: the stored runs of the cell.
        seconds_per_run: mean wall-clock seconds of a run, from building the model to the test accuracy.
        epochs_mean: mean number of epochs a run trained (early stopping included).
        paper_mean: the paper's mean test accuracy (percent, Table 1); ``None`` (left out of
            ``results.json``) in the depth study and where the paper has no value.
        paper_std: the paper's standard deviation (percentage points); ``None`` (left out) as
            ``paper_mean``, or where the paper gives no standard deviation.
    """

    mean: float
    std: float
    runs: int
    seconds_per_run: float
    epochs_mean: float
    paper_mean: Optional[float] = field(default=None, metadata=OMIT_NONE)
    paper_std: Optional[float] = field(default=None, metadata=OMIT_NONE)


@dataclass(frozen=True)
class GraphFacts:
    """The sizes of a prepared graph (largest connected component) and the stable step sizes of diffusion.

    Args:
        nodes: nodes of the graph.
        edges: undirected edges (each counted once, without self-loops).
        features: input features per node.
        classes: node classes.
        gershgorin_bound: the largest stable step size ``γ`` of explicit diffusion with the graph's weights,
            from Gershgorin's bound (``1 / max_i Σ_{j≠i} w_ij``).
        spectral_bound: the same from the spectrum (``2 / λ_max(L)``); at least the Gershgorin bound.
        feature_transform: how the features entered the models (``bag-of-words``, ``standardize``,
            ``none``).
    """

    nodes: int
    edges: int
    features: int
    classes: int
    gershgorin_bound: float
    spectral_bound: float
    feature_transform: str = "bag-of-words"


@dataclass(frozen=True)
class NodeClassificationResults(TaskResults):
    """The node-classification results: the protocol's table, the depth study, the graphs.

    Args:
        table: the protocol (Table 1): graph → model → cell, the paper's value beside ours where it has one.
        depth: the depth study (Fig. 5): graph → model → depth (layers, as text, e.g. ``"8"``) → cell;
            empty without a depth study.
        graphs: graph → its facts, for every graph the task prepared.
        calibration: the protocol's calibration on the test nodes, graph → model → its summary (as trained,
            and with a temperature fitted on each run's validation nodes); a model whose records hold none is
            left out.
    """

    table: Dict[str, Dict[str, AccuracyCell]]
    depth: Dict[str, Dict[str, Dict[str, AccuracyCell]]]
    graphs: Dict[str, GraphFacts]
    calibration: Dict[str, Dict[str, CalibrationSummary]] = field(default_factory=dict)
