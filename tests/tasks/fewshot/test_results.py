"""``pdenets run few-shot`` on a small features file: every study, resumable, numbers pinned for the seeds."""

import dataclasses
import json
import math

import pytest

from pdenets.experiments.results import results_to_dict
from pdenets.tasks.fewshot.config import FewShotConfig
from pdenets.tasks.fewshot.results import EpisodeSummary, SweepPoint, TimingPoint
from pdenets.tasks.fewshot.task import FewShotTask

BALANCED = "balanced, 15 queries per class"


def _episodes(method, accuracies, seconds_per_task, study="ablation", variable=None, **shape):
    """A stored episode job's flattened record (spec and record fields), 5-way 1-shot on ``toy``."""
    record = dict(
        study=study,
        dataset="toy",
        ways=5,
        shots=1,
        method=method,
        variable=variable,
        queries=15,
        distribution="balanced",
        open_set=0,
        query_mode="together",
        accuracies=accuracies,
        log_likelihoods=[-0.5] * len(accuracies),
        seconds=seconds_per_task * len(accuracies),
        seconds_per_task=seconds_per_task,
        query_sets=len(accuracies),
        unbalanced_query_sets=0,
        empty_class_query_sets=0,
    )
    record.update(shape)
    return record


def test_summarize_returns_typed_results_whose_plain_form_is_pinned():
    from pdenets.tasks.fewshot.results import (
        ClearWin,
        FewShotResults,
        QueryShapeFacts,
        SweepPoint,
        TimingPoint,
    )

    z = 1.959963984540054  # the normal quantile of a 95 % interval
    open_set = dict(
        distribution="dirichlet:2",
        open_set=2,
        open_auroc=[0.8, 0.6],
        open_rejected=[0.5, 0.25],
        known_rejected=[0.1, 0.0],
        unbalanced_query_sets=2,
        empty_class_query_sets=1,
    )
    records = [
        _episodes("internal", [0.9, 0.8], 0.002),
        _episodes("internal", [1.0, 0.9], 0.004),
        _episodes("prototype", [0.6, 0.7], 0.001),
        _episodes("convection", [0.9, 0.9], 0.003),
        _episodes("internal", [0.4, 0.6], 0.002, **open_set),
        _episodes("internal", [0.5, 1.0], 0.002, study="n_top", variable=4),
        _episodes("internal", [0.5, 1.0], 0.005, study="timing", variable=10.0),
        {"method": "internal", "errors": [0.2, 0.3], "error_rate": 0.25},
        {"shots": 1, "before": [[0.0, 0.0]], "after": [[0.0, 0.0]], "labels": [0], "support": 1},
        {"shots": 5, "before": [[0.0, 0.0]], "after": [[0.0, 0.0]], "labels": [0], "support": 1},
    ]
    results = FewShotTask(FewShotConfig()).summarize(records)
    assert isinstance(results, FewShotResults)

    balanced, dirichlet = BALANCED, "dirichlet:2, 15 queries per class + 2 open-set classes"
    assert list(results.ablation) == [balanced, dirichlet]
    assert results.shapes == {
        balanced: QueryShapeFacts(15, "balanced", 0, "together", True),
        dirichlet: QueryShapeFacts(15, "dirichlet:2", 2, "together", False),
    }
    cell = results.ablation[balanced]["toy"]["5-way 1-shot"]
    assert list(cell) == ["internal", "prototype", "convection"]
    # internal: the four tasks of its two jobs, 0.9 0.8 1.0 0.9 (sample std √(0.02/3)); time: the jobs' mean
    internal = cell["internal"]
    assert internal.mean == pytest.approx(90.0) and internal.tasks == 4
    assert internal.ci95 == pytest.approx(100 * z * (0.02 / 3) ** 0.5 / 2)
    assert internal.seconds_per_task == pytest.approx(0.003)
    assert internal.seconds_per_1000_tasks == pytest.approx(3.0)
    assert internal.open_auroc is None and internal.known_rejected is None
    assert cell["prototype"].mean == pytest.approx(65.0)
    assert cell["prototype"].ci95 == pytest.approx(100 * z * 0.05)
    opened = results.ablation[dirichlet]["toy"]["5-way 1-shot"]["internal"]
    assert (opened.mean, opened.tasks) == (pytest.approx(50.0), 2)
    assert (opened.open_auroc, opened.open_rejected, opened.known_rejected) == pytest.approx(
        (0.7, 0.375, 0.05)
    )
    # the † mark follows the query sets drawn: both of this cell's broke balance, one left a class empty
    assert (opened.unbalanced_share, opened.empty_class_share) == (1.0, 0.5)
    assert opened.breaks_assumption_of("pt-map") and not opened.breaks_assumption_of("prototype")
    assert internal.unbalanced_share == 0.0 and not internal.breaks_assumption_of("pt-map")

    ((sweep, points),) = results.sensitivity.items()
    (point,) = points
    assert sweep == "n_top" and isinstance(point, SweepPoint) and point.value == 4
    assert point.episodes.mean == pytest.approx(75.0) and point.episodes.tasks == 2
    (timing,) = results.timing
    assert isinstance(timing, TimingPoint) and timing.layers == 10 and isinstance(timing.layers, int)
    assert timing.episodes.seconds_per_1000_tasks == pytest.approx(5.0)
    assert results.official_runs["internal"].error_rate == pytest.approx(25.0)
    assert results.official_runs["internal"].per_run == pytest.approx([20.0, 30.0])
    assert results.picture_shots == [1, 5]
    # the claim: the balanced table only; external was not run
    ((claimed, wins),) = results.claim.items()
    assert claimed == "toy 5-way 1-shot" and list(wins) == ["convection", "prototype"]
    assert wins["convection"] == ClearWin(pytest.approx(0.0), False)
    assert wins["prototype"].difference == pytest.approx(25.0) and wins["prototype"].clearly

    plain = results.to_dict()
    assert list(plain) == [
        "ablation",
        "shapes",
        "sensitivity",
        "timing",
        "official_runs",
        "picture_shots",
        "claim",
        "figures",
    ]
    episode_keys = ["mean", "ci95", "tasks", "seconds_per_task", "seconds_per_1000_tasks"]
    open_keys = ["open_auroc", "open_rejected", "known_rejected"]
    drawn_keys = ["unbalanced_share", "empty_class_share"]
    assert list(plain["ablation"][balanced]["toy"]["5-way 1-shot"]["internal"]) == episode_keys + drawn_keys
    assert (
        list(plain["ablation"][dirichlet]["toy"]["5-way 1-shot"]["internal"])
        == episode_keys + open_keys + drawn_keys
    )
    assert plain["shapes"][dirichlet] == {
        "queries": 15,
        "distribution": "dirichlet:2",
        "open_set": 2,
        "query_mode": "together",
        "balanced": False,
    }
    assert list(plain["sensitivity"]["n_top"][0]) == ["value"] + episode_keys + drawn_keys
    assert list(plain["timing"][0]) == ["layers"] + episode_keys + drawn_keys
    assert list(plain["official_runs"]["internal"]) == ["error_rate", "per_run"]
    assert plain["claim"]["toy 5-way 1-shot"]["prototype"] == {
        "difference": pytest.approx(25.0),
        "clearly": True,
    }
    assert plain["picture_shots"] == [1, 5]

    without_pictures = FewShotTask(FewShotConfig()).summarize(records[:4]).to_dict()
    assert "picture_shots" not in without_pictures
    assert list(without_pictures) == [
        "ablation",
        "shapes",
        "sensitivity",
        "timing",
        "official_runs",
        "claim",
        "figures",
    ]
    assert without_pictures["sensitivity"] == {} and without_pictures["timing"] == []


Z95 = 1.959963984540054  # the normal quantile of a two-sided 95 % interval


def episodes(accuracies, seconds_per_task, query_sets, unbalanced=0, empty=0, method="prototype", **changes):
    """A stored episode job's flattened record, 5-way 1-shot on ``toy``, balanced queries."""
    record = dict(
        study="ablation",
        dataset="toy",
        ways=5,
        shots=1,
        method=method,
        variable=None,
        queries=15,
        distribution="balanced",
        open_set=0,
        query_mode="together",
        accuracies=accuracies,
        log_likelihoods=[0.0] * len(accuracies),
        seconds=seconds_per_task * len(accuracies),
        seconds_per_task=seconds_per_task,
        query_sets=query_sets,
        unbalanced_query_sets=unbalanced,
        empty_class_query_sets=empty,
    )
    record.update(changes)
    return record


def summary_of(*records):
    results = FewShotTask(FewShotConfig()).summarize(list(records))
    ((cell,),) = [list(table["toy"].values()) for table in results.ablation.values()]
    ((_, summary),) = cell.items()
    return summary


def test_the_summary_pools_the_tasks_of_its_jobs_with_a_normal_95_percent_interval():
    summary = summary_of(episodes([0.6, 0.8], 0.002, 2, unbalanced=1, empty=1), episodes([1.0], 0.005, 6))
    # the tasks 0.6, 0.8, 1.0: mean 0.8, sample std 0.2 (ddof = 1), half-width z σ / √3
    assert summary.tasks == 3 and summary.mean == pytest.approx(80.0, abs=1e-12)
    assert summary.ci95 == pytest.approx(100 * Z95 * 0.2 / math.sqrt(3), rel=1e-12)
    # time: the mean over the jobs, not over the tasks (that would be 0.003)
    assert summary.seconds_per_task == pytest.approx(0.0035)
    assert summary.seconds_per_1000_tasks == pytest.approx(3.5)
    # the shares are over every query set drawn: 1 of 8 unbalanced (not the mean 0.25 of the jobs' shares)
    assert (summary.unbalanced_share, summary.empty_class_share) == (1 / 8, 1 / 8)
    assert summary.open_auroc is None and summary.open_rejected is None


def test_a_single_task_has_no_interval_and_no_query_set_gives_zero_shares():
    summary = summary_of(episodes([0.75], 0.01, 0))
    assert summary.mean == pytest.approx(75.0) and math.isnan(summary.ci95)
    assert (summary.unbalanced_share, summary.empty_class_share) == (0.0, 0.0)
    identical = summary_of(episodes([0.5, 0.5, 0.5], 0.01, 3))
    assert identical.ci95 == 0.0  # no spread: a zero-width interval, not NaN


@pytest.mark.parametrize(
    "share, method, breaks",
    [
        (None, "pt-map", False),  # not measured: nothing is claimed
        (0.0, "pt-map", False),
        (1e-9, "pt-map", True),
        (0.5, "tim", True),
        (0.5, "prototype", False),  # makes no balance assumption
        (0.5, "no-such-method", False),
    ],
)
def test_a_method_breaks_its_assumption_only_if_it_assumes_balance_and_a_set_was_unbalanced(
    share, method, breaks
):
    summary = EpisodeSummary(60.0, 1.0, 10, 0.01, 10.0, unbalanced_share=share)
    assert summary.breaks_assumption_of(method) is breaks


def test_points_flatten_their_summary_and_read_back_from_the_plain_form():
    opened = EpisodeSummary(
        55.0,
        2.5,
        40,
        0.004,
        4.0,
        open_auroc=0.7,
        open_rejected=0.3,
        known_rejected=0.1,
        unbalanced_share=1.0,
        empty_class_share=0.25,
    )
    closed = EpisodeSummary(90.0, float("nan"), 1, 0.002, 2.0)
    for point, first in ((SweepPoint(7.5, opened), "value"), (TimingPoint(3, closed), "layers")):
        plain = json.loads(json.dumps(results_to_dict(point)))
        assert list(plain)[0] == first and plain[first] == getattr(point, first)
        episodes = EpisodeSummary(**{k: v for k, v in plain.items() if k != first})
        again = type(point)(plain[first], episodes)
        if math.isnan(point.episodes.ci95):  # NaN is not equal to itself: compare the rest
            assert math.isnan(again.episodes.ci95)
            assert dataclasses.replace(again.episodes, ci95=0.0) == dataclasses.replace(closed, ci95=0.0)
        else:
            assert again == point
    assert list(results_to_dict(closed)) == [
        "mean",
        "ci95",
        "tasks",
        "seconds_per_task",
        "seconds_per_1000_tasks",
    ]
