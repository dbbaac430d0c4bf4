"""``pdenets run coin-forecast`` and ``coin-tabular``: protocols checked against direct computations, toy
runs."""

import dataclasses
import json
import math

import numpy as np
import pytest
import torch
from datafiles import CHICKENPOX, ENGLAND_COVID, requires_data

from pdenets.cli import main
from pdenets.data.temporal import forecast_windows, load_temporal
from pdenets.experiments import ConfigError, run_task
from pdenets.experiments.store import ResultsStore
from pdenets.tasks.coin_forecast.protocol import (
    ForecastSetup,
    closed_form_forecast,
    diffusion_graph,
    linear_forecast,
    prepare_protocol,
)
from pdenets.tasks.coin_forecast.task import CoinForecastConfig, CoinForecastTask
from pdenets.tasks.coin_tabular.task import CoinTabularConfig, CoinTabularTask, labelled_split

OURS = ForecastSetup(lags=4, horizons=3, test_fraction=0.2, val_fraction=0.1)


def _records(run_dir, task):
    with ResultsStore(run_dir / "results.sqlite", task=task) as store:
        return [row.flat() for row in store.rows()]


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


def test_the_linear_baseline_gives_the_same_forecasts_on_every_call():
    """A noisy fit on a few thousand rows, repeated: bit-identical forecasts (torch's CPU lstsq is not)."""
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(400, 12, 8, dtype=torch.float64, generator=generator)
    targets = inputs[..., :3].cumsum(-1) + 0.1 * torch.randn(
        400, 12, 3, dtype=torch.float64, generator=generator
    )
    train = torch.rand(400, 12, 3, generator=generator) < 0.8
    first = linear_forecast(inputs, targets, train)
    assert all(torch.equal(first, linear_forecast(inputs, targets, train)) for _ in range(10))
    for dtype in (torch.float32, torch.float64):  # the forecasts keep the windows' dtype
        assert linear_forecast(inputs.to(dtype), targets.to(dtype), train).dtype == dtype


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


def test_coin_learns_to_diffuse_where_the_future_is_the_neighbours_present(tmp_path):
    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=240)
    config = CoinForecastConfig(
        datasets=[str(path)],
        protocols=["ours"],
        models=["linear", "window-mlp", "coin-forecast"],
        seeds=[0],
        lags=3,
        horizons=1,
        num_steps=1,
        step_size=0.9,
        epochs=300,
        patience=300,
        lr=0.02,
        workers=1,
        threads=1,
    )
    outcome = run_task(CoinForecastTask(config), out=tmp_path / "run", progress=False)
    table = outcome.results["table"]["ring"]["ours"]
    coin, plain, linear = (table[m]["mse"]["mean"] for m in ("coin-forecast", "window-mlp", "linear"))
    # the per-region models cannot see the neighbours; one diffusion step with γ = 1 of 0.9·x_t gives the
    # conditional mean 0.9 W x_t (test MSE 0.474 on this series). Started from a strong diffusion (γ = 0.9),
    # COIN keeps it and gets within 5 % of that; the convection alone cannot. (Started from γ = 0.2 or 0.5,
    # training settles in the other basin, γ ≈ 0.1, with the convection's error: the learned step size is not
    # convex.)
    assert coin < 0.75 * min(plain, linear) and coin < 1.05 * 0.4736
    coin_record = [r for r in _records(tmp_path / "run", "coin-forecast") if r["model"] == "coin-forecast"][0]
    learned = coin_record["learned_step_size"]
    assert learned > 0.85
    report = (tmp_path / "run" / "report.md").read_text()
    assert "COIN beats linear regression" in report
    for name in ("ring-horizons.png", "ring-ours-forecasts.png", "ring-ours-graph.png"):
        assert (tmp_path / "run" / name).stat().st_size > 1000


def test_toy_run_with_every_model_time_varying_graph_resumes(tmp_path):
    path = tmp_path / "daily.json"
    _diffusing_series(path, steps=40, nodes=6, time_varying=True)
    config = CoinForecastConfig(
        datasets=[str(path)],
        seeds=[0, 1],
        lags=3,
        horizons=2,
        epochs=5,
        patience=5,
        hidden_features=8,
        workers=1,
        threads=1,
    )
    outcome = run_task(CoinForecastTask(config), out=tmp_path / "run", progress=False)
    assert outcome.stored == 2 * (3 + 5 * 2)  # per protocol: closed-form once, learned per seed
    for protocol in ("ours", "pyg-temporal"):
        models = {
            "last-value",
            "moving-average",
            "linear",
            "window-mlp",
            "window-gcn",
            "cheb-gru",
            "pygt-gconv-gru",
        }
        table = outcome.results["table"]["daily"][protocol]
        assert set(table) == models | {"coin-forecast"} | {f"coin-over-{model}" for model in models}
        for model in models:  # where the model is kept (γ = 0), COIN over it is the model itself
            entry = table[f"coin-over-{model}"]
            assert len(entry["chosen"]) in (1, 2)
            if all(gamma == 0 for gamma, _ in entry["chosen"]):
                assert entry["mse"]["mean"] == pytest.approx(table[model]["mse"]["mean"], abs=1e-12)
    records = _records(tmp_path / "run", "coin-forecast")
    assert all(math.isfinite(r["mse"]) for r in records)
    assert "mae_raw" not in records[0]  # not counts
    again = run_task(CoinForecastTask(config), out=tmp_path / "run", progress=False)
    assert again.new == 0


def test_a_stored_forecast_without_its_coin_field_is_left_out_not_dropped_from_the_coin_rows(
    tmp_path, capsys
):
    """A run of a model COIN diffuses whose record lacks ``coin`` (an older version's, an edit) is named and
    left out; before, it silently removed the COIN-over row and changed the best COIN variant."""
    from ..helpers.stores import drop_field, edit_record

    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=60)
    out = tmp_path / "run"
    argv = ["run", "coin-forecast", "--dataset", str(path), "--out", str(out), "--no-progress"]
    argv += ["--models", "last-value,linear", "--set", "protocols=[ours]", "--set", "seeds=[0]"]
    assert main(argv) == 0
    key = edit_record(out, drop_field("coin"), where=lambda spec: spec["model"] == "linear")
    capsys.readouterr()
    assert main(argv + ["--report-only"]) == 0
    printed = capsys.readouterr()
    assert f"stored run {key}: field 'coin' is missing; left out of the report" in printed.err
    assert "1 left out as unreadable" in printed.out
    report = (out / "report.md").read_text()
    assert f"`{key}`: field 'coin' is missing" in report
    results = json.loads((out / "results.json").read_text())
    assert set(results["table"]["ring"]["ours"]) == {"last-value", "coin-over-last-value"}


def test_forecast_config_and_data_errors(tmp_path, capsys):
    with pytest.raises(ConfigError, match="neither england_covid"):
        CoinForecastTask(CoinForecastConfig(datasets=["mnist"])).validate()
    short = tmp_path / "short.json"
    short.write_text(json.dumps({"FX": [[0.0, 1.0]] * 20, "edges": [[0, 1]]}))
    with pytest.raises(ValueError, match="horizons=1000000000 reaches beyond the series: short has 20 steps"):
        prepare_protocol(load_temporal(short), "ours", dataclasses.replace(OURS, horizons=10**9))
    # the same check runs before any run starts: one line, exit status 2, no run folder
    code = main(
        [
            "run",
            "coin-forecast",
            "--dataset",
            str(short),
            "--horizons",
            "1000000000",
            "--out",
            str(tmp_path / "never"),
            "--no-progress",
        ]
    )
    assert code == 2 and not (tmp_path / "never").exists()
    assert (
        capsys.readouterr().err.strip()
        == "pdenets: error: horizons=1000000000 reaches beyond the series: short has 20 steps"
    )
    with pytest.raises(ConfigError, match="diffusion_step_sizes must be values in"):
        CoinForecastTask(CoinForecastConfig(diffusion_step_sizes=[0.5, 1.5])).validate()
    with pytest.raises(ConfigError, match="step_size must be <= 1"):
        CoinForecastTask(CoinForecastConfig(step_size=1.5)).validate()
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps({"FX": [[0.0, 1.0], [1.0, float("nan")]] * 3, "edges": [[0, 1]]}).replace("NaN", "NaN")
    )
    with pytest.raises(ValueError, match="non-finite value at step 1, node 1"):
        load_temporal(bad)
    bad.write_text(json.dumps({"FX": [[0.0, 1.0]] * 5, "edges": [[0, 7]]}))
    with pytest.raises(ValueError, match="names node 7 but the series has 2 nodes"):
        load_temporal(bad)
    bad.write_text(
        json.dumps(
            {"y": [[1, 2]] * 5, "edge_mapping": {"edge_index": {"0": [[0, 1]]}, "edge_weight": {"0": [1.0]}}}
        )
    )
    with pytest.raises(ValueError, match="no graph for step 1"):
        load_temporal(bad)
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_temporal(bad)
    with pytest.raises(FileNotFoundError, match="missing dataset file"):
        load_temporal(tmp_path / "absent.json")
    assert main(["run", "coin-forecast", "--dataset", "cora", "--out", str(tmp_path / "x")]) == 2
    assert "neither england_covid" in capsys.readouterr().err


def test_labelled_splits_are_stratified_reproducible_and_distinct():
    labels = np.array([0] * 30 + [1] * 50 + [2] * 20)
    split = labelled_split(labels, 5, seed=3)
    assert np.bincount(labels[split]).tolist() == [5, 5, 5]
    assert np.array_equal(split, labelled_split(labels, 5, seed=3))
    assert not np.array_equal(split, labelled_split(labels, 5, seed=4))
    with pytest.raises(ConfigError, match="class 2 has 20 samples"):
        labelled_split(labels, 20, seed=0)


def test_tabular_run_on_a_csv_file(tmp_path, capsys):
    rng = np.random.default_rng(0)
    rows = ["a,b,c,kind"]
    for label, centre in (("benign", -1.5), ("malignant", 1.5)):
        for _ in range(60):
            x = rng.normal(centre, 1.0, size=3)
            rows.append(f"{x[0]:.5f},{x[1]:.5f},{x[2]:.5f},{label}")
    path = tmp_path / "blobs.csv"
    path.write_text("\n".join(rows) + "\n")
    config = CoinTabularConfig(
        datasets=[str(path)],
        labels_per_class=[5],
        splits=2,
        epochs=30,
        hidden_features=16,
        workers=1,
        threads=1,
    )
    outcome = run_task(CoinTabularTask(config), out=tmp_path / "run", progress=False)
    table = outcome.results["table"]["blobs"]["5"]
    assert set(table) == {"coin", "mlp", "label-spreading"} and all(e["splits"] == 2 for e in table.values())
    assert all(e["mean"] > 85 for e in table.values())  # two well-separated blobs
    assert all(r["unlabelled"] == 110 for r in _records(tmp_path / "run", "coin-tabular"))
    assert "COIN > MLP on splits" in (tmp_path / "run" / "report.md").read_text()
    assert (tmp_path / "run" / "blobs-accuracy.png").stat().st_size > 1000
    path.write_text("a,kind\n1.0,x\nfoo,y\n")
    assert main(["run", "coin-tabular", "--dataset", str(path), "--out", str(tmp_path / "y")]) == 2
    assert "line 3, column 'a': 'foo' is not a number" in capsys.readouterr().err
    path.write_text("a,kind\n1.0,x\n2.0,x\n")
    with pytest.raises(ValueError, match="has 1 class"):
        CoinTabularTask(CoinTabularConfig(datasets=[str(path)])).prepare()


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
    assert list(plain) == ["table", "coin_vs_mlp", "figures"]
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


def _learned_run(path, model="window-mlp", seed=0, **training):
    from pdenets.tasks.coin_forecast.task import ForecastJob, ForecastTraining, train_forecaster

    series = load_temporal(path)
    data = prepare_protocol(series, "ours", OURS)
    settings = {
        "hidden_features": 8,
        "step_size": 0.1,
        "num_steps": 1,
        "learn_step_size": True,
        "epochs": 400,
        "patience": 30,
        "lr": 0.01,
        "weight_decay": 0.0,
        "batch_rows": 48,
        "eval_steps": 5,
        "min_improvement": 0.005,
        **training,
    }
    job = ForecastJob(str(path), "ours", model, seed, OURS, ForecastTraining(**settings), "cpu")
    return data, train_forecaster(job, data)[:2]


def test_mini_batch_training_stops_early_and_validates_on_schedule(tmp_path):
    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=160)
    data, (prediction, info) = _learned_run(path)
    train_origins = int(data.masks["train"].flatten(1).any(1).sum())
    steps_per_pass = math.ceil(train_origins / (48 // 12))
    assert (
        info["steps"] < 400 * steps_per_pass and info["epochs"] < 400
    )  # stopped by patience, not by the cap
    assert info["best_step"] <= info["steps"] and prediction.shape == data.targets.shape
    # validations every 5 steps and at the end of every pass
    steps = [point["step"] for point in _learned_run(path, patience=10_000, epochs=2)[1][1]["curve"]]
    expected = sorted({s for s in range(5, 2 * steps_per_pass + 1, 5)} | {steps_per_pass, 2 * steps_per_pass})
    assert steps == expected
    # the batch size reaches the arithmetic: another batch gives another trajectory
    _, (other, _) = _learned_run(path, batch_rows=96)
    assert not torch.allclose(other, prediction)


def test_the_forecast_graph_loses_its_self_loops_before_its_rows_are_normalized():
    # node 0 has a self-loop of weight 3 and one neighbour: its row is (0, 1), not (0, 1/4) (normalized, then
    # cut)
    edges = (torch.tensor([[0, 0, 1], [0, 1, 0]]), torch.tensor([3.0, 1.0, 2.0]))
    dense = diffusion_graph(edges, 2).to_dense()
    torch.testing.assert_close(dense, torch.tensor([[0.0, 1.0], [1.0, 0.0]], dtype=torch.float64))


def test_weight_decay_never_reaches_the_learned_step_size(tmp_path):
    """Without edges the loss does not depend on γ: only a weight decay on its logit could move it (towards
    γ_max / 2 = 0.5), and the optimizer gives the logit none."""
    path = tmp_path / "isolated.json"
    path.write_text(json.dumps({"FX": np.random.default_rng(0).normal(size=(60, 4)).tolist(), "edges": []}))
    _, (_, info) = _learned_run(
        path,
        model="coin-forecast",
        epochs=3,
        patience=100,
        lr=0.05,
        weight_decay=1.0,
        batch_rows=16,
        min_improvement=0.0,
    )
    assert info["steps"] > 10
    assert info["learned_step_size"] == pytest.approx(0.1, rel=1e-6)


def test_the_batch_order_is_drawn_from_the_runs_seed(tmp_path, monkeypatch):
    import pdenets.tasks.coin_forecast.task as coin_forecast

    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=40, nodes=3)
    seeds, fit_steps = [], coin_forecast.fit_steps

    def spy(*args, generator, **kwargs):
        seeds.append(generator.initial_seed())
        return fit_steps(*args, generator=generator, **kwargs)

    monkeypatch.setattr(coin_forecast, "fit_steps", spy)
    for seed in (7, 3):
        _learned_run(path, seed=seed, epochs=1)
    assert seeds == [7, 3]


def test_diffusion_of_forecasts_is_explicit_steps_on_each_origins_graph(tmp_path):
    from pdenets.models.coin_forecast_diffusion import diffuse_forecasts

    path = tmp_path / "daily.json"
    _diffusing_series(path, steps=30, nodes=6, time_varying=True)
    data = prepare_protocol(load_temporal(path), "ours", OURS)
    forecasts = torch.randn_like(data.targets)
    out = diffuse_forecasts(forecasts, data.graphs, 0.3, 2)
    for origin in (0, 5, len(forecasts) - 1):
        weights = data.graphs.graph(origin).to_dense()
        step = torch.eye(6, dtype=torch.float64) - 0.3 * (torch.diag(weights.sum(1)) - weights)
        torch.testing.assert_close(out[origin], step @ step @ forecasts[origin])


def test_coin_over_any_model_never_has_a_higher_validation_error_and_finds_the_diffusion(tmp_path):

    path = tmp_path / "ring.json"
    _diffusing_series(path, steps=240)
    data = prepare_protocol(load_temporal(path), "ours", dataclasses.replace(OURS, horizons=1))
    grid, steps = [0.0, 0.1, 0.5, 0.9, 1.0], [1, 2, 3]
    for model in ("last-value", "moving-average", "linear"):
        forecasts = closed_form_forecast(model, data)
        choice = _choose(forecasts, data, grid, steps)
        backbone_val = float(((forecasts - data.targets)[data.masks["val"]]).square().mean())
        assert (
            choice.selection_mse <= backbone_val and choice.blocks == 24
        )  # 24 validation days, one per block
        if model == "last-value":  # the truth is 0.9 W x_t: one full step of the last value is nearly it
            assert choice.step_size >= 0.9 and choice.num_steps == 1 and choice.lower_bound > 0
            test = data.masks["test"]
            assert float((choice.forecasts - data.targets)[test].square().mean()) < 0.6 * float(
                (forecasts - data.targets)[test].square().mean()
            )
    # exact forecasts are kept: no diffusion can gain on them
    choice = _choose(data.targets, data, grid, steps)
    assert (
        choice.step_size == 0.0
        and choice.selection_mse == 0.0
        and torch.equal(choice.forecasts, data.targets)
    )


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


def test_the_region_graph_compares_the_forecaster_that_diffuses_itself_with_its_convection():
    from pdenets.tasks.coin_forecast.config import CONVECTION_ALONE, LEARNED
    from pdenets.tasks.coin_forecast.protocol import diffuses_itself
    from pdenets.tasks.coin_forecast.report import _diffused_and_convection

    assert set(CONVECTION_ALONE) == {model for model in LEARNED if diffuses_itself(model)}
    assert all(m in LEARNED and not diffuses_itself(m) for m in CONVECTION_ALONE.values())
    (diffused, convection), *_ = CONVECTION_ALONE.items()
    assert _diffused_and_convection(["linear", convection, "window-gcn", diffused]) == (diffused, convection)
    assert _diffused_and_convection(["linear", diffused, "window-gcn"]) is None  # nothing to compare with


def test_every_setting_of_a_forecast_job_reaches_the_result(tmp_path):
    from pdenets.tasks.coin_forecast.task import DiffusionGrid, ForecastJob, ForecastTraining

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

    first, second = tmp_path / "ring.json", tmp_path / "other.json"
    _diffusing_series(first, steps=60)
    _diffusing_series(second, steps=60, seed=1)
    # 18 validation days: 9 blocks of 2, enough for COIN's diffusion to be judged (fewer keep the model)
    setup = ForecastSetup(lags=3, horizons=2, test_fraction=0.2, val_fraction=0.3)
    training = ForecastTraining(
        hidden_features=8,
        step_size=0.1,
        num_steps=1,
        learn_step_size=True,
        epochs=4,
        patience=6,
        lr=0.01,
        weight_decay=0.0,
        batch_rows=24,
        eval_steps=3,
        min_improvement=0.005,
    )
    spec = ForecastJob(
        str(first),
        "ours",
        "coin-forecast",
        0,
        setup,
        training,
        "cpu",
        DiffusionGrid(step_sizes=(0.0, 0.5, 1.0), num_steps=(1, 2)),
    )
    assert_every_key_setting_matters(
        CoinForecastTask.run_job,
        spec,
        changes={
            "dataset": str(second),
            "protocol": "pyg-temporal",
            "model": "window-mlp",
            "training.epochs": 1,
            "training.patience": 1,
            "training.eval_steps": 1,
            "training.min_improvement": 0.9,
            "training.weight_decay": 0.5,
            "training.batch_rows": 48,
            "diffusion.num_steps": (1, 5),
            "diffusion.step_sizes": (0.0, 0.3),
        },
        skip={
            "device": "one device on a CPU-only machine",
            "setup.transform": "the fixture is no count series (auto is none); the log1p test checks the "
            "transform",
            "diffusion": "COIN's forecasts leave no gain that clears the noise here; checked below on the "
            "last "
            "value",
        },
        ignore=("seconds", "curve"),
    )
    # the diffusion grid of COIN over a model whose forecasts the diffusion clearly improves (the last value)
    closed = dataclasses.replace(spec, model="last-value", training=None)
    assert_every_key_setting_matters(
        CoinForecastTask.run_job,
        closed,
        changes={
            "dataset": str(second),
            "protocol": "pyg-temporal",
            "model": "moving-average",
            "diffusion.num_steps": (3, 5),
            "diffusion.step_sizes": (0.0, 0.3),
        },
        skip={
            "device": "one device on a CPU-only machine",
            "seed": "a closed-form forecast draws nothing",
            "setup.transform": "the fixture is no count series (auto is none); the log1p test checks the "
            "transform",
        },
        ignore=("seconds", "curve"),
    )


@pytest.mark.parametrize("model", ["coin", "mlp", "label-spreading"])
def test_every_setting_of_a_tabular_job_reaches_the_result(tmp_path, model):
    from pdenets.tasks.coin_tabular.task import run_tabular_job

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

    rng = np.random.default_rng(0)
    for name, spread in (("blobs.csv", 1.0), ("wider.csv", 2.0)):
        rows = ["a,b,c,kind,other"]
        for label, centre in ((0, -1.0), (1, 1.0)):  # two label columns: "kind" by blob, "other" by parity
            for index in range(30):
                x = rng.normal(centre, spread, size=3)
                rows.append(f"{x[0]:.5f},{x[1]:.5f},{x[2]:.5f},{label},{index % 2}")
        (tmp_path / name).write_text("\n".join(rows) + "\n")
    config = CoinTabularConfig(
        datasets=[str(tmp_path / "blobs.csv")],
        labels_per_class=[3],
        splits=1,
        epochs=5,
        hidden_features=8,
        label_column="kind",
        models=[model],
    )
    spec = CoinTabularTask(config).jobs()[0]
    assert_every_key_setting_matters(
        run_tabular_job,
        spec,
        changes={
            "dataset": str(tmp_path / "wider.csv"),
            "label_column": "other",
            "diffusion.sigma_neighbor": 2,
            "mlp.dropout": 0.5,
            "spreading.spreading_alpha": 0.5,
        },
        skip={
            "device": "one device on a CPU-only machine",
            "model": "each model has its own settings; the three are checked one by one",
            "split_digest": "the digest of the user's split, checked against it "
            "(tests/tasks/test_tabular_split.py: an edited file, other runs)",
        },
    )


@pytest.mark.parametrize("check", ["smoothing", "dropout", "propagation"])
def test_every_setting_of_a_claim_job_reaches_the_result(check):
    """A claim job holds the settings its check computes with, and each of them changes the record."""
    from pdenets.tasks.coin_claims.task import CoinClaimsConfig, CoinClaimsTask, run_claim

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

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
            "device": "one device on a CPU-only machine",
            **{name: f"not a setting of the {check} check" for name in unused},
        },
    )


# ----------------------------------------------------------------------------------------
# COIN over a model: diffusion only where the selection days show a gain beyond their noise


def _selection_data(days, gain_per_day, noise, seed=0, nodes=4):
    """Validation entries of ``days`` one-horizon origins where diffusing by one step changes the squared
    error by ``gain_per_day`` plus noise: the target is the neighbours' mean, the model predicts the own
    value."""
    from pdenets.operators.slice_graphs import SliceGraphs

    generator = torch.Generator().manual_seed(seed)
    ring = diffusion_graph(
        (torch.tensor([[i for i in range(nodes)], [(i + 1) % nodes for i in range(nodes)]]), None), nodes
    )
    prediction = torch.randn(days, nodes, 1, generator=generator, dtype=torch.float64)
    neighbours = prediction - SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long)).laplacian(
        prediction
    )
    targets = (
        gain_per_day * neighbours
        + (1 - gain_per_day) * prediction
        + noise * torch.randn(days, nodes, 1, generator=generator, dtype=torch.float64)
    )
    mask = torch.ones(days, nodes, 1, dtype=torch.bool)
    return prediction, _Selection(
        targets=targets,
        masks={"val": mask},
        target_steps=torch.arange(days)[:, None],
        graphs=SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long)),
    )


@dataclasses.dataclass(frozen=True)
class _Selection:
    """The parts of a protocol's windows that COIN's choice reads."""

    targets: torch.Tensor
    masks: dict
    target_steps: torch.Tensor
    graphs: object


def _choose(prediction, data, step_sizes, num_steps, **options):
    """COIN's choice on the validation entries of a protocol's windows (or of a :class:`_Selection`)."""
    from pdenets.models.coin_forecast_diffusion import choose_diffusion

    graphs = data.graphs
    return choose_diffusion(
        prediction,
        data.targets,
        graphs,
        data.target_steps,
        data.masks["val"],
        step_sizes,
        num_steps,
        **options,
    )


def test_one_validation_snapshot_never_buys_diffusion():

    # the diffusion helps on the one validation day, and would help on test: too little to tell, the model is
    # kept
    prediction, data = _selection_data(days=1, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (0.0, 0, 1)  # one block: too few to judge
    assert torch.equal(choice.forecasts, prediction)
    # 30 days of the same gain: diffusion is taken, the strongest candidate (γ = 1, one step: the neighbours'
    # mean)
    prediction, data = _selection_data(days=30, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (1.0, 1, 30) and choice.lower_bound > 0
    # 30 days of pure noise: no candidate's bound clears zero
    prediction, data = _selection_data(days=30, gain_per_day=0.0, noise=1.0)
    kept = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (kept.step_size, kept.blocks) == (0.0, 30)  # kept with every block judged: not "too few blocks"


def test_the_lower_bound_is_students_on_block_means():
    from scipy.stats import t as student

    from pdenets.models.coin_forecast_diffusion import block_gains, diffuse_forecasts

    prediction, data = _selection_data(days=12, gain_per_day=0.6, noise=0.2, seed=4)
    choice = _choose(prediction, data, [0.5], [1])
    diffused = diffuse_forecasts(prediction, data.graphs, 0.5, 1)
    gains = ((prediction - data.targets).square() - (diffused - data.targets).square()).mean(
        (1, 2)
    )  # per day
    bound = float(gains.mean() - student.ppf(0.95, 11) * gains.std() / math.sqrt(12))
    assert bound == pytest.approx(0.3826650824, abs=1e-9)  # this seed's days: a clear but noisy gain
    assert (choice.step_size, choice.blocks) == (0.5, 12) and choice.lower_bound == pytest.approx(bound)
    assert choice.gain == pytest.approx(float(gains.mean()))
    assert _choose(prediction, data, [0.5], [1], confidence=0.9999).step_size == 0.0  # a stricter bound
    assert torch.allclose(
        block_gains(prediction, diffused, data.targets, data.masks["val"], data.target_steps, 3),
        gains.reshape(4, 3).mean(1),
    )


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


def test_the_old_recurrent_name_says_what_it_became(tmp_path):
    with pytest.raises(ConfigError, match="gconv-gru was renamed cheb-gru"):
        CoinForecastConfig(models=["gconv-gru"]).validate()


def test_exactly_five_blocks_are_enough_to_judge_a_diffusion_and_four_are_not():
    from pdenets.models.coin_forecast_diffusion import MIN_SELECTION_BLOCKS

    assert MIN_SELECTION_BLOCKS == 5
    prediction, data = _selection_data(days=5, gain_per_day=1.0, noise=0.0)
    choice = _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2])
    assert (choice.step_size, choice.num_steps, choice.blocks) == (1.0, 1, 5)
    prediction, data = _selection_data(days=4, gain_per_day=1.0, noise=0.0)
    assert (_choose(prediction, data, [0.0, 0.5, 1.0], [1, 2]).step_size, choice.blocks) == (0.0, 5)
    assert _choose(prediction, data, [0.0, 0.5, 1.0], [1, 2]).blocks == 4


def _three_horizon_selection(origins, seed=0, nodes=4):
    """Validation windows of ``origins`` origins and horizons 1..3 (each target day forecast by up to three
    origins): the target is the neighbours' mean, the model predicts the own value."""
    from pdenets.operators.slice_graphs import SliceGraphs

    generator = torch.Generator().manual_seed(seed)
    ring = diffusion_graph(
        (torch.tensor([[i for i in range(nodes)], [(i + 1) % nodes for i in range(nodes)]]), None), nodes
    )
    days = origins + 2
    values = torch.randn(days, nodes, generator=generator, dtype=torch.float64)
    graphs = SliceGraphs([ring], nodes, ids=torch.zeros(days, dtype=torch.long))
    neighbours = values - graphs.laplacian(values[:, :, None])[:, :, 0]
    target_steps = torch.arange(origins)[:, None] + torch.arange(3)
    prediction = values[target_steps].permute(0, 2, 1)  # (S, N, H)
    targets = neighbours[target_steps].permute(0, 2, 1) + 0.05 * torch.randn(
        origins, nodes, 3, generator=generator, dtype=torch.float64
    )
    mask = torch.ones(origins, nodes, 3, dtype=torch.bool)
    window_graphs = SliceGraphs([ring], nodes, ids=torch.zeros(origins, dtype=torch.long))
    return prediction, _Selection(targets, {"val": mask}, target_steps, window_graphs)


def test_three_horizons_make_blocks_of_three_target_days_and_the_bound_counts_blocks():
    """H = 3: the gains are grouped by distinct target day in blocks of 3 days (15 days: 5 blocks, judged; 14
    days: 4 blocks, the model kept), and Student's bound has blocks − 1 degrees of freedom."""
    from scipy.stats import t as student

    from pdenets.models.coin_forecast_diffusion import block_gains, diffuse_forecasts

    prediction, data = _three_horizon_selection(origins=13)  # target days 0..14
    choice = _choose(prediction, data, [1.0], [1])
    assert choice.blocks == 5 and choice.step_size == 1.0
    diffused = diffuse_forecasts(prediction, data.graphs, 1.0, 1)
    gains = block_gains(prediction, diffused, data.targets, data.masks["val"], data.target_steps, 3)
    assert gains.shape == (5,)
    bound = float(gains.mean() - student.ppf(0.95, 4) * gains.std() / math.sqrt(5))
    assert choice.lower_bound == pytest.approx(bound)
    prediction, data = _three_horizon_selection(origins=12)  # target days 0..13: 4 whole blocks
    kept = _choose(prediction, data, [1.0], [1])
    assert (kept.step_size, kept.blocks) == (0.0, 4)


def test_a_region_at_exactly_a_tenth_of_the_median_scale_keeps_its_own():
    from pdenets.tasks.coin_forecast.protocol import region_scales

    days = torch.tensor([[0.0, 0.0, 0.0], [1.0, 10.0, 20.0], [2.0, 20.0, 40.0]])  # stds 1, 10, 20: median 10
    assert region_scales(days, counts=False).tolist() == [1.0, 10.0, 20.0]  # 1 = 10 / 10: its own scale
    below = days.clone()
    below[:, 0] *= 0.99
    assert region_scales(below, counts=False).tolist() == pytest.approx([10.0, 10.0, 20.0])
