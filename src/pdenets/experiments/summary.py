"""Summaries of many runs: statistics per group, ``mean ± std`` text, the paper's numbers beside ours.

Examples:
    >>> records = [{"model": "a", "acc": 0.8}, {"model": "a", "acc": 0.9}, {"model": "b", "acc": 0.5}]
    >>> table = group_summary(records, by="model", metric="acc", scale=100)
    >>> table["a"].format(1), table["b"].count
    ('85.0 ± 5.0', 1)
    >>> PaperValue(82.1, 1.1).format(1)
    '82.1 ± 1.1'
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import (
    Any,
    Callable,
    Dict,
    Hashable,
    Iterable,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Union,
    overload,
)

import numpy as np

__all__ = ["Stats", "group_records", "group_summary", "format_mean_std", "PaperValue", "paper_and_ours"]


def format_mean_std(
    mean: Optional[float], std: Optional[float] = None, digits: int = 3, *, count: Optional[int] = None
) -> str:
    """``"0.962 ± 0.034"`` (``"—"`` when there is no value; ``(n=…)`` appended if ``count`` is given).

    A ``None`` or NaN ``std`` is left out, so a single value prints without ``±``.

    Args:
        mean: the value; ``None`` or NaN gives ``"—"``.
        std: its standard deviation (default: ``None``).
        digits: decimals of both numbers (default: ``3``).
        count: the number of runs, appended as ``(n=count)`` (default: ``None``).

    Returns:
        The formatted text.

    Examples:
        >>> format_mean_std(0.96213, 0.0341)
        '0.962 ± 0.034'
        >>> format_mean_std(81.34, 1.5, 1, count=10), format_mean_std(0.5), format_mean_std(None)
        ('81.3 ± 1.5 (n=10)', '0.500', '—')
    """
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    text = f"{mean:.{digits}f}"
    if std is not None and not (isinstance(std, float) and math.isnan(std)):
        text += f" ± {std:.{digits}f}"
    if count is not None:
        text += f" (n={count})"
    return text


@dataclass(frozen=True)
class Stats:
    """Mean, population standard deviation, extremes, median and count of the finite values.

    Build it with :meth:`Stats.of`, which leaves out ``None``, NaN and inf (e.g. diverged
    runs); with no finite value every statistic is NaN and ``count`` is ``0``.

    Args:
        mean: the mean.
        std: the population standard deviation (``ddof=0``).
        min: the smallest value.
        max: the largest value.
        median: the median.
        count: how many finite values the statistics cover.

    Examples:
        >>> stats = Stats.of([0.8, None, 0.9, float("nan")], scale=100)
        >>> stats.count, stats.format(1), stats.format(1, count=True)
        (2, '85.0 ± 5.0', '85.0 ± 5.0 (n=2)')
        >>> Stats.of([]).format()
        '—'
    """

    mean: float
    std: float
    min: float
    max: float
    median: float
    count: int

    @classmethod
    def of(cls, values: Iterable[Optional[float]], *, scale: float = 1.0) -> "Stats":
        """Statistics of the finite ``values`` (``None``, NaN and inf left out), each multiplied by ``scale``.

        Args:
            values: the numbers; ``None`` counts as missing.
            scale: factor applied first, e.g. ``100`` for percentages (default: ``1.0``).
        """
        array = np.asarray([np.nan if v is None else v for v in values], dtype=float) * scale
        finite = array[np.isfinite(array)]
        if finite.size == 0:
            return cls(math.nan, math.nan, math.nan, math.nan, math.nan, 0)
        return cls(
            float(np.mean(finite)),
            float(np.std(finite)),
            float(np.min(finite)),
            float(np.max(finite)),
            float(np.median(finite)),
            int(finite.size),
        )

    def format(self, digits: int = 3, *, count: bool = False) -> str:
        """``mean ± std`` with ``digits`` decimals; the mean alone for one value (no spread is measured),
        ``"—"`` without values (see :func:`format_mean_std`).

        Args:
            digits: decimals (default: ``3``).
            count: append ``(n=count)`` (default: ``False``).

        Examples:
            >>> Stats.of([0.5, 0.7]).format(), Stats.of([0.5]).format(), Stats.of([]).format()
            ('0.600 ± 0.100', '0.500', '—')
        """
        return format_mean_std(
            self.mean if self.count else None,
            self.std if self.count > 1 else None,
            digits,
            count=self.count if count else None,
        )

    def as_dict(self) -> Dict[str, float]:
        return asdict(self)


Key = Union[Hashable, Tuple[Hashable, ...]]


# one ``by`` name: the keys are that field's values; several: tuples of them (unpackable by the caller)
@overload
def group_records(
    records: Sequence[Mapping[str, Any]],
    *,
    by: str,
    where: Optional[Callable[[Mapping[str, Any]], bool]] = None,
) -> Dict[Any, List[Mapping[str, Any]]]: ...


@overload
def group_records(
    records: Sequence[Mapping[str, Any]],
    *,
    by: Sequence[str],
    where: Optional[Callable[[Mapping[str, Any]], bool]] = None,
) -> Dict[Tuple[Any, ...], List[Mapping[str, Any]]]: ...


def group_records(
    records: Sequence[Mapping[str, Any]],
    *,
    by: Union[str, Sequence[str]],
    where: Optional[Callable[[Mapping[str, Any]], bool]] = None,
) -> Dict[Any, List[Mapping[str, Any]]]:
    """Records grouped by the value(s) of the ``by`` field(s), groups in order of first appearance.

    With one ``by`` name the keys are its values; with several, tuples. ``where`` filters first.
    """
    names = (by,) if isinstance(by, str) else tuple(by)
    groups: Dict[Any, List[Mapping[str, Any]]] = {}
    for record in records:
        if where is not None and not where(record):
            continue
        key = tuple(record.get(name) for name in names)
        groups.setdefault(key[0] if isinstance(by, str) else key, []).append(record)
    return groups


def group_summary(
    records: Sequence[Mapping[str, Any]],
    *,
    by: Union[str, Sequence[str]],
    metric: str,
    scale: float = 1.0,
    where: Optional[Callable[[Mapping[str, Any]], bool]] = None,
) -> Dict[Key, Stats]:
    """:class:`Stats` of ``metric`` per group of records sharing the ``by`` field(s) (see
    :func:`group_records`).

    Records without the metric (e.g. diverged runs) are left out of the statistics.

    Args:
        records: the runs, one mapping each (e.g. :meth:`~pdenets.experiments.store.StoredRun.flat`).
        by: the field, or fields, whose values define a group.
        metric: the field summarized.
        scale: factor applied to every value, e.g. ``100`` for percentages (default: ``1.0``).
        where: a filter applied to the records first (default: ``None``, all records).

    Returns:
        Group key → :class:`Stats`, groups in order of first appearance; with several ``by``
        fields the keys are tuples.

    Examples:
        >>> records = [{"model": "a", "acc": 0.8}, {"model": "a", "acc": None}, {"model": "b", "acc": 0.5}]
        >>> {key: stats.count for key, stats in group_summary(records, by="model", metric="acc").items()}
        {'a': 1, 'b': 1}
    """
    return {
        key: Stats.of((r.get(metric) for r in members), scale=scale)
        for key, members in group_records(records, by=by, where=where).items()
    }


@dataclass(frozen=True)
class PaperValue:
    """A number a paper reports (mean, optional std), with where it comes from.

    Args:
        mean: the reported mean.
        std: the reported standard deviation, if any (default: ``None``).
        source: where it is reported, e.g. ``"Table 1"`` (default: ``""``).

    Examples:
        >>> PaperValue(82.1, 1.1, "Table 1").format(1), PaperValue(82.1).format(1)
        ('82.1 ± 1.1', '82.1')
    """

    mean: float
    std: Optional[float] = None
    source: str = ""

    def format(self, digits: int = 1) -> str:
        """``mean ± std`` with ``digits`` decimals (default: ``1``; see :func:`format_mean_std`).

        Args:
            digits: decimals (default: ``1``).
        """
        return format_mean_std(self.mean, self.std, digits)


def paper_and_ours(
    ours: Optional[Union[Stats, Mapping[str, Any]]],
    paper: Optional[PaperValue],
    digits: int = 1,
) -> Tuple[str, str, str]:
    """Three table cells: ours (``mean ± std (n=…)``), the paper's, and ours minus the paper's.

    ``ours`` is a :class:`Stats` or a results mapping with ``mean``, ``std`` and ``runs``
    (or ``count``); ``None`` when nothing was measured.

    Args:
        ours: our measurement, or ``None``; a count of ``0`` or a ``None`` mean also counts as
            not measured.
        paper: the paper's number, or ``None``.
        digits: decimals of every cell (default: ``1``).

    Returns:
        ``(ours, paper, difference)`` as text; a cell is ``"—"`` when its input is missing,
        and the signed difference needs both.

    Examples:
        >>> paper_and_ours({"mean": 82.3, "std": 1.2, "runs": 20}, PaperValue(82.1, 1.1))
        ('82.3 ± 1.2 (n=20)', '82.1 ± 1.1', '+0.2')
        >>> paper_and_ours(None, PaperValue(81.5))
        ('—', '81.5', '—')
    """
    if isinstance(ours, Stats):
        ours = {"mean": ours.mean, "std": ours.std, "count": ours.count}
    count = None if ours is None else ours.get("runs", ours.get("count"))
    measured = ours if ours is not None and count != 0 and ours.get("mean") is not None else None
    ours_text = (
        format_mean_std(measured["mean"], measured.get("std") if count != 1 else None, digits, count=count)
        if measured is not None
        else "—"
    )
    paper_text = paper.format(digits) if paper is not None else "—"
    difference = (
        f"{measured['mean'] - paper.mean:+.{digits}f}" if measured is not None and paper is not None else "—"
    )
    return ours_text, paper_text, difference
