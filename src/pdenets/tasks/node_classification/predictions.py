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
from typing import List, Optional, Tuple

import torch

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


def node_splits(labels: torch.Tensor, split: Split) -> List[str]:
    """The set of every node in ``split``: ``train``, ``val``, ``test``, else ``unlabelled`` (label -1)."""
    names = ["unlabelled" if int(label) < 0 else "unused" for label in labels.tolist()]
    for name, nodes in (("train", split.train), ("val", split.val), ("test", split.test)):
        for node in torch.as_tensor(nodes).tolist():
            names[node] = name
    return names


def write_node_predictions(
    path: Path, model: NodeModel, graph: PreparedGraph, split: Split
) -> Tuple[int, int, Optional[float]]:
    """Write ``model``'s class probabilities of every node of ``graph`` to ``path`` (replacing an earlier
    report's file); returns the nodes written, the unlabelled among them and the test accuracy in the file."""
    probabilities = model.predict_proba(graph).cpu()
    labels = graph.y.cpu()
    names = graph.class_names or tuple(str(c) for c in range(graph.num_classes))
    known = [names[int(label)] if int(label) >= 0 else None for label in labels.tolist()]
    splits = node_splits(labels, split)
    write_predictions(
        path, graph.node_ids(), probabilities, names, labels=known, splits=splits, overwrite=True
    )
    test = torch.as_tensor(split.test)
    accuracy = (
        float((probabilities[test].argmax(1) == labels[test]).double().mean()) if test.numel() else None
    )
    return len(known), sum(label is None for label in known), accuracy
