"""The time column of a user's series: its stamps read strictly, their interval, and the stamps that follow.

A series' rows must go forward in time at one interval: :func:`read_time_column` refuses a cell that is not a
date, a time or a step number (naming the line), a repeated stamp and a stamp earlier than the one before
(naming both lines), and gaps (giving their count, their sizes and where the first ones are). What it returns,
a :class:`TimeAxis`, knows the series' span and can continue it (:meth:`TimeAxis.following`: the stamps after
the series' last row, at the series' own interval).

Accepted cells, one form for the whole column:

* dates ``YYYY-MM-DD``, date-times ``YYYY-MM-DD HH:MM[:SS[.fff]]`` (or with ``T``; a final ``Z`` is read as
  UTC and other time-zone offsets are refused), months ``YYYY-MM``; dates on one day of every month, or on
  every month's last day, are a monthly (quarterly, yearly) series;
* whole step numbers (``1``, ``2``, …) in a column named ``day``, ``week``, ``month``, ``hour``, ``minute``,
  ``step``, ``t``, ``period`` or ``time``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from .csvfile import shown_value
from .errors import dataset_error

__all__ = [
    "TIME_COLUMNS",
    "STEP_COLUMNS",
    "TimeAxis",
    "read_time_column",
    "looks_like_time",
    "interval_words",
]

#: first-column names that hold dates or times
TIME_COLUMNS = ("date", "datetime", "timestamp")
#: first-column names that hold dates, times or whole step numbers
STEP_COLUMNS = ("time", "day", "week", "month", "hour", "minute", "step", "t", "period")
#: the unit a step-number column's name means (others: ``"step"``)
_COLUMN_UNITS = {"day": "day", "week": "week", "month": "month", "hour": "hour", "minute": "minute"}
#: intervals of date-times in seconds, largest first, and their words
_SECOND_WORDS = ((7 * 86400, "week"), (86400, "day"), (3600, "hour"), (60, "minute"), (1, "second"))
#: the gaps a refusal lists before "and N more"
_GAPS_SHOWN = 3

_STAMP = re.compile(
    r"(?P<date>\d{4}-\d{2}(?P<day>-\d{2})?)"
    r"(?:(?P<sep>[ T])(?P<clock>\d{2}:\d{2})(?P<seconds>:\d{2}(?P<fraction>\.\d{1,6})?)?)?(?P<utc>Z)?"
)
_STEP_NUMBER = re.compile(r"[+-]?\d{1,18}")


def _precision(match: re.Match) -> str:
    """The numpy unit a stamp is written at: ``M`` (month), ``D``, ``m`` (minute), ``s`` or ``us``."""
    if match["clock"] is None:
        return "D" if match["day"] else "M"
    if match["seconds"] is None:
        return "m"
    return "us" if match["fraction"] else "s"


def looks_like_time(cell: str) -> bool:
    """Whether a cell is a date or date-time this module reads (``2020-03-01``, ``2020-03-01 08:15``,
    ``2020-03``).

    Examples:
        >>> looks_like_time("2020-03-01 08:15"), looks_like_time("2020-03"), looks_like_time("12.5")
        (True, True, False)
    """
    return _STAMP.fullmatch(cell.strip()) is not None


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def interval_words(step: Union[np.timedelta64, int], unit: str = "step") -> str:
    """An interval in words: ``"day"``, ``"5 minutes"``, ``"month"``, ``"3 steps"``.

    Args:
        step: a ``numpy.timedelta64`` (stamps) or an ``int`` (step numbers, counted in ``unit``).
        unit: the word of one step number (default: ``"step"``).

    Examples:
        >>> import numpy as np
        >>> interval_words(np.timedelta64(300, "s")), interval_words(np.timedelta64(1, "D"))
        ('5 minutes', 'day')
        >>> interval_words(np.timedelta64(3, "M")), interval_words(2, "week")
        ('3 months', '2 weeks')
    """
    if isinstance(step, np.timedelta64):
        if np.datetime_data(step.dtype)[0] in ("M", "Y"):
            months = int(step.astype("timedelta64[M]").astype(np.int64))
            if months % 12 == 0:
                return "year" if months == 12 else _plural(months // 12, "year")
            return "month" if months == 1 else _plural(months, "month")
        microseconds = int(step.astype("timedelta64[us]").astype(np.int64))
        if microseconds % 1_000_000:
            return f"{microseconds / 1e6:g} seconds"
        seconds = microseconds // 1_000_000
        for size, word in _SECOND_WORDS:
            if seconds % size == 0:
                return word if seconds == size else _plural(seconds // size, word)
    return unit if int(step) == 1 else _plural(int(step), unit)


@dataclass(frozen=True, eq=False)
class TimeAxis:
    """The stamps of a series' rows, strictly increasing at one interval.

    Attributes:
        column: the time column's name as the file writes it.
        times: ``(T,)`` ``datetime64`` stamps, or ``int64`` step numbers.
        step: the interval between rows (``numpy.timedelta64``, or an ``int`` for step numbers).
        unit: one row in words (``"day"``, ``"5 minutes"``, ``"week"``; a step-number column's unit).
        separator: what stands between date and clock in the file (``" "`` or ``"T"``).
        utc: the stamps end in ``Z``.
        day_of_month: for dates a whole number of months apart, the day they fall on (``-1``: each month's
            last day); ``0`` otherwise.

    Examples:
        >>> axis = read_time_column("series.csv", "time", [(2, "2026-03-02 00:00"), (3, "2026-03-02 00:05")])
        >>> axis.unit, axis.format(axis.following(2))
        ('5 minutes', ['2026-03-02 00:10', '2026-03-02 00:15'])
        >>> axis.span()
        '2 rows 5 minutes apart, from 2026-03-02 00:00 to 2026-03-02 00:05'
    """

    column: str
    times: np.ndarray
    step: Union[np.timedelta64, int]
    unit: str
    separator: str = " "
    utc: bool = False
    day_of_month: int = 0

    @property
    def dated(self) -> bool:
        """The stamps are dates or times (not step numbers)."""
        return np.issubdtype(self.times.dtype, np.datetime64)

    def following(self, count: int, after: int = -1) -> np.ndarray:
        """The ``count`` stamps after row ``after`` (default: the last), at the series' interval."""
        last = self.times[after]
        if not self.day_of_month:
            return last + self.step * np.arange(1, count + 1)
        months = last.astype("datetime64[M]") + self.step * np.arange(1, count + 1)
        if self.day_of_month < 0:  # each month's last day
            return (months + 1).astype("datetime64[D]") - np.timedelta64(1, "D")
        return months.astype("datetime64[D]") + np.timedelta64(self.day_of_month - 1, "D")

    def format(self, stamps: Optional[np.ndarray] = None) -> List[str]:
        """Stamps written as the file writes them (``stamps`` default: every row's)."""
        stamps = self.times if stamps is None else stamps
        if not self.dated:
            return [str(int(value)) for value in stamps]
        text = np.datetime_as_string(stamps, unit=np.datetime_data(self.times.dtype)[0])  # type: ignore[call-overload]
        return [value.replace("T", self.separator) + ("Z" if self.utc else "") for value in text]

    def span(self) -> str:
        """The rows, their interval and their first and last stamps in words."""
        first, last = self.format(self.times[[0, -1]])
        words = self.unit
        apart = f"{_plural(len(self.times), 'row')} {'' if words[0].isdigit() else 'one '}{words} apart"
        if not self.dated:
            return f"{apart}, {self.column} {first} to {last}"
        return f"{apart}, from {first} to {last}"


def _stamp(path, column: str, line: int, cell: str, form: Optional[Tuple[str, str]]):
    """One cell as ``(value, form)``: a ``datetime64`` and its precision, or an int and ``"step"``."""
    text = cell.strip()
    match = _STAMP.fullmatch(text)
    if match is not None:
        found = (_precision(match), match["sep"] or " ")
        if form is not None and form[0] != found[0]:
            raise dataset_error(
                path,
                f"column {column!r}, line {line}: {shown_value(text)} is written at another precision than "
                "the rows before it; write every stamp alike",
            )
        value = text[:-1] if match["utc"] else text
        try:
            stamp = np.datetime64(value.replace(" ", "T"), found[0])  # type: ignore[call-overload]
            return stamp, found, bool(match["utc"])
        except ValueError:
            raise dataset_error(
                path, f"column {column!r}, line {line}: {shown_value(text)} is not a valid date"
            ) from None
    if _STEP_NUMBER.fullmatch(text) and column.strip().lower() not in TIME_COLUMNS:
        if form is not None and form[0] != "step":
            raise dataset_error(
                path, f"column {column!r}, line {line}: {shown_value(text)} is a number among dates"
            )
        return int(text), ("step", " "), False
    expected = "YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], YYYY-MM" + (
        "" if column.strip().lower() in TIME_COLUMNS else " or a whole step number"
    )
    if re.search(r"[+-]\d{2}:?\d{2}$", text) and _STAMP.match(text):
        raise dataset_error(
            path,
            f"column {column!r}, line {line}: {shown_value(text)} carries a time-zone offset; write local "
            "times or UTC with a final Z",
        )
    raise dataset_error(
        path, f"column {column!r}, line {line}: {shown_value(text)} is not a time ({expected})"
    )


def read_time_column(
    path: Union[str, Path], column: str, cells: Sequence[Tuple[int, str]], *, gaps_allowed: bool = False
) -> TimeAxis:
    """Read a series' time column strictly.

    Args:
        path: the file, named in every refusal.
        column: the column's name (``date``, ``datetime`` and ``timestamp`` must hold dates or times; the
            names of :data:`STEP_COLUMNS` may hold whole step numbers too).
        cells: ``(line, cell)`` of each row, in the file's order.
        gaps_allowed: accept intervals that are whole multiples of the smallest one (default: ``False``:
            gaps are refused, since forecasting windows assume one row per step).

    Returns:
        The :class:`TimeAxis`.

    Raises:
        DatasetError: a cell that is not a time; stamps of mixed forms; a repeated stamp, or one earlier
            than the row before it (naming both lines); gaps (their count, their sizes and the first ones'
            lines); a column of one row.

    Examples:
        >>> read_time_column("s.csv", "date", [(2, "2020-03-01"), (3, "2020-03-02"), (4, "2020-03-03")]).unit
        'day'
        >>> read_time_column("s.csv", "week", [(2, "1"), (3, "2")]).unit
        'week'
        >>> read_time_column("s.csv", "date", [(2, "2020-03-02"), (3, "2020-03-01")])
        Traceback (most recent call last):
        ...
        pdenets.data.errors.DatasetError: s.csv: column 'date': line 3 (2020-03-01) comes before line 2 \
(2020-03-02); the rows must go forward in time
    """
    if len(cells) < 2:
        raise dataset_error(path, f"column {column!r}: a series needs at least two rows to have an interval")
    values, form, utc = [], None, None
    for line, cell in cells:
        value, form, cell_utc = _stamp(path, column, line, cell, form)
        if utc is not None and cell_utc != utc:
            raise dataset_error(path, f"column {column!r}, line {line}: every stamp or none must end in Z")
        utc = cell_utc
        values.append(value)
    assert form is not None
    times = np.array(values, dtype=np.int64 if form[0] == "step" else f"datetime64[{form[0]}]")
    differences = np.diff(times).astype(np.int64)  # in the stamps' unit
    lines = [line for line, _ in cells]
    texts = [cell.strip() for _, cell in cells]
    for position in np.flatnonzero(differences <= 0):
        before, after = int(position), int(position) + 1
        if differences[position] == 0:
            problem = f"line {lines[after]} repeats {texts[after]} of line {lines[before]}"
        else:
            problem = (
                f"line {lines[after]} ({texts[after]}) comes before line {lines[before]} ({texts[before]}); "
                "the rows must go forward in time"
            )
        raise dataset_error(path, f"column {column!r}: {problem}")
    day_of_month = 0
    if form[0] == "D" and int(differences.min()) >= 28:  # 28 days or more apart: a calendar interval?
        day_of_month = _monthly(times)
        if day_of_month:  # dates on one day of every month: their interval is counted in months
            differences = np.diff(times.astype("datetime64[M]")).astype(np.int64)
            form = ("M", form[1])
    counts = Counter(differences.tolist())
    step_value = max(counts, key=lambda value: (counts[value], -value))  # the commonest; the smaller on a tie
    step: Union[np.timedelta64, int]
    number_unit = _COLUMN_UNITS.get(column.strip().lower(), "step")  # what a step number counts
    code: Any = form[0]  # numpy's unit of the stamps, or "step"
    if code == "step":
        step = int(step_value)
    else:
        step = np.timedelta64(int(step_value), code)
    unit = interval_words(step, number_unit)
    irregular = np.flatnonzero(differences != step_value)
    if gaps_allowed:
        irregular = irregular[differences[irregular] % step_value != 0]
    if irregular.size:
        words = unit

        def size(i: int) -> Union[np.timedelta64, int]:
            return int(differences[i]) if code == "step" else np.timedelta64(int(differences[i]), code)

        shown = ", ".join(
            f"{interval_words(size(i), number_unit)} between "
            f"line {lines[i]} ({texts[i]}) and line {lines[i + 1]} ({texts[i + 1]})"
            for i in irregular[:_GAPS_SHOWN]
        )
        more = f" and {irregular.size - _GAPS_SHOWN} more" if irregular.size > _GAPS_SHOWN else ""
        gaps = bool((differences[irregular] > step_value).all())  # rows missing, not an interval of its own
        noun = ("gap" if gaps else "irregular interval") + ("" if irregular.size == 1 else "s")
        fix = "fill the missing rows" if gaps else "resample the series to one interval"
        raise dataset_error(
            path,
            f"column {column!r}: the rows are {'one ' if not words[0].isdigit() else ''}{words} apart except "
            f"{irregular.size} {noun}: {shown}{more}; give one row per {words} ({fix})",
        )
    return TimeAxis(column, times, step, unit, form[1], bool(utc), day_of_month)


def _monthly(dates: np.ndarray) -> int:
    """The day of the month every date falls on (``-1``: every one is its month's last day), ``0`` when they
    do not share one."""
    months = dates.astype("datetime64[M]")
    days = (dates - months.astype("datetime64[D]")).astype(np.int64) + 1
    if bool((days == days[0]).all()) and days[0] <= 28:
        return int(days[0])
    last = ((months + 1).astype("datetime64[D]") - np.timedelta64(1, "D")) == dates
    return -1 if bool(last.all()) else 0
