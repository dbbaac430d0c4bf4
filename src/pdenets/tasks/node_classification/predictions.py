"""Node classification's answer on the user's graph: every node's predicted class, by the node's id in the
user's file, in ``predictions-<model>.csv`` beside the report.

The predictions come from each model's first run (split 0, initialization 0), trained again with the run's
seeds: its ``split`` column (``train``, ``val``, ``test``, ``unlabelled``) is that run's, so the test accuracy
recomputed from the file (:func:`~pdenets.experiments.predictions.prediction_accuracy`) is that run's test
accuracy. Nodes outside the graph's largest component are not in the protocol's graph and get no row; the
report names how many.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch

from ...analysis.calibration import expected_accuracy
from ...data.splits import Split
from ...data.transforms import PreparedGraph
from ...experiments.predictions import write_predictions
from .model import NodeModel

__all__ = ["NodePredictions", "node_splits", "write_node_predictions"]


@dataclass(frozen=True)
class NodePredictions:
    """One written predictions file and what the report says of it."""

    graph: str
    model: str
    file: str
    nodes: int
    unlabelled: int
    outside: Tuple[str, ...]
    test_accuracy: Optional[float]
    stored_accuracy: Optional[float]
    model_folder: str = ""
    test_nodes: int = 0
    #: the accuracy to expect on the unlabelled nodes, ``(estimate, low, high)`` (``None``: none unlabelled)
    expected_unlabelled: Optional[Tuple[float, float, float]] = None
    #: the temperature of the file's probabilities (1: as trained)
    temperature: float = 1.0


def node_splits(labels: torch.Tensor, split: Split) -> List[str]:
    """The set of every node in ``split``: ``train``, ``val``, ``test``, else ``unlabelled`` (label -1)."""
    names = ["unlabelled" if int(label) < 0 else "unused" for label in labels.tolist()]
    for name, nodes in (("train", split.train), ("val", split.val), ("test", split.test)):
        for node in torch.as_tensor(nodes).tolist():
            names[node] = name
    return names


def write_node_predictions(
    path: Path, model: NodeModel, graph: PreparedGraph, split: Split
) -> Dict[str, Any]:
    """Write ``model``'s class probabilities of every node of ``graph`` to ``path`` (replacing an earlier
    report's file); returns what the report says of it: the ``nodes`` written, the ``unlabelled`` among them
    and their ``expected_unlabelled`` accuracy (:func:`~pdenets.analysis.calibration.expected_accuracy`), the
    ``test_nodes`` and their ``test_accuracy`` in the file, its probabilities' ``temperature``."""
    probabilities = model.predict_proba(graph).cpu()
    labels = graph.y.cpu()
    names = graph.class_names or tuple(str(c) for c in range(graph.num_classes))
    known = [names[int(label)] if int(label) >= 0 else None for label in labels.tolist()]
    splits = node_splits(labels, split)
    write_predictions(
        path, graph.node_ids(), probabilities, names, labels=known, splits=splits, overwrite=True
    )
    test = torch.as_tensor(split.test)
    unlabelled = labels < 0
    return {
        "nodes": len(known),
        "unlabelled": int(unlabelled.sum()),
        "expected_unlabelled": expected_accuracy(probabilities[unlabelled]) if unlabelled.any() else None,
        "test_nodes": int(test.numel()),
        "test_accuracy": (
            float((probabilities[test].argmax(1) == labels[test]).double().mean()) if test.numel() else None
        ),
        "temperature": model.temperature,
    }
