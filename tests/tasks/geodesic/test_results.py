"""The geodesic study end to end at toy scale: MNIST MLP pairs and CIFAR-10 K = 1 / K = 4 CNN pairs."""

import json
import math

import pytest

from pdenets.experiments.summary import Stats
from pdenets.tasks.geodesic.config import GeodesicConfig
from pdenets.tasks.geodesic.results import GeodesicCell, GeodesicResults, StageScores
from pdenets.tasks.geodesic.task import GeodesicTask


def _finished_run(kind, seed, train, test, stage_lss, official=None):
    """A stored run as summarize reads it: two stages of width 8 and 4, the run's scores their means."""
    stages = [
        {"width": 8, "ots": 1.0, "lsr": 2.0, "lss": stage_lss},
        {"width": 4, "ots": 0.5, "lsr": 3.0, "lss": 1.0},
    ]
    return {
        "dataset": "cifar10",
        "architecture": "k4",
        "weight_decay": 0.01,
        "kind": kind,
        "seed": seed,
        "diverged": False,
        "train_accuracy": train,
        "test_accuracy": test,
        "official_accuracy": official,
        "ots": 0.75,
        "lsr": 2.5,
        "lss": (stage_lss + 1.0) / 2,
        "stages": stages,
    }


def test_summarize_gives_typed_cells_whose_plain_form_keeps_the_keys_and_their_order():
    from pdenets.experiments.summary import Stats
    from pdenets.tasks.geodesic.results import GeodesicCell, GeodesicResults, StageScores

    records = [
        _finished_run("resnet", 0, 0.9, 0.8, 1.5, official=0.7),
        _finished_run("resnet", 1, 0.7, 0.6, 2.5),
        dict(_finished_run("resnet", 2, 0.0, 0.0, 1.0), diverged=True),  # a diverged run: its scores unused
        dict(
            _finished_run("plain", 0, 0.5, 0.25, 3.0),
            dataset="mnist",
            architecture="mlp",
            weight_decay=0.0005,
            stages=[{"width": 16, "ots": 0.1, "lsr": 4.0, "lss": 3.0}],
        ),
    ]
    results = GeodesicTask(GeodesicConfig()).summarize(records)
    assert isinstance(results, GeodesicResults) and list(results.table) == ["cifar10/k4", "mnist/mlp"]
    cell = results.table["cifar10/k4"]["0.01"]["resnet"]
    assert isinstance(cell, GeodesicCell) and (cell.runs, cell.diverged, cell.finished) == (3, 1, 2)
    assert (cell.test_accuracy.mean, cell.test_accuracy.std) == pytest.approx((0.7, 0.1))
    assert cell.official_accuracy.count == 1 and cell.official_accuracy.mean == 0.7  # one run has it
    assert cell.lss == Stats.of([1.25, 1.75])
    first, second = cell.stages
    assert isinstance(first, StageScores) and (first.width, second.width) == (8, 4)
    assert (first.lss.mean, first.lss.std, first.lss.count) == (2.0, 0.5, 2)
    assert second.ots == Stats.of([0.5, 0.5])
    single = results.table["mnist/mlp"]["0.0005"]["plain"]
    assert single.stages is None and single.official_accuracy.count == 0

    plain = results.to_dict()
    assert list(plain) == ["table", "figures"]
    stats_keys = ["mean", "std", "min", "max", "median", "count"]
    scores = ["train_accuracy", "test_accuracy", "official_accuracy", "ots", "lsr", "lss"]
    resnet = plain["table"]["cifar10/k4"]["0.01"]["resnet"]
    assert list(resnet) == ["runs", "diverged", *scores, "stages"]
    assert resnet["test_accuracy"] == Stats.of([0.8, 0.6]).as_dict() and list(resnet["lss"]) == stats_keys
    assert [list(stage) for stage in resnet["stages"]] == [["ots", "lsr", "lss", "width"]] * 2
    assert resnet["stages"][0]["lss"] == {
        "mean": 2.0,
        "std": 0.5,
        "min": 1.5,
        "max": 2.5,
        "median": 2.0,
        "count": 2,
    }
    assert list(plain["table"]["mnist/mlp"]["0.0005"]["plain"]) == ["runs", "diverged", *scores]


def run(seed, ots_by_stage, diverged=False, weight_decay=1e-3, kind="resnet", train=0.9, test=0.8):
    """A stored CIFAR-10 K = 4 run: one entry per stage (widths 12, 6, ...), the run's scores their means."""
    stages = [
        {"width": 12 // (i + 1), "ots": ots, "lsr": 1.0 + ots, "lss": 2.0 * (1.0 + ots)}
        for i, ots in enumerate(ots_by_stage)
    ]
    mean = sum(ots_by_stage) / len(ots_by_stage)
    return {
        "dataset": "cifar10",
        "architecture": "k4",
        "weight_decay": weight_decay,
        "kind": kind,
        "seed": seed,
        "diverged": diverged,
        "train_accuracy": train,
        "test_accuracy": test,
        "official_accuracy": test - 0.1,
        "ots": mean,
        "lsr": 1.0 + mean,
        "lss": 2.0 * (1.0 + mean),
        "stages": stages,
    }


def summarize(records):
    return GeodesicTask(GeodesicConfig()).summarize(records)


def test_a_cell_and_its_stages_are_statistics_over_the_finished_runs():
    records = [
        run(0, [0.2, 0.4, 0.6], test=0.5),
        run(1, [0.5, 0.5, 0.5], test=0.7),
        run(2, [0.8, 0.6, 0.4], test=0.9),
        run(3, [9.0, 9.0, 9.0], diverged=True, test=0.0),  # diverged: counted as a run, scored nowhere
    ]
    cell = summarize(records).table["cifar10/k4"]["0.001"]["resnet"]
    assert (cell.runs, cell.diverged, cell.finished) == (4, 1, 3)
    # test accuracy 0.5, 0.7, 0.9: mean 0.7, squared deviations 0.04, 0, 0.04 over three runs (ddof = 0)
    assert cell.test_accuracy.mean == pytest.approx(0.7, abs=1e-12)
    assert cell.test_accuracy.std == pytest.approx(math.sqrt(0.08 / 3), abs=1e-12)
    assert cell.official_accuracy.mean == pytest.approx(0.6, abs=1e-12)
    # the runs' own scores (means over their stages): 0.4, 0.5, 0.6
    assert cell.ots.mean == pytest.approx(0.5) and cell.ots.std == pytest.approx(
        math.sqrt(0.02 / 3), abs=1e-12
    )
    first, second, third = cell.stages
    # stage 1: 0.2, 0.5, 0.8 (std √0.06); stage 2: 0.4, 0.5, 0.6 (std √(0.02/3)); stage 3: 0.6, 0.5, 0.4
    assert first.ots.mean == pytest.approx(0.5) and first.ots.std == pytest.approx(math.sqrt(0.06), abs=1e-12)
    assert second.ots.std == pytest.approx(math.sqrt(0.02 / 3), abs=1e-12)
    assert (third.ots.min, third.ots.max, third.ots.median, third.ots.count) == (0.4, 0.6, 0.5, 3)
    assert first.lss.mean == pytest.approx(3.0) and first.lsr.max == pytest.approx(1.8)
    assert [stage.width for stage in cell.stages] == [12, 6, 4]


def test_a_cell_whose_runs_all_diverged_has_no_scores():
    results = summarize([run(0, [0.5, 0.5], diverged=True), run(1, [0.5, 0.5], diverged=True)])
    cell = results.table["cifar10/k4"]["0.001"]["resnet"]
    assert (cell.runs, cell.diverged, cell.finished) == (2, 2, 0)
    for name in ("train_accuracy", "test_accuracy", "official_accuracy", "ots", "lsr", "lss"):
        stats = getattr(cell, name)
        assert stats.count == 0 and all(math.isnan(getattr(stats, k)) for k in ("mean", "std", "median"))
    assert cell.stages is None
    plain = results.to_dict()["table"]["cifar10/k4"]["0.001"]["resnet"]
    assert "stages" not in plain and plain["ots"]["count"] == 0 and math.isnan(plain["ots"]["mean"])


def test_weight_decays_are_keyed_in_g_format_in_the_order_the_runs_come():
    records = [
        run(0, [0.5], weight_decay=w, kind=k) for w in (0.0, 1e-5, 0.0005, 0.1) for k in ("plain", "resnet")
    ]
    table = summarize(records).table["cifar10/k4"]
    assert list(table) == ["0", "1e-05", "0.0005", "0.1"]
    assert all(list(kinds) == ["plain", "resnet"] for kinds in table.values())
    assert table["0"]["plain"].stages is None  # one stage: no per-stage scores


def test_a_cell_reads_back_from_its_plain_form():
    scores = dict(ots=Stats.of([0.25, 0.75]), lsr=Stats.of([1.0, 3.0]), lss=Stats.of([2.0, 2.0]))
    cell = GeodesicCell(
        runs=3,
        diverged=1,
        train_accuracy=Stats.of([1.0, 0.5]),
        test_accuracy=Stats.of([0.5, 0.25]),
        official_accuracy=Stats.of([0.5]),
        stages=[StageScores(width=8, **scores), StageScores(width=4, **scores)],
        **scores,
    )
    plain = json.loads(json.dumps(GeodesicResults(table={"c/k4": {"0.01": {"resnet": cell}}}).to_dict()))
    entry = plain["table"]["c/k4"]["0.01"]["resnet"]
    rebuilt = GeodesicCell(
        **{k: Stats(**v) if isinstance(v, dict) else v for k, v in entry.items() if k != "stages"},
        stages=[
            StageScores(**{k: Stats(**v) if isinstance(v, dict) else v for k, v in s.items()})
            for s in entry["stages"]
        ],
    )
    assert rebuilt == cell and rebuilt.finished == 2
    assert entry["ots"] == {"mean": 0.5, "std": 0.25, "min": 0.25, "max": 0.75, "median": 0.5, "count": 2}
