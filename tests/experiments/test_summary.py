"""Shared training pieces (early stopping, divergence guard) and summaries (group stats, paper vs ours)."""

import math

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
