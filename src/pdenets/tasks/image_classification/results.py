"""The typed results of image classification: per data set and model, the spread of every test metric over
seeds; per scale and model, the cost of one forward pass.

``results.json`` is :meth:`ImageClassificationResults.to_dict`, built by the engine's rule
(:mod:`pdenets.experiments.results`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict

from ...experiments.results import FLATTEN, TaskResults
from ...models.image_networks import NetworkCost

__all__ = ["MetricSpread", "ImageCell", "ImageClassificationResults"]


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
