"""Classify a user's unlabelled queries from a labelled support set: the few-shot task's answer on the user's
own data (``pdenets predict few-shot``).

The support is every labelled row of a features file (:mod:`pdenets.data.fewshot`), its classes those with at
least one row; the queries are the unlabelled rows of the same or another features file (of the same
dimension), or all rows of a file that has none. The queries are solved in tasks of at most
``max_queries_per_task`` rows each, in the file's order, every task with the whole support: a transductive
method sees the queries of its task together (its graph over support ∪ queries stays ``O(Q²)`` in memory).

Examples:
    >>> import torch
    >>> from pdenets.data.fewshot import FeatureSet
    >>> centres = torch.eye(3) * 4
    >>> support = FeatureSet(centres.repeat(2, 1), torch.arange(3).repeat(2), ("a", "b", "c"))
    >>> noise = 0.1 * torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
    >>> queries = centres.repeat_interleave(4, 0) + noise
    >>> prediction = classify_queries(support, queries)
    >>> prediction.class_names, prediction.probabilities.argmax(1).tolist()
    (('a', 'b', 'c'), [0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2])
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

import torch

from ..._checks import check_positive_int
from ...data.fewshot import FeatureSet
from ...models.fewshot import DEFAULT_METHOD, PREPROCESSING, classify, method_from_name

__all__ = ["QueryPrediction", "classify_queries", "MAX_QUERIES_PER_TASK"]

#: the most queries solved together in one task (their graph is ``Q × Q``)
MAX_QUERIES_PER_TASK = 2000


@dataclass(frozen=True)
class QueryPrediction:
    """Query class probabilities ``(U, C)`` over ``class_names`` (the support's classes with a row), and the
    method and number of tasks that made them."""

    probabilities: torch.Tensor
    class_names: Tuple[str, ...]
    method: str
    tasks: int


def classify_queries(
    support: FeatureSet,
    queries: torch.Tensor,
    *,
    method: str = DEFAULT_METHOD,
    preprocessing: str = "normalize",
    max_queries_per_task: int = MAX_QUERIES_PER_TASK,
    seed: int = 0,
    device: str = "cpu",
) -> QueryPrediction:
    """The class probabilities of every query (module docstring).

    Args:
        support: the labelled rows (their classes: every class with at least one row).
        queries: ``(U, M)`` features of the support's dimension.
        method: a registered few-shot method (default the library's default).
        preprocessing: a named preprocessing of ``pdenets run few-shot`` (default ``normalize``).
        max_queries_per_task: the most queries solved together.
        seed: the seed of the first task (task ``t`` gets ``seed + t``).
        device: where to compute.

    Raises:
        ValueError: no queries, a dimension that differs from the support's, fewer than 2 classes, an unknown
            preprocessing; an unknown method raises ``UnknownNameError`` with the closest name.
    """
    check_positive_int(max_queries_per_task, "max_queries_per_task")
    resolved = method_from_name(method)
    if preprocessing not in PREPROCESSING:
        raise ValueError(
            f"unknown preprocessing {preprocessing!r}; preprocessings: {', '.join(PREPROCESSING)}"
        )
    if queries.ndim != 2 or queries.shape[0] == 0:
        raise ValueError(f"queries must be a non-empty (U, M) matrix, got shape {tuple(queries.shape)}")
    if queries.shape[1] != support.dim:
        raise ValueError(f"the queries have {queries.shape[1]} dimensions, the support {support.dim}")
    present = torch.unique(support.labels)
    if present.numel() < 2:
        raise ValueError(f"the support has labelled rows of {present.numel()} class(es); it needs at least 2")
    labels = torch.searchsorted(present, support.labels)
    names = tuple(support.class_names[int(index)] for index in present)
    if PREPROCESSING[preprocessing].centre and support.mean_of_base() is None:
        raise ValueError(
            f"preprocessing {preprocessing!r} centres by the base classes' mean, which the support lacks"
        )
    features = support.features.to(device=device, dtype=torch.float32)
    labels = labels.to(device)
    parts = []
    for task, first in enumerate(range(0, queries.shape[0], max_queries_per_task)):
        chunk = queries[first : first + max_queries_per_task].to(device=device, dtype=torch.float32)
        base_mean = support.mean_of_base()
        parts.append(
            classify(
                features[None],
                labels[None],
                chunk[None],
                len(names),
                resolved,
                PREPROCESSING[preprocessing],
                base_mean=None if base_mean is None else base_mean.to(device),
                seeds=[seed + task],
            )[0].cpu()
        )
    return QueryPrediction(torch.cat(parts), names, resolved.name, len(parts))
