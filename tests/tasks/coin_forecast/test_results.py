"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import json
import math

import pytest

from pdenets.experiments.results import results_to_dict
from pdenets.experiments.summary import Stats
from pdenets.tasks.coin_forecast.results import (
    ForecastCell,
    ForecastErrors,
    coin_vs_linear,
    diffusion_checks,
    is_coin,
)
from pdenets.tasks.coin_forecast.task import CoinForecastConfig, CoinForecastTask


def _forecast_errors(mse, mae, by_horizon, raw=None):
    """One run's test errors as ``forecast_metrics`` gives them (``raw``: the MAE in counts)."""
    errors = {
        "mse": mse,
        "mae": mae,
        "top5_share": 0.5,
        "mae_by_horizon": by_horizon,
        "mse_by_horizon": [mse] * 2,
    }
    if raw is not None:
        errors["mae_raw"], errors["mae_raw_by_horizon"] = raw, [raw, raw]
    return errors


def _forecast_record(dataset, model, seed, mse, coin=None, raw=None):
    record = {"dataset": dataset, "protocol": "ours", "model": model, "seed": seed, "seconds": 2.0 + seed}
    record.update(_forecast_errors(mse, mse / 2, [mse / 2, mse], raw), val_mse=mse - 0.2)
    if coin is not None:  # COIN over the model: (γ, r) and the diffused forecasts' errors
        step_size, num_steps, coin_mse = coin
        record["coin"] = {
            "step_size": step_size,
            "num_steps": num_steps,
            "val_mse": coin_mse - 0.2,
            "gain": 0.1,
            "lower_bound": 0.05,
            "blocks": 6,
            "selected_on": "val",
            **_forecast_errors(coin_mse, coin_mse / 2, [coin_mse / 2, coin_mse], raw),
        }
    return record


def test_forecast_results_are_typed_cells_with_the_verdicts_and_keep_the_plain_form():
    from pdenets.tasks.coin_forecast.results import CoinVsLinear, DiffusionOver, ForecastResults

    records = [
        _forecast_record("chickenpox", "linear", 0, 1.2, coin=(0.5, 2, 1.1)),
        _forecast_record("chickenpox", "coin-forecast", 0, 1.0),
        _forecast_record("chickenpox", "coin-forecast", 1, 0.6),
        _forecast_record("chickenpox", "window-mlp", 0, 1.4, coin=(0.0, 1, 1.4)),
        _forecast_record("chickenpox", "window-mlp", 1, 1.6, coin=(0.2, 3, 1.7)),
        _forecast_record("england_covid", "linear", 0, 0.5, coin=(0.0, 1, 0.5), raw=12.0),
    ]
    results = CoinForecastTask(CoinForecastConfig()).summarize(records)
    assert isinstance(results, ForecastResults)
    ours = results.table["chickenpox"]["ours"]
    coin = ours["coin-forecast"]
    assert (coin.runs, coin.seconds_per_run, coin.over, coin.chosen) == (2, 2.5, None, None)
    assert (coin.errors.mse.mean, coin.errors.mse.std, coin.errors.mse.count) == pytest.approx((0.8, 0.2, 2))
    assert coin.errors.mae_by_horizon == pytest.approx([0.4, 0.8]) and coin.errors.mae_raw is None
    over = ours["coin-over-window-mlp"]
    assert over.over == "window-mlp" and over.chosen == [(0.0, 1), (0.2, 3)]
    assert over.errors.mse.mean == pytest.approx(1.55) and over.val_mse.mean == pytest.approx(1.35)
    assert over.backbone_val_mse.mean == pytest.approx(1.3)  # the model's own, 1.4 and 1.6 less 0.2
    # the verdicts are drawn with the results: COIN (0.8 ± 0.2) against linear regression (1.2)
    verdict = results.coin_vs_linear["chickenpox/ours"]
    assert verdict == CoinVsLinear(
        pytest.approx(0.8), pytest.approx(0.2), 1.2, coin_beats_linear=True, clearly=True
    )
    assert "england_covid/ours" not in results.coin_vs_linear  # no coin-forecast there
    check = results.diffusion_check["chickenpox/ours"]
    assert check.over["linear"] == DiffusionOver(1.2, 1.1, coin_not_worse=True)
    assert check.over["window-mlp"] == DiffusionOver(pytest.approx(1.5), pytest.approx(1.55), False)
    assert (check.best_model, check.best_coin, check.best_coin_not_worse) == ("linear", "coin-forecast", True)
    assert results.sources == {"chickenpox": "chickenpox", "england_covid": "england_covid"}

    plain = results.to_dict()
    assert list(plain) == ["table", "sources", "coin_vs_linear", "diffusion_check", "figures"]
    entries = plain["table"]["chickenpox"]["ours"]
    assert list(entries) == [
        "linear",
        "coin-over-linear",
        "coin-forecast",
        "window-mlp",
        "coin-over-window-mlp",
    ]
    measured = ["mse", "mae", "top5_share", "mae_by_horizon", "mse_by_horizon"]
    assert list(entries["coin-forecast"]) == ["runs", "seconds_per_run"] + measured
    diffused = ["runs", "seconds_per_run", "over", "chosen", "val_mse", "backbone_val_mse"]
    assert list(entries["coin-over-window-mlp"]) == diffused + measured
    assert entries["coin-over-window-mlp"]["chosen"] == [[0.0, 1], [0.2, 3]]
    assert entries["coin-forecast"]["mse"] == pytest.approx(
        {"mean": 0.8, "std": 0.2, "min": 0.6, "max": 1.0, "median": 0.8, "count": 2}
    )
    # count series add the MAE in counts beside the scaled one, and per horizon last
    counts = plain["table"]["england_covid"]["ours"]["linear"]
    in_counts = [
        "mse",
        "mae",
        "mae_raw",
        "top5_share",
        "mae_by_horizon",
        "mse_by_horizon",
        "mae_raw_by_horizon",
    ]
    assert list(counts) == ["runs", "seconds_per_run"] + in_counts
    assert counts["mae_raw"]["mean"] == 12.0 and counts["mae_raw_by_horizon"] == [12.0, 12.0]
    assert plain["coin_vs_linear"]["chickenpox/ours"] == pytest.approx(
        {"coin_mse": 0.8, "coin_std": 0.2, "linear_mse": 1.2, "coin_beats_linear": True, "clearly": True}
    )
    assert list(plain["diffusion_check"]["chickenpox/ours"]) == [
        "over",
        "best_model",
        "best_model_mse",
        "best_coin",
        "best_coin_mse",
        "best_coin_not_worse",
    ]
    assert plain["diffusion_check"]["chickenpox/ours"]["over"]["linear"] == {
        "mse": 1.2,
        "coin_mse": 1.1,
        "coin_not_worse": True,
    }


def metrics(mse, mae=0.5, share=0.5, mae_h=(0.5, 0.5), mse_h=(1.0, 1.0), **raw):
    return dict(
        mse=mse, mae=mae, top5_share=share, mae_by_horizon=list(mae_h), mse_by_horizon=list(mse_h), **raw
    )


def cell(mse_values, over=None):
    errors = ForecastErrors.of([metrics(m) for m in mse_values])
    return ForecastCell(runs=len(mse_values), seconds_per_run=1.0, errors=errors, over=over)


def test_errors_over_the_seeds_are_the_population_statistics_and_the_horizon_means():
    runs = [
        metrics(1.0, mae=0.25, share=0.2, mae_h=(0.1, 0.4), mse_h=(0.5, 1.5)),
        metrics(2.0, mae=0.5, share=0.4, mae_h=(0.2, 0.8), mse_h=(1.5, 2.5)),
        metrics(4.0, mae=1.5, share=0.9, mae_h=(0.6, 2.4), mse_h=(3.5, 4.5)),
    ]
    errors = ForecastErrors.of(runs)
    # mean 7/3; squared deviations 16/9, 1/9, 25/9 over three seeds (ddof = 0): variance 14/9
    assert errors.mse.mean == pytest.approx(7 / 3, abs=1e-15)
    assert errors.mse.std == pytest.approx(math.sqrt(14) / 3, abs=1e-15)
    assert (errors.mse.min, errors.mse.max, errors.mse.median, errors.mse.count) == (1.0, 4.0, 2.0, 3)
    assert errors.mae.mean == pytest.approx(0.75) and errors.top5_share.median == 0.4
    assert errors.mae_by_horizon == pytest.approx([0.3, 1.2], abs=1e-15)  # per horizon, over the seeds
    assert errors.mse_by_horizon == pytest.approx([11 / 6, 17 / 6], abs=1e-15)
    assert errors.mae_raw is None and errors.mae_raw_by_horizon is None


def test_the_raw_count_errors_follow_the_first_run_and_a_nan_seed_is_left_out():
    raw = dict(mae_raw=10.0, mae_raw_by_horizon=[8.0, 12.0])
    errors = ForecastErrors.of(
        [metrics(1.0, **raw), metrics(float("nan"), mae_raw=20.0, mae_raw_by_horizon=[16.0, 24.0])]
    )
    assert errors.mae_raw == Stats(15.0, 5.0, 10.0, 20.0, 15.0, 2)
    assert errors.mae_raw_by_horizon == [12.0, 18.0]
    assert (errors.mse.mean, errors.mse.std, errors.mse.count) == (1.0, 0.0, 1)  # the NaN seed is not counted
    assert ForecastErrors.of([metrics(1.0), metrics(2.0, **raw)]).mae_raw is None  # the first run has none


@pytest.mark.parametrize(
    "coin_runs, linear, beats, clearly",
    [
        ([1.0, 1.0], 1.0, False, False),  # a tie is no win
        ([0.5, 1.5], 1.5, True, False),  # below by exactly one std (mean 1.0, std 0.5): not clearly
        ([0.5, 1.5], 1.5 + 1e-9, True, True),
        ([2.0, 4.0], 1.0, False, False),
    ],
)
def test_coin_against_linear_regression_at_the_thresholds(coin_runs, linear, beats, clearly):
    table = {"d": {"ours": {"coin-forecast": cell(coin_runs), "linear": cell([linear])}}}
    verdict = coin_vs_linear(table)["d/ours"]
    assert verdict.coin_mse == pytest.approx(sum(coin_runs) / 2) and verdict.linear_mse == linear
    assert (verdict.coin_beats_linear, verdict.clearly) == (beats, clearly)
    assert coin_vs_linear({"d": {"ours": {"linear": cell([linear])}}}) == {}  # COIN did not run


def test_coin_over_a_model_is_not_worse_within_1e_12_and_the_best_variants_are_named():
    table = {
        "d": {
            "ours": {
                "linear": cell([1.0]),
                "coin-over-linear": cell([1.0 + 5e-13], over="linear"),
                "last-value": cell([3.0]),
                "coin-over-last-value": cell([3.0 + 1e-10], over="last-value"),
                "coin-forecast": cell([0.9, 1.3]),
            },
            "plain-only": {"linear": cell([1.0])},
        }
    }
    (key,) = diffusion_checks(table)  # a protocol without a COIN variant gets no check
    check = diffusion_checks(table)[key]
    assert key == "d/ours" and set(check.over) == {"linear", "last-value"}
    assert check.over["linear"].coin_not_worse and not check.over["last-value"].coin_not_worse
    assert (check.best_model, check.best_model_mse) == ("linear", 1.0)
    # the COIN variants: coin-over-linear (1 + 5e-13) and coin-forecast (mean 1.1)
    assert check.best_coin == "coin-over-linear" and not check.best_coin_not_worse  # no tolerance here
    assert is_coin("coin-forecast", table["d"]["ours"]["coin-forecast"])
    assert not is_coin("linear", table["d"]["ours"]["linear"])


def test_a_cell_reads_back_from_its_plain_form():
    errors = ForecastErrors.of(
        [
            metrics(1.0, mae_raw=3.0, mae_raw_by_horizon=[2.0, 4.0]),
            metrics(3.0, mae_raw=5.0, mae_raw_by_horizon=[4.0, 6.0]),
        ]
    )
    original = ForecastCell(
        runs=2,
        seconds_per_run=0.5,
        over="linear",
        chosen=[(0.5, 2), (0.0, 1)],
        val_mse=Stats.of([0.8, 0.6]),
        backbone_val_mse=Stats.of([0.9, 0.7]),
        errors=errors,
    )
    plain = json.loads(json.dumps(results_to_dict(original)))
    stats_of = {"mse", "mae", "mae_raw", "top5_share"}
    rebuilt = ForecastCell(
        runs=plain["runs"],
        seconds_per_run=plain["seconds_per_run"],
        over=plain["over"],
        chosen=[tuple(pair) for pair in plain["chosen"]],
        val_mse=Stats(**plain["val_mse"]),
        backbone_val_mse=Stats(**plain["backbone_val_mse"]),
        errors=ForecastErrors(
            **{
                k: Stats(**v) if k in stats_of else v
                for k, v in plain.items()
                if k in ForecastErrors.__dataclass_fields__
            }
        ),
    )
    assert rebuilt == original
    assert plain["mae_raw"]["mean"] == 4.0 and plain["mae_raw_by_horizon"] == [3.0, 5.0]
