"""A task's results as frozen dataclasses, and their plain form, ``results.json``.

A task's :meth:`~pdenets.experiments.task.Task.summarize` returns a subclass of :class:`TaskResults`: one
frozen dataclass for the whole summary, typed cells (frozen dataclasses too) inside mappings keyed by what
the data names (datasets, models, settings). The report reads attributes, a type checker follows them, and
``results.json`` is :meth:`TaskResults.to_dict`, built by one rule (:func:`results_to_dict`):

* a dataclass becomes a dict of its fields, in declaration order;
* a field declared with :data:`FLATTEN` in its metadata is merged into its parent (its keys sit beside the
  other fields), one with :data:`OMIT_NONE` is left out while it is ``None``;
* mappings, lists and tuples are converted item by item; everything else is kept as it is (the run
  directory turns NaN into ``null`` when it writes the file).

The engine adds what it knows to every task's results (:class:`RunFacts`: runs planned and stored, wall
time) and the report the names of the figures it drew (:attr:`TaskResults.figures`).

Examples:
    >>> from dataclasses import dataclass, field
    >>> @dataclass(frozen=True)
    ... class Cell:
    ...     mean: float
    ...     runs: int
    ...     note: Optional[str] = field(default=None, metadata=OMIT_NONE)
    >>> @dataclass(frozen=True)
    ... class DemoResults(TaskResults):
    ...     table: Dict[str, Cell]
    >>> results = DemoResults(table={"cora": Cell(81.5, 10)}, run=RunFacts(10, 10, 3.5))
    >>> results.to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'table': {'cora': {'mean': 81.5, 'runs': 10}}, 'runs_planned': 10, 'runs_stored': 10,
     'wall_seconds': 3.5, 'figures': {}}
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "TaskResults",
    "RunFacts",
    "RunClock",
    "wall_time",
    "results_to_dict",
    "left_out_to_list",
    "FLATTEN",
    "OMIT_NONE",
]

#: field metadata: merge the field's keys into its parent's dict (a mapping or a dataclass)
FLATTEN: Mapping[str, str] = {"results": "flatten"}
#: field metadata: leave the field out of the plain form while its value is ``None``
OMIT_NONE: Mapping[str, str] = {"results": "omit-none"}


def _fields_to_dict(value: Any, leave_out: tuple = ()) -> Dict[str, Any]:
    """A dataclass instance's fields (but ``leave_out``) as a dict, each by its metadata's rule."""
    plain: Dict[str, Any] = {}
    for item in dataclasses.fields(value):
        content = getattr(value, item.name)
        rule = item.metadata.get("results")
        if item.name in leave_out or (rule == "omit-none" and content is None):
            continue
        if rule == "flatten":
            merged = results_to_dict(content)
            if not isinstance(merged, dict):
                raise TypeError(
                    f"{type(value).__name__}.{item.name} is flattened into its parent, so it must hold a "
                    f"mapping or a dataclass, not {type(content).__name__}"
                )
            plain.update(merged)
        else:
            plain[item.name] = results_to_dict(content)
    return plain


def results_to_dict(value: Any) -> Any:
    """The plain form of a results value (see the module docstring for the rule).

    Args:
        value: a dataclass, mapping, list, tuple or scalar.

    Returns:
        Dicts, lists and the scalars as they were.

    Raises:
        TypeError: a :data:`FLATTEN` field holds something that is not a mapping or a dataclass.

    Examples:
        >>> @dataclass(frozen=True)
        ... class Point:
        ...     x: float
        ...     extra: Dict[str, float] = field(default_factory=dict, metadata=FLATTEN)
        >>> results_to_dict([Point(1.0, {"y": 2.0}), (3, Point(4.0))])
        [{'x': 1.0, 'y': 2.0}, [3, {'x': 4.0}]]
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _fields_to_dict(value)
    if isinstance(value, Mapping):
        return {key: results_to_dict(content) for key, content in value.items()}
    if isinstance(value, (list, tuple)):
        return [results_to_dict(content) for content in value]
    return value


def wall_time(seconds: float) -> str:
    """A run's wall time as the report and the terminal write it.

    Examples:
        >>> wall_time(634.24)
        '634.2 s'
    """
    return f"{seconds:.1f} s"


class RunClock:
    """The wall time of one command, from when it began; the figure the report states is kept, so that
    ``results.json`` and the terminal give the same one.

    Args:
        started: ``time.perf_counter()`` when the command began.

    Examples:
        >>> clock = RunClock(time.perf_counter())
        >>> stated = clock.state()
        >>> clock.total() == stated
        True
    """

    def __init__(self, started: float):
        self.started = started
        self.stated: Optional[float] = None

    def elapsed(self) -> float:
        """Seconds since the command began."""
        return time.perf_counter() - self.started

    def state(self) -> float:
        """The wall time as the report states it: now, and kept."""
        self.stated = self.elapsed()
        return self.stated

    def total(self) -> float:
        """The run's one wall time: as the report stated it, or now where no report stated one."""
        return self.elapsed() if self.stated is None else self.stated


@dataclass(frozen=True)
class RunFacts:
    """What the engine adds to every task's results: the runs planned and stored, the wall time.

    Args:
        runs_planned: the jobs the task planned.
        runs_stored: those found in the results store.
        wall_seconds: wall-clock seconds of the call (of the report alone with ``report_only``).
        report_only: the results were rebuilt from the stored runs (``--report-only``); nothing ran.
        left_out: the stored runs whose record lacks a field the task reads or holds another kind there
            (:mod:`pdenets.experiments.records`), as ``(run key, problem)``; they are not in the results.
        clock: the command's clock; the report reads the wall time it states from it (``None``: the report
            states ``wall_seconds``).
    """

    runs_planned: int
    runs_stored: int
    wall_seconds: float
    report_only: bool = False
    left_out: Tuple[Tuple[str, str], ...] = ()
    clock: Optional[RunClock] = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, kw_only=True)
class TaskResults:
    """Base class of a task's typed results (frozen); :meth:`to_dict` is ``results.json``.

    A subclass declares the task's own fields; these two come last in ``results.json``:

    Args:
        run: the engine's facts on the runs (set by the runner; ``None`` until then).
        figures: the figures the report drew, name → file name(s). The one part a report adds: it is
            filled while the report is written, after which the runner writes ``results.json`` again.
    """

    run: Optional[RunFacts] = None
    figures: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        """The plain form written to ``results.json``: the task's fields, the run facts, the figures."""
        plain = _fields_to_dict(self, leave_out=("run", "figures"))
        if self.run is not None:
            plain.update(
                runs_planned=self.run.runs_planned,
                runs_stored=self.run.runs_stored,
                wall_seconds=self.run.wall_seconds,
            )
            if self.run.report_only:
                plain["report_only"] = True
            if self.run.left_out:
                plain["runs_left_out"] = left_out_to_list(self.run.left_out)
        plain["figures"] = results_to_dict(self.figures)
        return plain


def left_out_to_list(left_out: Sequence[Tuple[str, str]]) -> List[Dict[str, str]]:
    """The ``results.json`` form of :attr:`RunFacts.left_out`: ``[{"key": ..., "problem": ...}]``."""
    return [{"key": key, "problem": problem} for key, problem in left_out]
