"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import pytest

from pdenets.experiments import run_task


def test_claims_report_measures_each_identity(tmp_path):
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask

    config = CoinClaimsConfig(samples=3000, sigmas=[0.5, 1.5], drop_rates=[0.25], workers=1, threads=1)
    outcome = run_task(CoinClaimsTask(config), out=tmp_path / "run", progress=False)
    assert outcome.summary.smoothing.rows[0].sigma == 0.5
    assert outcome.summary.figures == {"smoothing": "smoothing.png"}
    smoothing = outcome.results["smoothing"]["rows"]
    assert [row["sigma"] for row in smoothing] == [0.5, 1.5]
    assert all(row["max_error"] < 3 * row["max_half_width"] for row in smoothing)
    assert smoothing[1]["max_error_wrong_time"] > 3 * smoothing[1]["max_half_width"]
    dropout = outcome.results["dropout"]["rows"][0]
    assert dropout["max_relative_error"] < 0.05
    assert (
        abs(dropout["quadratic_mean_predicted"] - dropout["quadratic_mean_monte_carlo"])
        < 5 * dropout["quadratic_standard_error"]
    )
    assert all(row["max_abs_difference"] < 1e-12 for row in outcome.results["propagation"]["rows"])
    assert (tmp_path / "run" / "smoothing.png").stat().st_size > 1000


@pytest.mark.parametrize("check", ["smoothing", "dropout", "propagation"])
def test_every_setting_of_a_claim_job_reaches_the_result(check):
    """A claim job holds the settings its check computes with, and each of them changes the record."""
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask, run_claim

    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

    spec = CoinClaimsTask(
        CoinClaimsConfig(checks=[check], samples=200, sigmas=[0.5], drop_rates=[0.25])
    ).jobs()[0]
    unused = {
        "smoothing": ("drop_rates",),
        "dropout": ("sigmas",),
        "propagation": ("sigmas", "samples", "drop_rates"),
    }[check]
    assert all(not getattr(spec, name) for name in unused)  # empty: a change of them keeps this check's key
    assert_every_key_setting_matters(
        run_claim,
        spec,
        changes={"sigmas": (0.5, 1.0), "drop_rates": (0.5,), "check": None},
        skip={
            "check": "each check has its own settings; the three are checked one by one",
            **{name: f"not a setting of the {check} check" for name in unused},
        },
    )
