"""The results of ``pdenets run few-shot``: typed summaries of the episodes, the sweeps, the official runs and
the paper's 1-shot claim; :meth:`FewShotResults.to_dict` is ``results.json``.

Every group of episode jobs (one study, dataset, ways, shots, method, studied value and query-set shape) is
summarized by an :class:`EpisodeSummary`: the accuracy in percent, mean and 95 % half-width over its tasks,
the time per task and, on open-set query sets, how the open-set queries were told apart. The ablation keys
them by shape, dataset, ``"W-way S-shot"`` and method; the sweeps by their studied value.

Examples:
    >>> from pdenets.experiments.results import results_to_dict
    >>> summary = EpisodeSummary(mean=90.0, ci95=1.5, tasks=100, seconds_per_task=0.002,
    ...                          seconds_per_1000_tasks=2.0)
    >>> results_to_dict(SweepPoint(4, summary))  # doctest: +NORMALIZE_WHITESPACE
    {'value': 4, 'mean': 90.0, 'ci95': 1.5, 'tasks': 100, 'seconds_per_task': 0.002,
     'seconds_per_1000_tasks': 2.0}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional

from ...experiments.results import FLATTEN, OMIT_NONE, TaskResults
from ...models.fewshot import METHOD_CLASSES

__all__ = [
    "EpisodeSummary",
    "QueryShapeFacts",
    "SweepPoint",
    "TimingPoint",
    "OfficialRunsErrors",
    "ClearWin",
    "MethodSummaries",
    "AblationTable",
    "FewShotResults",
    "EpisodeRecord",
    "OpenSetRecord",
    "PictureRecord",
    "OfficialRunsRecord",
]


@dataclass(frozen=True)
class EpisodeRecord:
    """What one episode job returns and the store keeps: each task's accuracy (a fraction) and the mean log
    likelihood of its queries' labels, the seconds of the job and per task, and how many of its query sets
    were solved, unbalanced and without a query of some class."""

    accuracies: List[float] = field(metadata={"kind": ["fraction"]})
    log_likelihoods: List[float] = field(metadata={"read": False})
    seconds: float = field(metadata={"read": False})
    seconds_per_task: float
    query_sets: int
    unbalanced_query_sets: int
    empty_class_query_sets: int


@dataclass(frozen=True)
class OpenSetRecord(EpisodeRecord):
    """An episode job whose query sets hold open classes: per task the AUROC of the open queries (``None``
    where a task has none), and the shares of open and known queries rejected."""

    open_auroc: List[Optional[float]] = field(default_factory=list)
    open_rejected: List[float] = field(default_factory=list)
    known_rejected: List[float] = field(default_factory=list)


@dataclass(frozen=True)
class PictureRecord:
    """The picture of one task's features before and after the diffusion (two principal components of each
    point), the points' labels and how many of them are the support."""

    before: List[List[float]] = field(metadata={"kind": "list"})
    after: List[List[float]] = field(metadata={"kind": "list"})
    labels: List[int]
    support: int


@dataclass(frozen=True)
class OfficialRunsRecord:
    """The official Omniglot runs: each run's error rate and their mean (fractions)."""

    errors: List[float] = field(metadata={"kind": ["fraction"]})
    error_rate: float = field(metadata={"kind": "fraction"})


def _assumes_balance(method: str) -> bool:
    """Whether the registered method ``method`` assumes balanced queries (an unknown name assumes nothing)."""
    return method in METHOD_CLASSES and METHOD_CLASSES[method].assumes_balanced_queries


@dataclass(frozen=True)
class EpisodeSummary:
    """The tasks of one group of episode jobs: accuracy, time and, on open-set query sets, rejection.

    Args:
        mean: mean accuracy over the tasks, in percent (of the queries of the support's classes).
        ci95: half-width of the accuracy's 95 % confidence interval over the tasks (``1.96 σ/√n``), in
            percentage points; NaN for a single task.
        tasks: the tasks summarized.
        seconds_per_task: seconds of the method alone per task (batched), mean over the jobs.
        seconds_per_1000_tasks: the same for 1,000 tasks.
        open_auroc: open-set query sets only: area under the ROC curve of the top probability as a score
            that a query belongs to a support class, mean over the tasks (a fraction; 0.5: it tells nothing).
        open_rejected: open-set query sets only: share of the open-set queries whose top probability stays
            below 1/2, mean over the tasks (a fraction).
        known_rejected: open-set query sets only: share of the support classes' queries whose top
            probability stays below 1/2, mean over the tasks (a fraction).
        unbalanced_share: share of the query sets drawn (as solved) that break a balance assumption:
            unequal counts over the support's classes, or open-set queries.
        empty_class_share: share of the query sets drawn in which a support class got no query.
    """

    mean: float
    ci95: float
    tasks: int
    seconds_per_task: float
    seconds_per_1000_tasks: float
    open_auroc: Optional[float] = field(default=None, metadata=OMIT_NONE)
    open_rejected: Optional[float] = field(default=None, metadata=OMIT_NONE)
    known_rejected: Optional[float] = field(default=None, metadata=OMIT_NONE)
    unbalanced_share: Optional[float] = field(default=None, metadata=OMIT_NONE)
    empty_class_share: Optional[float] = field(default=None, metadata=OMIT_NONE)

    def breaks_assumption_of(self, method: str) -> bool:
        """Whether ``method`` assumes balanced queries and some query set of these tasks was not balanced
        (as drawn: :attr:`unbalanced_share` above 0).

        Examples:
            >>> drawn = EpisodeSummary(90.0, 1.0, 10, 0.01, 10.0, unbalanced_share=0.0)
            >>> drawn.breaks_assumption_of("pt-map"), drawn.breaks_assumption_of("prototype")
            (False, False)
            >>> EpisodeSummary(90.0, 1.0, 10, 0.01, 10.0, unbalanced_share=0.1).breaks_assumption_of("pt-map")
            True
        """
        return bool(self.unbalanced_share) and _assumes_balance(method)


@dataclass(frozen=True)
class QueryShapeFacts:
    """The query sets of one ablation table (:class:`~pdenets.data.fewshot.QueryShape` and the query mode).

    Args:
        queries: queries per class (their mean under Dirichlet proportions).
        distribution: how the queries spread over the classes: ``balanced`` or ``dirichlet:A``.
        open_set: the classes absent from the support that add queries.
        query_mode: ``together`` (the query set solved at once) or ``one-at-a-time`` (every query its own
            task).
        balanced: every class of the task was asked for as many queries, none from elsewhere, solved
            together: the query sets every method was made for (as requested; whether the drawn sets are is
            :meth:`EpisodeSummary.breaks_assumption_of`'s question).
    """

    queries: int
    distribution: str
    open_set: int
    query_mode: str
    balanced: bool


@dataclass(frozen=True)
class SweepPoint:
    """One point of a sensitivity sweep (internal convection-diffusion, first dataset, 5-way 1-shot).

    Args:
        value: the studied value: ``n_top`` in paper units, the total strength ``rγ`` or the steps ``r``.
        episodes: the point's tasks (its keys sit beside ``value`` in the plain form).
    """

    value: float
    episodes: EpisodeSummary = field(metadata=FLATTEN)


@dataclass(frozen=True)
class TimingPoint:
    """One point of the timing study (internal convection-diffusion at ``rγ`` fixed, 5-way 1-shot).

    Args:
        layers: the diffusion layers ``r``.
        episodes: the point's tasks and their time (its keys sit beside ``layers`` in the plain form).
    """

    layers: int
    episodes: EpisodeSummary = field(metadata=FLATTEN)


@dataclass(frozen=True)
class OfficialRunsErrors:
    """One method on the 20 official Omniglot one-shot runs of Lake et al. (2015).

    Args:
        error_rate: error rate in percent, mean over the runs' test samples.
        per_run: error rate of each run, in percent.
    """

    error_rate: float
    per_run: List[float]


@dataclass(frozen=True)
class ClearWin:
    """How far one method's mean accuracy lies above another's in a table cell.

    Args:
        difference: the first method's mean minus the other's, in percentage points.
        clearly: the difference exceeds the sum of the two 95 % half-widths.
    """

    difference: float
    clearly: bool


#: method → its summary: one cell (``"5-way 1-shot"``) of an ablation table
MethodSummaries = Dict[str, EpisodeSummary]
#: ``"W-way S-shot"`` → method → summary: one dataset's ablation table
AblationTable = Dict[str, MethodSummaries]


@dataclass(frozen=True)
class FewShotResults(TaskResults):
    """The results of ``pdenets run few-shot`` (``results.json``: these fields in this order, then the run's).

    Args:
        ablation: query-set shape label (e.g. ``"balanced, 15 queries per class"``) → dataset →
            ``"W-way S-shot"`` → method → :class:`EpisodeSummary`; empty without the ablation study.
        shapes: shape label → :class:`QueryShapeFacts`, one per table of ``ablation``.
        sensitivity: sweep (``n_top``, ``strength``, ``steps``) → its points, in the order run.
        timing: the timing study's points, in the order run.
        official_runs: method → :class:`OfficialRunsErrors` on the official Omniglot runs.
        picture_shots: the shots of each task of the before/after picture, in the order drawn; ``None``
            (left out) without the picture study.
        claim: the paper's 1-shot claim on every 1-shot cell of a balanced table that has internal
            convection-diffusion: ``"dataset W-way 1-shot"`` (with ``" (shape)"`` after the first table) →
            other method (convection, external, prototype, those run) → :class:`ClearWin` of internal over it.
    """

    ablation: Dict[str, Dict[str, AblationTable]]
    shapes: Dict[str, QueryShapeFacts]
    sensitivity: Dict[str, List[SweepPoint]]
    timing: List[TimingPoint]
    official_runs: Dict[str, OfficialRunsErrors]
    picture_shots: Optional[List[int]] = field(metadata=OMIT_NONE)
    claim: Dict[str, Dict[str, ClearWin]]
