"""A series' time column, read strictly: stamps going forward at one interval, their unit and span in words,
and the stamps that continue the series (what forecasts past its end are stamped with). Each refusal names the
column and the lines; a series folder whose time column is refused never reaches a run."""

import numpy as np
import pytest

from pdenets.data import DatasetError, load_temporal
from pdenets.data.time_column import interval_words, looks_like_time, read_time_column


def _cells(*values, first=2):
    return [(first + k, value) for k, value in enumerate(values)]


@pytest.mark.parametrize(
    "column, values, unit, span",
    [
        (
            "date",
            ("2020-03-01", "2020-03-02", "2020-03-03"),
            "day",
            "3 rows one day apart, from 2020-03-01 to 2020-03-03",
        ),
        (
            "date",
            ("2020-03-01", "2020-03-08"),
            "week",
            "2 rows one week apart, from 2020-03-01 to 2020-03-08",
        ),
        (
            "time",
            ("2026-03-02 00:00", "2026-03-02 00:05"),
            "5 minutes",
            "2 rows 5 minutes apart, from 2026-03-02 00:00 to 2026-03-02 00:05",
        ),
        (
            "timestamp",
            ("2026-03-02T10:00:00Z", "2026-03-02T11:00:00Z"),
            "hour",
            "2 rows one hour apart, from 2026-03-02T10:00:00Z to 2026-03-02T11:00:00Z",
        ),
        (
            "date",
            ("2020-01", "2020-02", "2020-03"),
            "month",
            "3 rows one month apart, from 2020-01 to 2020-03",
        ),
        ("date", ("2020-01", "2020-04"), "3 months", "2 rows 3 months apart, from 2020-01 to 2020-04"),
        ("date", ("2019-06", "2020-06"), "year", "2 rows one year apart, from 2019-06 to 2020-06"),
        ("week", ("1", "2", "3"), "week", "3 rows one week apart, week 1 to 3"),
        ("t", ("0", "5", "10"), "5 steps", "3 rows 5 steps apart, t 0 to 10"),
        ("day", ("+1", "2"), "day", "2 rows one day apart, day 1 to 2"),
    ],
)
def test_a_regular_column_gives_its_unit_and_span(column, values, unit, span):
    axis = read_time_column("s.csv", column, _cells(*values))
    assert (axis.unit, axis.span()) == (unit, span)


def test_the_stamps_after_the_last_row_continue_the_series_at_its_interval():
    axis = read_time_column("s.csv", "time", _cells("2026-03-02 23:50", "2026-03-02 23:55"))
    assert axis.format(axis.following(3)) == ["2026-03-03 00:00", "2026-03-03 00:05", "2026-03-03 00:10"]
    months = read_time_column("s.csv", "date", _cells("2020-11", "2020-12"))
    assert months.format(months.following(2)) == ["2021-01", "2021-02"]
    utc = read_time_column("s.csv", "datetime", _cells("2026-03-02T10:00Z", "2026-03-02T10:30Z"))
    assert utc.format(utc.following(1)) == ["2026-03-02T11:00Z"]
    steps = read_time_column("s.csv", "step", _cells("7", "9"))
    assert steps.format(steps.following(2)) == ["11", "13"] and not steps.dated
    assert steps.following(1, after=0).tolist() == [9]


@pytest.mark.parametrize(
    "column, values, message",
    [
        (
            "date",
            ("2020-01-03", "2020-01-02"),
            "column 'date': line 3 (2020-01-02) comes before line 2 (2020-01-03); the rows must go forward "
            "in "
            "time",
        ),
        (
            "date",
            ("2020-01-01", "2020-01-02", "2020-01-02"),
            "column 'date': line 4 repeats 2020-01-02 of line 3",
        ),
        (
            "date",
            ("r0", "r1"),
            "column 'date', line 2: 'r0' is not a time (YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], YYYY-MM)",
        ),
        (
            "date",
            ("1", "2"),
            "column 'date', line 2: '1' is not a time (YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], YYYY-MM)",
        ),
        (
            "time",
            ("0.5", "1.0"),
            "column 'time', line 2: '0.5' is not a time (YYYY-MM-DD, YYYY-MM-DD HH:MM[:SS], YYYY-MM or a "
            "whole "
            "step number)",
        ),
        ("date", ("2020-02-30", "2020-03-01"), "column 'date', line 2: '2020-02-30' is not a valid date"),
        (
            "time",
            ("2026-03-02 00:00", "2026-03-02"),
            "column 'time', line 3: '2026-03-02' is written at another precision than the rows before it; "
            "write "
            "every stamp alike",
        ),
        (
            "time",
            ("2026-03-02T00:00+01:00", "2026-03-02T00:05+01:00"),
            "column 'time', line 2: '2026-03-02T00:00+01:00' carries a time-zone offset; write local times "
            "or UTC "
            "with a final Z",
        ),
        (
            "time",
            ("2026-03-02T00:00Z", "2026-03-02T00:05"),
            "column 'time', line 3: every stamp or none must end in Z",
        ),
        (
            "day",
            ("1", "2020-01-01"),
            "column 'day', line 3: '2020-01-01' is written at another precision than the rows before it; "
            "write "
            "every stamp alike",
        ),
        ("day", ("1",), "column 'day': a series needs at least two rows to have an interval"),
        ("day", ("1", "3", "3"), "column 'day': line 4 repeats 3 of line 3"),
    ],
    ids=[
        "descending",
        "duplicated",
        "words",
        "numbers in a date column",
        "fractions",
        "no such date",
        "mixed precision",
        "offset",
        "mixed zones",
        "number then date",
        "one row",
        "repeated step",
    ],
)
def test_a_column_that_is_not_time_going_forward_is_refused_naming_the_lines(column, values, message):
    with pytest.raises(DatasetError) as caught:
        read_time_column("s.csv", column, _cells(*values))
    assert str(caught.value) == f"s.csv: {message}"


def test_gaps_are_refused_with_their_count_sizes_and_first_lines():
    days = ["2020-01-01", "2020-01-02", "2020-01-08", "2020-01-09", "2020-01-11", "2020-01-12", "2020-01-13"]
    with pytest.raises(DatasetError) as caught:
        read_time_column("s.csv", "date", _cells(*days))
    assert str(caught.value) == (
        "s.csv: column 'date': the rows are one day apart except 2 gaps: 6 days between line 3 (2020-01-02) "
        "and line 4 (2020-01-08), 2 days between line 5 (2020-01-09) and line 6 (2020-01-11); give one row "
        "per "
        "day (fill the missing rows)"
    )
    many = [str(k) for k in (0, 1, 3, 4, 6, 7, 9, 10, 12, 13, 14)]  # four gaps of 2 steps: three shown
    with pytest.raises(DatasetError, match=r"except 4 gaps: .* and 1 more; give one row per step"):
        read_time_column("s.csv", "step", _cells(*many))
    # the commonest interval is the step (not the first one): one long first gap is the gap
    assert read_time_column("s.csv", "t", _cells("0", "2", "3", "4", "5"), gaps_allowed=True).step == 1
    with pytest.raises(DatasetError, match="except 1 gap: 2 steps between line 2 \\(0\\) and line 3 \\(2\\)"):
        read_time_column("s.csv", "t", _cells("0", "2", "3", "4", "5"))
    # allowed gaps are whole multiples of the step; another interval is still refused
    with pytest.raises(DatasetError, match="except 1 gap: 3 minutes"):
        read_time_column(
            "s.csv",
            "time",
            _cells("2026-01-01 00:00", "2026-01-01 00:02", "2026-01-01 00:05"),
            gaps_allowed=True,
        )


def test_interval_words_and_what_looks_like_a_time():
    assert (
        interval_words(np.timedelta64(1, "s")) == "second"
        and interval_words(np.timedelta64(90, "s")) == "90 seconds"
    )
    assert (
        interval_words(np.timedelta64(7200, "s")) == "2 hours"
        and interval_words(np.timedelta64(14, "D")) == "2 weeks"
    )
    assert interval_words(np.timedelta64(24, "M")) == "2 years" and interval_words(3, "day") == "3 days"
    assert (
        looks_like_time("2026-03-02T00:00:00.25")
        and not looks_like_time("2026/03/02")
        and not looks_like_time("7")
    )


def _folder(tmp_path, header, stamps):
    folder = tmp_path / "sensors"
    folder.mkdir(exist_ok=True)
    rows = [f"{stamp},{k},{2 * k}" for k, stamp in enumerate(stamps)]
    (folder / "series.csv").write_text(f"{header},a,b\n" + "\n".join(rows) + "\n")
    (folder / "edges.csv").write_text("source,target\na,b\n")
    return folder


def test_a_series_folder_reads_its_time_column_strictly(tmp_path):
    series = load_temporal(_folder(tmp_path, "when", [f"2020-03-{d:02d}" for d in range(1, 6)]))
    assert series.step_unit == "day" and series.node_names == ("a", "b")  # a first column of dates is time
    assert series.time_axis.span() == "5 rows one day apart, from 2020-03-01 to 2020-03-05"
    with pytest.raises(
        DatasetError, match=r"series.csv: column 'date': line 4 \(2020-03-02\) comes before line 3"
    ):
        load_temporal(_folder(tmp_path, "date", ["2020-03-01", "2020-03-03", "2020-03-02", "2020-03-04"]))
    with pytest.raises(DatasetError, match="series.csv: column 'date': line 4 repeats 2020-03-02 of line 3"):
        load_temporal(_folder(tmp_path, "date", ["2020-03-01", "2020-03-02", "2020-03-02", "2020-03-03"]))
    with pytest.raises(DatasetError, match="series.csv: column 'date', line 2: 'r0' is not a time"):
        load_temporal(_folder(tmp_path, "date", ["r0", "r1", "r2"]))
    plain = load_temporal(_folder(tmp_path, "step", ["0", "1", "2", "3"]))
    assert plain.step_unit == "step" and plain.time_axis.span() == "4 rows one step apart, step 0 to 3"


@pytest.mark.parametrize(
    "values, unit, following",
    [
        (("2020-01-01", "2020-02-01", "2020-03-01", "2020-04-01"), "month", ["2020-05-01", "2020-06-01"]),
        (("2020-01-31", "2020-02-29", "2020-03-31"), "month", ["2020-04-30", "2020-05-31"]),
        (("2020-01-15", "2020-04-15", "2020-07-15"), "3 months", ["2020-10-15", "2021-01-15"]),
        (("2019-12-31", "2020-12-31"), "year", ["2021-12-31", "2022-12-31"]),
        (("2020-01-01", "2020-01-29", "2020-02-26"), "4 weeks", ["2020-03-25", "2020-04-22"]),
    ],
    ids=["first of the month", "month ends", "quarters", "years", "four weeks"],
)
def test_dates_on_one_day_of_every_month_are_a_monthly_series(values, unit, following):
    """Monthly dates are 28 to 31 days apart: counted in months, they are one interval (a calendar month, a
    quarter, a year), and the series continues on the same day of the month (or the month's last day)."""
    axis = read_time_column("s.csv", "date", _cells(*values))
    assert axis.unit == unit and axis.format(axis.following(2)) == following


def test_an_interval_shorter_than_the_step_is_irregular_not_a_gap():
    stamps = (
        "2020-01-01 00:00",
        "2020-01-01 01:00",
        "2020-01-01 01:30",
        "2020-01-01 02:30",
        "2020-01-01 03:30",
    )
    with pytest.raises(DatasetError) as caught:
        read_time_column("s.csv", "time", _cells(*stamps))
    assert str(caught.value).endswith(
        "the rows are one hour apart except 1 irregular interval: 30 minutes between line 3 (2020-01-01 "
        "01:00) "
        "and line 4 (2020-01-01 01:30); give one row per hour (resample the series to one interval)"
    )
    with pytest.raises(
        DatasetError, match="except 1 gap: 2 months between line 3 .* \\(fill the missing rows\\)"
    ):
        read_time_column("s.csv", "date", _cells("2020-01-01", "2020-02-01", "2020-04-01"))
