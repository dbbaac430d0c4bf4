"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import dataclasses
import json

import numpy as np
import pytest
import torch
from datafiles import CHICKENPOX, ENGLAND_COVID, requires_data

from pdenets.data.temporal import TemporalGraphSeries, forecast_windows, load_temporal
from pdenets.tasks.coin_forecast.protocol import (
    ForecastSetup,
    closed_form_forecast,
    diffusion_graph,
    first_horizon_forecasts,
    forecast_metrics,
    linear_forecast,
    prepare_protocol,
    protocol_windows,
    protocols_for,
    pyg_scaled,
    split_days,
)

OURS = ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)


def _ring(nodes, stride=1):
    return [[i, (i + stride) % nodes] for i in range(nodes)] + [
        [(i + stride) % nodes, i] for i in range(nodes)
    ]


def _diffusing_series(path, steps=160, nodes=12, seed=0, time_varying=False):
    """x_{t+1} = 0.9 W x_t + noise on a ring (W row-normalized, no self-loops): the future is the neighbours'
    present."""
    rng = np.random.default_rng(seed)
    values = np.zeros((steps, nodes))
    values[0] = rng.normal(size=nodes)
    for t in range(1, steps):
        values[t] = 0.45 * (np.roll(values[t - 1], 1) + np.roll(values[t - 1], -1)) + 0.3 * rng.normal(
            size=nodes
        )
    if time_varying:
        content = {
            "y": values.tolist(),
            "edge_mapping": {
                "edge_index": {str(t): _ring(nodes, stride=1 + t % 2) for t in range(steps)},
                "edge_weight": {str(t): [1.0 + t % 3] * (2 * nodes) for t in range(steps)},
            },
        }
    else:
        content = {"FX": values.tolist(), "edges": _ring(nodes)}
    path.write_text(json.dumps(content))
    return values


def test_windows_and_linear_regression_are_exact():
    values = torch.arange(12.0, dtype=torch.float64).reshape(6, 2)
    windows = forecast_windows(values, lags=2, horizons=3)
    assert windows.inputs.shape == (4, 2, 2) and windows.targets.shape == (4, 2, 3)
    assert windows.inputs[1, 1].tolist() == [3.0, 5.0] and windows.targets[1, 1].tolist() == [7.0, 9.0, 11.0]
    assert torch.isnan(windows.targets[-1, :, 1:]).all() and windows.target_steps[2].tolist() == [4, 5, 6]
    # an exact linear AR relation is recovered exactly, horizon by horizon
    inputs = torch.randn(30, 4, 3, dtype=torch.float64)
    targets = torch.stack(
        [inputs @ torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64) + 0.3, inputs[..., -1] * 3 - 1], -1
    )
    mask = torch.ones_like(targets, dtype=torch.bool)
    torch.testing.assert_close(linear_forecast(inputs, targets, mask), targets)


def test_our_protocol_splits_by_target_day_and_scales_on_training_days(tmp_path):
    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=50, time_varying=True)
    series = load_temporal(path)
    data = prepare_protocol(series, "ours", OURS)
    val_start, test_start = data.split["val_start"], data.split["test_start"]
    assert (val_start, test_start) == (35, 40)
    day = data.target_steps[:, None, :].expand_as(data.targets)
    assert (day[data.masks["train"]] < val_start).all()
    assert ((day[data.masks["val"]] >= val_start) & (day[data.masks["val"]] < test_start)).all()
    assert (day[data.masks["test"]] >= test_start).all()
    # every pair inside the series is in exactly one split; pairs beyond its end in none
    total = sum(mask.int() for mask in data.masks.values())
    assert torch.equal(total.bool(), day < 50) and total.max() == 1
    torch.testing.assert_close(data.mean, series.values[:val_start].mean(0))
    torch.testing.assert_close(data.std, series.values[:val_start].std(0))
    # origin t diffuses on the graph of its last observed day t − 1
    origin = int(data.origins[7])
    expected = diffusion_graph(series.graph_at(origin - 1), series.num_nodes).to_dense()
    torch.testing.assert_close(data.graphs.graph(7).to_dense(), expected)
    assert not torch.equal(expected, diffusion_graph(series.graph_at(origin), series.num_nodes).to_dense())
    torch.testing.assert_close(expected.sum(1), torch.ones(12, dtype=torch.float64))
    assert torch.diagonal(expected).abs().max() == 0


@requires_data(CHICKENPOX)
def test_pyg_temporal_protocol_reproduces_the_linear_regression_reference():
    series = load_temporal("chickenpox")
    data = prepare_protocol(series, "pyg-temporal")
    assert data.inputs.shape == (517, 20, 4) and data.split["train_snapshots"] == 103
    prediction = closed_form_forecast("linear", data)  # fitted on the whole first 20 % (train and validation)
    error = (prediction - data.targets)[data.masks["test"]]
    assert abs(float(error.square().mean()) - 0.704) < 0.0005  # the number that library's users quote


@requires_data(ENGLAND_COVID)
def test_england_raw_mae_is_in_cases_per_region():
    series = load_temporal("england_covid")
    assert series.raw_counts and series.time_varying and series.values.shape == (61, 129)
    data = prepare_protocol(
        series, "ours", ForecastSetup(lags=7, horizons=7, test_fraction=0.2, val_fraction=0.1)
    )
    raw = series.values
    errors = [
        abs(float(raw[t - 1, i] - raw[t + h, i]))
        for t in range(7, 61)
        for h in range(7)
        if t + h >= data.split["test_start"] and t + h < 61
        for i in range(129)
    ]
    from pdenets.tasks.coin_forecast.protocol import forecast_metrics

    metrics = forecast_metrics(closed_form_forecast("last-value", data), data)
    assert metrics["mae_raw"] == pytest.approx(float(np.mean(errors)), rel=1e-9)


def test_near_silent_regions_take_the_median_regions_scale_and_bursty_counts_their_log():
    from pdenets.tasks.coin_forecast.protocol import region_scales

    days = torch.tensor([[0.0, 1.0, 10.0, 3.0], [0.0, 3.0, 30.0, 3.01], [0.0, 2.0, 20.0, 2.99]])
    scales = region_scales(days, counts=False)
    typical = float(days.std(0).median())
    assert scales.tolist() == pytest.approx(
        [typical, 1.0, 10.0, typical]
    )  # 0 and 0.01 are under typical / 10
    assert region_scales(days, counts=True)[0] == pytest.approx(max(typical, 1.0))


def test_bursty_counts_are_standardized_after_log1p_and_their_raw_mae_undoes_it(tmp_path):
    from pdenets.tasks.coin_forecast.protocol import forecast_metrics, protocol_windows

    path = tmp_path / "bursts.json"
    rng = np.random.default_rng(0)
    values = rng.poisson(2.0, size=(40, 5)).astype(float)
    values[-5:, 0] = 500.0  # one region bursts in the test period
    path.write_text(json.dumps({"edges": [[0, 1], [1, 2], [2, 3], [3, 4]], "FX": values.tolist()}))
    series = load_temporal(str(path))
    assert series.raw_counts
    setup = ForecastSetup(3, 1, 0.2, 0.1, "log1p")
    data = protocol_windows(series, "ours", setup)
    assert data.transform == "log1p"
    assert torch.allclose(data.inputs[0, :, 0], (torch.log1p(series.values[0]) - data.mean) / data.std)
    prediction = closed_form_forecast("last-value", data)
    metrics = forecast_metrics(prediction, data)
    test = data.masks["test"][..., 0]
    raw = (series.values[data.target_steps[:, 0]] - series.values[data.origins - 1])[test].abs().mean()
    assert metrics["mae_raw"] == pytest.approx(float(raw))
    plain = protocol_windows(series, "ours", dataclasses.replace(setup, transform="none"))
    assert plain.transform == "none" and forecast_metrics(closed_form_forecast("last-value", plain), plain)[
        "mae_raw"
    ] == pytest.approx(float(raw))


def test_a_region_at_exactly_a_tenth_of_the_median_scale_keeps_its_own():
    from pdenets.tasks.coin_forecast.protocol import region_scales

    days = torch.tensor([[0.0, 0.0, 0.0], [1.0, 10.0, 20.0], [2.0, 20.0, 40.0]])  # stds 1, 10, 20: median 10
    assert region_scales(days, counts=False).tolist() == [1.0, 10.0, 20.0]  # 1 = 10 / 10: its own scale
    below = days.clone()
    below[:, 0] *= 0.99
    assert region_scales(below, counts=False).tolist() == pytest.approx([10.0, 10.0, 20.0])


def _series(steps=30, nodes=7, *, scaling="standardize", lags=4, counts=False, seed=0):
    rng = np.random.default_rng(seed)
    values = torch.tensor(rng.normal(size=(steps, nodes)) * np.arange(1, nodes + 1) + 5.0)
    ring = torch.tensor([list(range(nodes)), [(i + 1) % nodes for i in range(nodes)]])
    return TemporalGraphSeries(
        "toy", values, [(ring, None)], raw_counts=counts, source="hand", pyg_lags=lags, pyg_scaling=scaling
    )


def test_the_pyg_temporal_protocol_holds_out_the_last_fifth_of_its_first_fifth_of_snapshots():
    series = _series(steps=30, lags=4)
    data = protocol_windows(series, "pyg-temporal")
    # origins 4 … 29: 26 snapshots, horizon 1; int(0.2 · 26) = 5 train, the last max(1, 5 // 5) validating
    assert data.horizons == 1 and data.lags == 4 and data.inputs.shape == (26, 7, 4)
    assert dict(data.split) == {"train_snapshots": 5, "val_snapshots": 1, "test_snapshots": 21}
    for name, rows in (("train", range(0, 4)), ("val", range(4, 5)), ("test", range(5, 26))):
        expected = torch.zeros(26, dtype=torch.bool)
        expected[list(rows)] = True
        assert torch.equal(data.masks[name][:, :, 0], expected[:, None].expand(26, 7)), name
    # standardized per node with the population std of the whole series, as the library's loader does
    values = series.values.numpy()
    scaled = (values - values.mean(0)) / values.std(0)
    np.testing.assert_allclose(data.inputs[3, 2].numpy(), scaled[3:7, 2])
    np.testing.assert_allclose(data.targets[3, :, 0].numpy(), scaled[7])
    assert data.transform == "none" and data.origins.tolist() == list(range(4, 30))


def test_pyg_scaling_keeps_a_constant_node_finite_and_follows_the_loader():
    series = _series(steps=10, nodes=3)
    series.values[:, 1] = 2.5  # a node that never moves
    scaled, mean, std = pyg_scaled(series)
    assert std[1] == 1.0 and torch.equal(scaled[:, 1], torch.zeros(10, dtype=torch.float64))
    assert float(std[0]) == pytest.approx(float(np.std(series.values[:, 0].numpy())), rel=1e-12)
    eps = dataclasses.replace(series, pyg_scaling="standardize+eps")
    assert pyg_scaled(eps)[2][1] == pytest.approx(1e-10)
    torch.testing.assert_close(pyg_scaled(eps)[0][:, 0], scaled[:, 0])
    raw, zeros, ones = pyg_scaled(dataclasses.replace(series, pyg_scaling="none"))
    assert torch.equal(raw, series.values) and not zeros.any() and (ones == 1).all()
    logged = dataclasses.replace(series, pyg_scaling="log1p")
    torch.testing.assert_close(pyg_scaled(logged)[0], torch.log1p(series.values))


def test_our_split_days_round_the_fractions_and_refuse_what_leaves_no_training_target():
    setup = ForecastSetup(lags=3, horizons=2, test_fraction=0.25, val_fraction=0.15)
    # 21 days: round(5.25) = 5 test days, round(3.15) = 3 validation days
    assert split_days("s", 21, setup) == (13, 16)
    # a fraction that rounds to no day still takes one
    assert split_days("s", 21, dataclasses.replace(setup, test_fraction=0.01, val_fraction=0.01)) == (19, 20)
    with pytest.raises(ValueError, match="horizons=21 reaches beyond the series: s has 21 steps"):
        split_days("s", 21, dataclasses.replace(setup, horizons=21))
    # val_start = lags leaves no target before validation; one more day does
    assert split_days("s", 10, dataclasses.replace(setup, lags=5, test_fraction=0.2, val_fraction=0.2)) == (
        6,
        8,
    )
    with pytest.raises(ValueError, match="s: 10 steps leave no training targets after 6 lags"):
        split_days("s", 10, dataclasses.replace(setup, lags=6, test_fraction=0.2, val_fraction=0.2))
    with pytest.raises(ValueError, match="needs its settings"):
        protocol_windows(_series(), "ours")
    with pytest.raises(ValueError, match="transform log1p is for count series; toy holds values"):
        protocol_windows(_series(), "ours", dataclasses.replace(setup, transform="log1p"))


def test_reference_forecasts_are_the_last_value_the_mean_and_least_squares_on_the_seen_targets():
    series = _series(steps=40, nodes=5, seed=1)
    setup = ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)
    data = protocol_windows(series, "ours", setup)
    last = closed_form_forecast("last-value", data)
    assert torch.equal(last, data.inputs[..., -1:].expand_as(data.targets))
    torch.testing.assert_close(
        closed_form_forecast("moving-average", data),
        data.inputs.mean(-1, keepdim=True).expand_as(data.targets),
    )
    with pytest.raises(ValueError, match="forecaster 'window-mlp' is trained, not a closed form"):
        closed_form_forecast("window-mlp", data)
    # linear regression is fitted on the training and validation targets: the test targets do not move it,
    # a validation target does
    linear = closed_form_forecast("linear", data)
    test = data.masks["test"]
    moved = dataclasses.replace(data, targets=torch.where(test, data.targets + 100.0, data.targets))
    torch.testing.assert_close(closed_form_forecast("linear", moved), linear)
    val = data.masks["val"]
    shifted = dataclasses.replace(data, targets=torch.where(val, data.targets + 1.0, data.targets))
    assert not torch.allclose(closed_form_forecast("linear", shifted), linear)


def test_test_errors_and_the_worst_five_regions_share_match_numpy():
    series = _series(steps=40, nodes=7, seed=2)
    data = protocol_windows(series, "ours", ForecastSetup(4, 2, 0.25, 0.1, "none"))
    prediction = data.targets + torch.tensor(np.random.default_rng(3).normal(size=data.targets.shape))
    metrics = forecast_metrics(prediction, data)
    error = (prediction - data.targets).numpy()
    mask = data.masks["test"].numpy()
    assert metrics["mse"] == pytest.approx(np.mean(error[mask] ** 2))
    assert metrics["mae"] == pytest.approx(np.mean(np.abs(error[mask])))
    for h in range(2):
        assert metrics["mse_by_horizon"][h] == pytest.approx(np.mean(error[..., h][mask[..., h]] ** 2))
        assert metrics["mae_by_horizon"][h] == pytest.approx(np.mean(np.abs(error[..., h][mask[..., h]])))
    per_region = np.array([np.sum(error[:, i][mask[:, i]] ** 2) for i in range(7)])
    assert metrics["top5_share"] == pytest.approx(np.sort(per_region)[-5:].sum() / per_region.sum())
    assert "mae_raw" not in metrics  # values, not counts: no error in cases
    # a perfect forecast: no error, and no share of nothing
    perfect = forecast_metrics(data.targets.clone(), data)
    assert perfect["mse"] == 0 and perfect["top5_share"] == 0


def test_the_plotted_forecasts_are_the_first_horizon_of_the_origins_whose_first_target_is_tested():
    series = _series(steps=20, nodes=3, seed=4)
    data = protocol_windows(series, "ours", ForecastSetup(3, 2, 0.2, 0.2))
    assert dict(data.split) == {"val_start": 12, "test_start": 16}
    prediction = (
        torch.arange(float(data.targets.numel()), dtype=torch.float64).reshape(data.targets.shape) / 3
    )
    plotted = first_horizon_forecasts(prediction, data)
    # origins 3 … 19; the first target of origin t is day t: days 16 … 19 are tested
    assert plotted["steps"] == [16, 17, 18, 19]
    rows = [16 - 3, 17 - 3, 18 - 3, 19 - 3]
    assert plotted["values"] == np.round(prediction[rows, :, 0].numpy(), 5).tolist()
    assert plotted["values"][0][1] == round((13 * 6 + 1 * 2) / 3, 5)  # window 13, node 1, horizon 0


def test_the_diffusion_graph_drops_self_loops_and_normalizes_weighted_rows():
    edges = torch.tensor([[0, 0, 0, 1, 2, 2], [0, 1, 2, 2, 0, 2]])
    weights = torch.tensor([5.0, 1.0, 3.0, 2.0, 4.0, 7.0])
    dense = diffusion_graph((edges, weights), 3).to_dense()
    expected = torch.tensor([[0.0, 0.25, 0.75], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(dense, expected)
    assert protocols_for("chickenpox") == ("ours", "pyg-temporal")
    assert protocols_for("my/series.JSON") == ("ours", "pyg-temporal") and protocols_for("a.csv") == ("ours",)


@pytest.mark.parametrize("transform", ["auto", "log1p", "none"])
def test_the_reports_setup_is_the_runs_setup_count_transform_included(transform):
    """The report rebuilds the series as the runs read it: a configuration's ``count_transform`` is the
    setup's ``transform`` in both (the report once fell back to ``auto``, captioning and unscaling a log1p
    run's forecasts as if untransformed)."""
    from pdenets.tasks.coin_forecast.config import CoinForecastConfig
    from pdenets.tasks.coin_forecast.task import _setup

    config = CoinForecastConfig(count_transform=transform)
    assert ForecastSetup.of(config) == _setup(config)
    assert ForecastSetup.of(config).transform == transform
