"""A saved forecaster forecasts the steps after a series' end as computed by hand: the last lags scaled as
the run scaled them, its closed form or coefficients, COIN's (γ, r) on the last day's graph, the scaling and
log(1 + y) undone; and it refuses, in one line naming the series, what it cannot read."""

import dataclasses

import numpy as np
import pytest
import torch

from pdenets.data.errors import DatasetError
from pdenets.data.temporal import TemporalGraphSeries
from pdenets.saved_model import SavedModelError, load_model, save_model
from pdenets.tasks.coin_forecast.model import ForecastModel
from pdenets.tasks.coin_forecast.protocol import ForecastSetup, protocol_windows

NODES, STEPS, LAGS, HORIZONS = 4, 24, 3, 2


def _graph(pairs):
    return (torch.tensor(pairs).T, None)


#: a path 0–1–2–3 on every day but the last, when the edges are 0–2 and 1–3
PATH = [[0, 1], [1, 0], [1, 2], [2, 1], [2, 3], [3, 2]]
CROSS = [[0, 2], [2, 0], [1, 3], [3, 1]]


def _series(counts=False, seed=0):
    rng = np.random.default_rng(seed)
    values = (
        rng.poisson(6.0, size=(STEPS, NODES)).astype(float) if counts else rng.normal(size=(STEPS, NODES))
    )
    graphs = [_graph(PATH)] * (STEPS - 1) + [_graph(CROSS)]
    return TemporalGraphSeries("toy", torch.tensor(values), graphs, raw_counts=counts, source="hand")


def _saved(tmp_path, series, model, transform="none", step_size=0.0, num_steps=0, coefficients=None):
    data = protocol_windows(series, "ours", ForecastSetup(LAGS, HORIZONS, 0.2, 0.2, transform))
    fitted = ForecastModel(
        model,
        LAGS,
        HORIZONS,
        data.transform,
        data.mean,
        data.std,
        [series.node_name(node) for node in range(NODES)],
        bool(series.node_names),
        series.step_unit,
        coefficients=coefficients,
        step_size=step_size,
        num_steps=num_steps,
    )
    folder = fitted.save(tmp_path / f"model-{model}")
    _, manifest = load_model(folder, task="coin-forecast")
    return data, ForecastModel.load(folder), manifest


def _row_normalized(pairs):
    weights = np.zeros((NODES, NODES))
    for i, j in pairs:
        weights[i, j] = 1.0
    return weights / weights.sum(1, keepdims=True)


def test_linear_coefficients_and_coins_diffusion_on_the_last_days_graph(tmp_path):
    series = _series()
    coefficients = torch.tensor([[0.2, -0.5, 1.0, 0.3], [0.1, 0.0, 0.7, -0.2]], dtype=torch.float64)
    data, saved, manifest = _saved(
        tmp_path, series, "linear", step_size=0.4, num_steps=2, coefficients=coefficients
    )
    assert manifest["lags"] == LAGS and manifest["coin"] == {"step_size": 0.4, "num_steps": 2}
    answer = saved.forecast(series, "later.json")
    mean, std = data.mean.numpy(), data.std.numpy()
    window = (series.values[-LAGS:].numpy() - mean) / std  # (L, N): the last three days, scaled
    design = np.concatenate([window.T, np.ones((NODES, 1))], 1)
    scaled = design @ coefficients.numpy().T  # (N, H)
    step = np.eye(NODES) - 0.4 * (np.eye(NODES) - _row_normalized(CROSS))  # rows sum to 1: degrees 1
    diffused = step @ step @ scaled
    np.testing.assert_allclose(answer.columns["linear"].numpy(), scaled * std[:, None] + mean[:, None])
    np.testing.assert_allclose(
        answer.columns["coin over linear"].numpy(), diffused * std[:, None] + mean[:, None]
    )
    # on the path graph of the other days the answer would differ: the last day's graph is the one used
    other = np.eye(NODES) - 0.4 * (np.eye(NODES) - _row_normalized(PATH))
    assert not np.allclose(other @ other @ scaled, diffused)
    assert answer.node_names == ["0", "1", "2", "3"] and answer.stamps == ["24", "25"]


def test_the_last_value_of_counts_comes_back_in_counts_after_log1p_and_gamma_zero_keeps_it(tmp_path):
    series = _series(counts=True)
    _, saved, manifest = _saved(tmp_path, series, "last-value", transform="log1p", step_size=0.0, num_steps=3)
    assert manifest["transform"] == "log1p"
    answer = saved.forecast(series, "later.json")
    last = series.values[-1].numpy()
    for column in ("last-value", "coin over last-value"):  # γ = 0: COIN kept the model's forecast
        np.testing.assert_allclose(answer.columns[column].numpy(), np.repeat(last[:, None], HORIZONS, 1))
    _, saved, manifest = _saved(tmp_path / "mean", series, "moving-average")
    average = saved.forecast(series, "later.json").columns["moving-average"].numpy()
    np.testing.assert_allclose(average[:, 0], series.values[-LAGS:].numpy().mean(0))


def test_a_series_the_model_cannot_read_is_refused_naming_it(tmp_path):
    series = _series(counts=True)
    _, saved, manifest = _saved(tmp_path, series, "last-value", transform="log1p")
    values = series.values.clone()
    values[-2, 1] = -1.0
    with pytest.raises(DatasetError, match="later.json: values of -1 or less cannot be read as counts"):
        saved.forecast(dataclasses.replace(series, values=values), "later.json")
    values[-2, 1] = float("nan")
    with pytest.raises(DatasetError, match="later.json: the last 3 steps hold missing or infinite values"):
        saved.forecast(dataclasses.replace(series, values=values), "later.json")
    values[-LAGS - 1, 1] = float("nan")  # a gap before the last lags is never read
    values[-2, 1] = 5.0
    saved.forecast(dataclasses.replace(series, values=values), "later.json")
    with pytest.raises(DatasetError, match="later.json: 2 steps, the model reads the last 3"):
        saved.forecast(dataclasses.replace(series, values=series.values[:2]), "later.json")
    with pytest.raises(DatasetError, match=r"later.json: one step is 'week', the model's 'step' \(another"):
        saved.forecast(dataclasses.replace(series, step_unit="week"), "later.json")
    fewer = dataclasses.replace(series, values=series.values[:, :3], graphs=[_graph([[0, 1], [1, 0]])])
    with pytest.raises(DatasetError, match="later.json: 3 nodes, the model was fitted on 4"):
        saved.forecast(fewer, "later.json")


def test_a_manifest_that_is_not_a_forecasters_is_refused(tmp_path):
    series = _series()
    _, saved, manifest = _saved(tmp_path, series, "last-value")
    tensors = {"mean": saved.mean, "std": saved.std}
    plain = {
        key: value
        for key, value in manifest.items()
        if key not in ("format", "pdenets", "task", "model", "shapes", "weights")
    }
    folder = save_model(tmp_path / "no-lags", tensors, task="coin-forecast", model="last-value",
                        manifest={k: v for k, v in plain.items() if k != "lags"})  # fmt: skip
    with pytest.raises(SavedModelError, match="no-lags/model.json: lags holds None, not a whole number"):
        ForecastModel.load(folder)
    folder = save_model(
        tmp_path / "unknown", tensors, task="coin-forecast", model="crystal-ball", manifest=plain
    )
    with pytest.raises(SavedModelError, match="not a forecaster's manifest"):
        ForecastModel.load(folder)
    folder = save_model(
        tmp_path / "learned", tensors, task="coin-forecast", model="window-mlp", manifest=plain
    )
    with pytest.raises(SavedModelError, match="learned/model.json: training is not a mapping of settings"):
        ForecastModel.load(folder)
    names = dict(plain, node_names=["0", "1", "1", "3"])
    folder = save_model(tmp_path / "twice", tensors, task="coin-forecast", model="last-value", manifest=names)
    with pytest.raises(SavedModelError, match="twice/model.json: node_names repeats '1'"):
        ForecastModel.load(folder)
    steps = dict(plain, coin={"step_size": 0.5, "num_steps": 10**12})
    folder = save_model(
        tmp_path / "endless", tensors, task="coin-forecast", model="last-value", manifest=steps
    )
    with pytest.raises(SavedModelError, match="endless/model.json: coin: num_steps must be at most 100,000"):
        ForecastModel.load(folder)
