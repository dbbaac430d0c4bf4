"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import dataclasses
import json

import pytest

from pdenets.experiments.results import RunFacts
from pdenets.tasks.coin_claims.results import (
    CoinClaimsResults,
    DropoutCheck,
    PropagationCheck,
    PropagationRow,
    SmoothingCheck,
)


def test_claims_summarize_builds_typed_results_whose_plain_form_keeps_the_keys_and_their_order():
    """Hand-made records of the smoothing and dropout checks: typed entries, and a plain form that is each
    record less its job settings."""
    from pdenets.tasks.coin_claims.results import CoinClaimsResults, SmoothingRow
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask

    smoothing_row = {
        "sigma": 0.5,
        "max_error": 0.01,
        "max_half_width": 0.02,
        "inside": 7,
        "points": 8,
        "max_error_wrong_time": 0.3,
        "estimates": [0.1, 0.2],
        "exact": [0.11, 0.19],
        "half_widths": [0.02, 0.01],
    }
    dropout_row = {
        "p": 0.25,
        "variance_predicted": [1.0, 2.0],
        "variance_monte_carlo": [1.1, 1.9],
        "max_relative_error": 0.1,
        "quadratic_mean_predicted": 0.72,
        "quadratic_mean_monte_carlo": 0.73,
        "quadratic_standard_error": 0.002,
        "quadratic_without_diffusion": 0.7,
    }
    settings = {"sigmas": [], "samples": 100, "drop_rates": [], "seed": 0}
    smoothing = {"rows": [smoothing_row], "norm_omega_sq": 1.09, "seconds": 0.5, "key": "a1", "status": "ok"}
    dropout = {"rows": [dropout_row], "masks": 1000, "seconds": 2.0, "key": "b2", "status": "ok"}
    records = [
        {"check": "smoothing", **settings, "sigmas": [0.5], **smoothing},
        {"check": "dropout", **settings, "drop_rates": [0.25], **dropout},
    ]
    results = CoinClaimsTask(CoinClaimsConfig(checks=["smoothing", "dropout"])).summarize(records)
    assert isinstance(results, CoinClaimsResults) and results.propagation is None
    assert results.smoothing is not None and results.dropout is not None
    assert results.smoothing.rows == [SmoothingRow(**smoothing_row)]
    assert (results.smoothing.rows[0].inside, results.smoothing.rows[0].points) == (7, 8)
    assert (results.smoothing.norm_omega_sq, results.smoothing.key) == (1.09, "a1")
    assert (results.dropout.rows[0].p, results.dropout.masks, results.dropout.seconds) == (0.25, 1000, 2.0)

    plain = results.to_dict()
    assert plain == {"smoothing": smoothing, "dropout": dropout, "figures": {}}
    assert list(plain) == ["smoothing", "dropout", "figures"]
    assert list(plain["smoothing"]) == ["rows", "norm_omega_sq", "seconds", "key", "status"]
    assert list(plain["smoothing"]["rows"][0]) == list(smoothing_row)
    assert list(plain["dropout"]) == ["rows", "masks", "seconds", "key", "status"]
    assert list(plain["dropout"]["rows"][0]) == list(dropout_row)


PROPAGATION = {
    "rows": [
        {"graph": "random", "propagation": "GCN = 1 step, γ = 1", "max_abs_difference": 2e-16, "scale": 3.0},
        {"graph": "cora", "propagation": "SGC = K steps", "max_abs_difference": 4e-16, "scale": 1.5},
    ],
    "seconds": 0.25,
    "key": "p1",
    "status": "ok",
}
SMOOTHING = {
    "rows": [
        {
            "sigma": sigma,
            "max_error": 0.01 * sigma,
            "max_half_width": 0.02,
            "inside": 8,
            "points": 8,
            "max_error_wrong_time": 0.5,
            "estimates": [0.5, -0.25],
            "exact": [0.51, -0.24],
            "half_widths": [0.02, 0.02],
        }
        for sigma in (0.5, 1.0)
    ],
    "norm_omega_sq": 2.0,
    "seconds": 1.5,
    "key": "s1",
    "status": "ok",
}
DROPOUT = {
    "rows": [
        {
            "p": 0.5,
            "variance_predicted": [1.0],
            "variance_monte_carlo": [0.98],
            "max_relative_error": 0.02,
            "quadratic_mean_predicted": 2.0,
            "quadratic_mean_monte_carlo": 2.01,
            "quadratic_standard_error": 0.01,
            "quadratic_without_diffusion": 1.0,
        }
    ],
    "masks": 500,
    "seconds": 0.75,
    "key": "d1",
    "status": "ok",
}


def test_a_check_is_read_by_its_field_names_and_later_columns_are_ignored():
    record = {"check": "propagation", "seed": 3, **PROPAGATION}
    record["rows"] = [{**row, "added_later": 1} for row in PROPAGATION["rows"]]
    check = PropagationCheck.of(record)
    assert check.rows[1] == PropagationRow("cora", "SGC = K steps", 4e-16, 1.5)
    assert (check.seconds, check.key, check.status) == (0.25, "p1", "ok")
    assert not hasattr(check, "seed") and "added_later" not in dataclasses.asdict(check.rows[0])


@pytest.mark.parametrize("missing", ["masks", "rows"])
def test_a_record_without_a_field_the_check_reads_is_refused(missing):
    record = {name: value for name, value in DROPOUT.items() if name != missing}
    with pytest.raises(KeyError, match=missing):
        DropoutCheck.of(record)
    row = {name: value for name, value in DROPOUT["rows"][0].items() if name != "p"}
    with pytest.raises(KeyError, match="'p'"):
        DropoutCheck.of({**DROPOUT, "rows": [row]})


def test_the_plain_form_reads_back_to_the_same_results_through_json():
    results = CoinClaimsResults(
        smoothing=SmoothingCheck.of(SMOOTHING),
        dropout=DropoutCheck.of(DROPOUT),
        propagation=PropagationCheck.of(PROPAGATION),
    )
    plain = json.loads(json.dumps(results.to_dict()))
    assert plain == {"smoothing": SMOOTHING, "dropout": DROPOUT, "propagation": PROPAGATION, "figures": {}}
    again = CoinClaimsResults(
        smoothing=SmoothingCheck.of(plain["smoothing"]),
        dropout=DropoutCheck.of(plain["dropout"]),
        propagation=PropagationCheck.of(plain["propagation"]),
    )
    assert again == results
    assert [row.sigma for row in again.smoothing.rows] == [0.5, 1.0]  # the order of the sigmas
    with pytest.raises(dataclasses.FrozenInstanceError):
        again.dropout.masks = 1


def test_checks_that_did_not_run_are_left_out_and_the_run_facts_come_last():
    alone = CoinClaimsResults(propagation=PropagationCheck.of(PROPAGATION))
    assert list(alone.to_dict()) == ["propagation", "figures"]
    assert CoinClaimsResults().to_dict() == {"figures": {}}
    facts = RunFacts(
        runs_planned=3, runs_stored=1, wall_seconds=2.5, report_only=True, left_out=(("k", "x"),)
    )
    plain = dataclasses.replace(alone, run=facts, figures={"smoothing": "smoothing.png"}).to_dict()
    assert list(plain) == [
        "propagation",
        "runs_planned",
        "runs_stored",
        "wall_seconds",
        "report_only",
        "runs_left_out",
        "figures",
    ]
    assert plain["runs_left_out"] == [{"key": "k", "problem": "x"}]
    assert plain["figures"] == {"smoothing": "smoothing.png"}
