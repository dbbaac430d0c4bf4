"""A saved forecaster forecasts the steps after a series' end as computed by hand: the last lags scaled as
the run scaled them, its closed form or coefficients, COIN's (γ, r) on the last day's graph, the scaling and
log(1 + y) undone; and it refuses, in one line naming the series, what it cannot read."""

import dataclasses

import numpy as np
import pytest
import torch

from pdenets.data.errors import DatasetError
from pdenets.data.temporal import TemporalGraphSeries
from pdenets.saved_model import SavedModelError, save_model
from pdenets.tasks.coin_forecast.protocol import ForecastSetup, protocol_windows
from pdenets.tasks.coin_forecast.saved import forecast_series, load_forecast_model, save_forecast_model

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
    folder = save_forecast_model(
        tmp_path / f"model-{model}",
        model=model,
        data=data,
        training=None,
        network=None,
        coefficients=coefficients,
        step_size=step_size,
        num_steps=num_steps,
        about={},
    )
    tensors, manifest = load_forecast_model(folder)
    return data, tensors, manifest


def _row_normalized(pairs):
    weights = np.zeros((NODES, NODES))
    for i, j in pairs:
        weights[i, j] = 1.0
    return weights / weights.sum(1, keepdims=True)


def test_linear_coefficients_and_coins_diffusion_on_the_last_days_graph(tmp_path):
    series = _series()
    coefficients = torch.tensor([[0.2, -0.5, 1.0, 0.3], [0.1, 0.0, 0.7, -0.2]], dtype=torch.float64)
    data, tensors, manifest = _saved(
        tmp_path, series, "linear", step_size=0.4, num_steps=2, coefficients=coefficients
    )
    assert manifest["lags"] == LAGS and manifest["coin"] == {"step_size": 0.4, "num_steps": 2}
    answer = forecast_series(tensors, manifest, series, "later.json")
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
    _, tensors, manifest = _saved(
        tmp_path, series, "last-value", transform="log1p", step_size=0.0, num_steps=3
    )
    assert manifest["transform"] == "log1p"
    answer = forecast_series(tensors, manifest, series, "later.json")
    last = series.values[-1].numpy()
    for column in ("last-value", "coin over last-value"):  # γ = 0: COIN kept the model's forecast
        np.testing.assert_allclose(answer.columns[column].numpy(), np.repeat(last[:, None], HORIZONS, 1))
    _, tensors, manifest = _saved(tmp_path / "mean", series, "moving-average")
    average = forecast_series(tensors, manifest, series, "later.json").columns["moving-average"].numpy()
    np.testing.assert_allclose(average[:, 0], series.values[-LAGS:].numpy().mean(0))


def test_a_series_the_model_cannot_read_is_refused_naming_it(tmp_path):
    series = _series(counts=True)
    _, tensors, manifest = _saved(tmp_path, series, "last-value", transform="log1p")
    values = series.values.clone()
    values[-2, 1] = -1.0
    with pytest.raises(DatasetError, match="later.json: values of -1 or less cannot be read as counts"):
        forecast_series(tensors, manifest, dataclasses.replace(series, values=values), "later.json")
    values[-2, 1] = float("nan")
    with pytest.raises(DatasetError, match="later.json: the last 3 steps hold missing or infinite values"):
        forecast_series(tensors, manifest, dataclasses.replace(series, values=values), "later.json")
    values[-LAGS - 1, 1] = float("nan")  # a gap before the last lags is never read
    values[-2, 1] = 5.0
    forecast_series(tensors, manifest, dataclasses.replace(series, values=values), "later.json")
    with pytest.raises(DatasetError, match="later.json: 2 steps, the model reads the last 3"):
        forecast_series(
            tensors, manifest, dataclasses.replace(series, values=series.values[:2]), "later.json"
        )
    with pytest.raises(DatasetError, match=r"later.json: one step is 'week', the model's 'step' \(another"):
        forecast_series(tensors, manifest, dataclasses.replace(series, step_unit="week"), "later.json")
    fewer = dataclasses.replace(series, values=series.values[:, :3], graphs=[_graph([[0, 1], [1, 0]])])
    with pytest.raises(DatasetError, match="later.json: 3 nodes, the model was fitted on 4"):
        forecast_series(tensors, manifest, fewer, "later.json")


def test_a_manifest_that_is_not_a_forecasters_is_refused(tmp_path):
    series = _series()
    _, tensors, manifest = _saved(tmp_path, series, "last-value")
    plain = {
        key: value for key, value in manifest.items() if key not in ("format", "pdenets", "task", "model")
    }
    folder = save_model(tmp_path / "no-lags", tensors, task="coin-forecast", model="last-value",
                        manifest={k: v for k, v in plain.items() if k != "lags"})  # fmt: skip
    with pytest.raises(SavedModelError, match="no-lags/model.json: not a forecaster's manifest"):
        load_forecast_model(folder)
    folder = save_model(
        tmp_path / "unknown", tensors, task="coin-forecast", model="crystal-ball", manifest=plain
    )
    with pytest.raises(SavedModelError, match="not a forecaster's manifest"):
        load_forecast_model(folder)
    learned = dict(manifest, model="window-mlp", training=None)
    with pytest.raises(
        SavedModelError, match="later.json: a learned forecaster without its training settings"
    ):
        forecast_series(tensors, learned, series, "later.json")
