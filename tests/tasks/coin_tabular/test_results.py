"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import json
import math

import pytest

from pdenets.experiments.results import RunFacts
from pdenets.experiments.summary import Stats
from pdenets.tasks.coin_tabular.config import CoinTabularConfig
from pdenets.tasks.coin_tabular.results import AccuracyCell, CoinTabularResults, PairedComparison
from pdenets.tasks.coin_tabular.task import CoinTabularTask


def test_tabular_results_are_typed_cells_and_keep_the_plain_form():
    from pdenets.tasks.coin_tabular.results import AccuracyCell, CoinTabularResults, PairedComparison

    def record(per_class, split, model, accuracy):
        return {
            "dataset": "breast-cancer",
            "labels_per_class": per_class,
            "split": split,
            "model": model,
            "accuracy": accuracy,
        }

    records = [
        record(5, 0, "coin", 0.90),
        record(5, 0, "mlp", 0.85),
        record(5, 1, "coin", 0.80),
        record(5, 1, "mlp", 0.82),
        record(10, 0, "label-spreading", 0.75),
    ]
    results = CoinTabularTask(CoinTabularConfig()).summarize(records)
    assert isinstance(results, CoinTabularResults)
    coin = results.table["breast-cancer"]["5"]["coin"]
    assert isinstance(coin, AccuracyCell) and coin.splits == 2
    assert (coin.accuracy.mean, coin.accuracy.std, coin.accuracy.median) == pytest.approx((85.0, 5.0, 85.0))
    # COIN beats the MLP on split 0 (+5 points) and not on split 1 (−2): one win of two, mean gain 1.5
    paired = results.coin_vs_mlp["breast-cancer/5"]
    assert (paired.pairs, paired.wins) == (2, 1) and paired.mean_gain == pytest.approx(1.5)
    assert list(results.coin_vs_mlp) == ["breast-cancer/5"]  # no COIN and MLP with 10 labels per class

    plain = results.to_dict()
    assert list(plain) == ["table", "coin_vs_mlp", "calibration", "figures"]
    assert list(plain["table"]["breast-cancer"]) == ["5", "10"]
    assert plain["table"]["breast-cancer"]["10"] == {
        "label-spreading": {
            "mean": 75.0,
            "std": 0.0,
            "min": 75.0,
            "max": 75.0,
            "median": 75.0,
            "count": 1,
            "splits": 1,
        }
    }
    assert list(plain["table"]["breast-cancer"]["5"]["mlp"]) == [
        "mean",
        "std",
        "min",
        "max",
        "median",
        "count",
        "splits",
    ]
    assert list(plain["coin_vs_mlp"]["breast-cancer/5"]) == ["pairs", "wins", "mean_gain"]
    lonely = CoinTabularResults(table={}, coin_vs_mlp={"x/5": PairedComparison(0, 0, float("nan"))})
    assert math.isnan(lonely.to_dict()["coin_vs_mlp"]["x/5"]["mean_gain"])


def record(split, model, accuracy, per_class=5):
    return {
        "dataset": "breast-cancer",
        "labels_per_class": per_class,
        "split": split,
        "model": model,
        "accuracy": accuracy,
    }


RECORDS = [
    record(0, "coin", 0.90),
    record(0, "mlp", 0.85),
    record(1, "coin", 0.70),
    record(1, "mlp", 0.70),  # a tie: no win
    record(2, "coin", 0.80),  # no MLP on this split: not a pair
    record(3, "mlp", float("nan")),  # a failed split: in the count of splits, not in the statistics
]


def test_accuracy_statistics_over_the_splits_in_percent():
    results = CoinTabularTask(CoinTabularConfig()).summarize(RECORDS)
    coin = results.table["breast-cancer"]["5"]["coin"]
    # 90, 70, 80: mean 80, squared deviations 100, 100, 0 over three splits (ddof = 0)
    assert coin.splits == 3
    assert coin.accuracy.mean == pytest.approx(80.0, abs=1e-12)
    assert coin.accuracy.std == pytest.approx(math.sqrt(200 / 3), abs=1e-12)
    assert (coin.accuracy.min, coin.accuracy.max, coin.accuracy.median) == pytest.approx((70.0, 90.0, 80.0))
    mlp = results.table["breast-cancer"]["5"]["mlp"]
    assert mlp.splits == 3 and mlp.accuracy.count == 2 and mlp.accuracy.mean == pytest.approx(77.5)


def test_the_paired_comparison_counts_strict_wins_over_the_splits_both_ran():
    results = CoinTabularTask(CoinTabularConfig()).summarize(RECORDS)
    paired = results.coin_vs_mlp["breast-cancer/5"]
    # split 0: +5 points; split 1: 0 (a tie); split 2 has no MLP; split 3 no COIN
    assert (paired.pairs, paired.wins) == (2, 1)
    assert paired.mean_gain == pytest.approx((5.0 + 0.0) / 2, abs=1e-12)
    worse = [record(0, "coin", 0.5), record(0, "mlp", 0.6), record(1, "coin", 0.6), record(1, "mlp", 0.9)]
    paired = CoinTabularTask(CoinTabularConfig()).summarize(worse).coin_vs_mlp["breast-cancer/5"]
    assert (paired.pairs, paired.wins) == (2, 0) and paired.mean_gain == pytest.approx(-20.0)


def test_the_plain_form_reads_back_to_the_same_results():
    cell = AccuracyCell(Stats.of([0.5, 0.75, 1.0], scale=100), splits=4)
    results = CoinTabularResults(
        table={"data": {"10": {"coin": cell}}},
        coin_vs_mlp={"data/10": PairedComparison(pairs=3, wins=2, mean_gain=1.25)},
        run=RunFacts(4, 4, 1.0),
    )
    plain = json.loads(json.dumps(results.to_dict()))
    assert list(plain) == [
        "table",
        "coin_vs_mlp",
        "calibration",
        "runs_planned",
        "runs_stored",
        "wall_seconds",
    ] + ["figures"]
    entry = plain["table"]["data"]["10"]["coin"]
    assert entry == {
        "mean": 75.0,
        "std": pytest.approx(math.sqrt(1250 / 3)),
        "min": 50.0,
        "max": 100.0,
        "median": 75.0,
        "count": 3,
        "splits": 4,
    }
    splits = entry.pop("splits")
    rebuilt = CoinTabularResults(
        table={"data": {"10": {"coin": AccuracyCell(Stats(**entry), splits=splits)}}},
        coin_vs_mlp={key: PairedComparison(**value) for key, value in plain["coin_vs_mlp"].items()},
        run=RunFacts(plain["runs_planned"], plain["runs_stored"], plain["wall_seconds"]),
    )
    assert rebuilt == results
