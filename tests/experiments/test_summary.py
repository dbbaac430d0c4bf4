"""Summaries of many runs: statistics of the finite values per group, ``mean ± std`` text, and the paper's
number beside ours with the signed difference."""

import math
import statistics

import numpy as np
import pytest

from pdenets.experiments import (
    PaperValue,
    Stats,
    format_mean_std,
    group_summary,
)
from pdenets.experiments.summary import group_records, paper_and_ours


def test_group_summary_exact_values_and_missing_metrics():
    records = [
        {"m": "a", "d": "x", "acc": 0.8},
        {"m": "a", "d": "x", "acc": 0.6},
        {"m": "b", "d": "x", "acc": 1.0},
        {"m": "a", "d": "y", "acc": 0.5},
        {"m": "a", "d": "x", "acc": None},
    ]
    table = group_summary(records, by=("m", "d"), metric="acc", scale=100)
    assert list(table) == [("a", "x"), ("b", "x"), ("a", "y")]
    assert table[("a", "x")] == Stats(mean=70.0, std=10.0, min=60.0, max=80.0, median=70.0, count=2)
    assert group_summary(records, by="m", metric="acc", where=lambda r: r["d"] == "y")["a"].count == 1
    assert [len(v) for v in group_records(records, by="d").values()] == [4, 1]
    assert Stats.of([]).count == 0 and Stats.of([]).format() == "—"


def test_one_format_for_mean_std_and_paper_vs_ours():
    assert format_mean_std(0.96234, 0.0341) == "0.962 ± 0.034"
    assert format_mean_std(82.34, 1.16, 1, count=20) == "82.3 ± 1.2 (n=20)"
    assert format_mean_std(None) == "—" and format_mean_std(math.nan, 1.0) == "—"
    assert PaperValue(93.27).format(2) == "93.27"
    assert paper_and_ours({"mean": 82.34, "std": 1.16, "runs": 20}, PaperValue(82.1, 1.1)) == (
        "82.3 ± 1.2 (n=20)",
        "82.1 ± 1.1",
        "+0.2",
    )
    assert paper_and_ours(None, PaperValue(82.1, 1.1)) == ("—", "82.1 ± 1.1", "—")
    assert paper_and_ours(Stats.of([0.5, 0.7], scale=100), None) == ("60.0 ± 10.0 (n=2)", "—", "—")


def test_stats_of_finite_values_match_an_independent_computation():
    """Population std (ddof 0), the median of an even count, and None, NaN and ±inf left out before
    scaling."""
    rng = np.random.default_rng(0)
    finite = [float(v) for v in rng.normal(0.7, 0.1, size=8)]
    values = finite[:3] + [None, math.nan, math.inf, -math.inf] + finite[3:]
    stats = Stats.of(values, scale=100)
    scaled = [100 * v for v in finite]
    assert stats.count == 8
    assert stats.mean == pytest.approx(statistics.fmean(scaled), rel=1e-12)
    assert stats.std == pytest.approx(statistics.pstdev(scaled), rel=1e-12)
    assert stats.std != pytest.approx(statistics.stdev(scaled), rel=1e-6)  # not the sample std
    assert stats.median == pytest.approx(statistics.median(scaled), rel=1e-12)
    assert (stats.min, stats.max) == (min(scaled), max(scaled))
    assert stats.as_dict() == {
        "mean": stats.mean,
        "std": stats.std,
        "min": stats.min,
        "max": stats.max,
        "median": stats.median,
        "count": 8,
    }
    empty = Stats.of([None, math.nan, math.inf])
    assert empty.count == 0 and all(math.isnan(value) for value in list(empty.as_dict().values())[:5])


def test_one_value_prints_without_a_spread_and_the_count_on_request():
    assert Stats.of([0.25]).format() == "0.250"  # std 0 of one run is no measured spread
    assert Stats.of([0.25]).format(2, count=True) == "0.25 (n=1)"
    assert Stats.of([1.0, 2.0]).format(1, count=True) == "1.5 ± 0.5 (n=2)"
    assert format_mean_std(1.0, math.nan, count=3) == "1.000 (n=3)"


def test_groups_keep_their_first_appearance_order_and_several_names_give_tuples():
    records = [
        {"m": "b", "d": 1, "acc": 0.5},
        {"m": "a", "d": 2, "acc": 0.25},
        {"d": 1, "acc": 0.75},  # no `m`: its own group, under None
        {"m": "b", "d": 2, "acc": 1.0},
    ]
    assert list(group_records(records, by="m")) == ["b", "a", None]
    assert list(group_records(records, by=["m"])) == [("b",), ("a",), (None,)]  # a list of one name: tuples
    assert list(group_records(records, by=("d", "m"))) == [(1, "b"), (2, "a"), (1, None), (2, "b")]
    table = group_summary(records, by="d", metric="acc", where=lambda r: r.get("m") is not None)
    assert table == {1: Stats.of([0.5]), 2: Stats.of([0.25, 1.0])}
    assert group_summary(records, by="m", metric="missing")["b"].count == 0


def test_the_difference_is_ours_minus_the_papers_from_the_unrounded_means():
    # 82.26 - 82.2 = 0.06: "+0.1" at one decimal, though the cells print 82.3 and 82.2
    assert paper_and_ours({"mean": 82.26, "std": 0.3, "runs": 5}, PaperValue(82.2)) == (
        "82.3 ± 0.3 (n=5)",
        "82.2",
        "+0.1",
    )
    assert paper_and_ours({"mean": 82.26, "std": 0.3, "runs": 5}, PaperValue(82.2), digits=2)[2] == "+0.06"
    assert paper_and_ours({"mean": 80.0, "std": 2.0, "count": 1}, PaperValue(80.3, 0.4)) == (
        "80.0 (n=1)",  # one run: its std is no spread
        "80.3 ± 0.4",
        "-0.3",
    )
    # a count of 0, or no mean, is nothing measured: no difference either
    for nothing in ({"mean": 80.0, "std": 1.0, "runs": 0}, {"mean": None, "runs": 3}, Stats.of([])):
        assert paper_and_ours(nothing, PaperValue(80.0)) == ("—", "80.0", "—")
