"""COINForecaster: the coin-forecast task's protocol on a series in memory or a folder, the steps after its
end as the run forecasts them, saved in the format of a run's models (both ways)."""

import csv

import numpy as np
import pytest
import torch

from pdenets.cli import main
from pdenets.estimators import COINForecaster
from pdenets.saved_model import SavedModelError
from pdenets.tasks.coin_forecast.task import CoinForecastTask

from ..helpers import foreign_data

QUICK = CoinForecastTask.quick_config()
SETTINGS = dict(
    lags=QUICK.lags,
    horizons=QUICK.horizons,
    test_fraction=QUICK.test_fraction,
    val_fraction=QUICK.val_fraction,
    step_sizes=QUICK.diffusion_step_sizes,
    num_steps=QUICK.diffusion_num_steps,
)


def _rows(path):
    with open(path, newline="", encoding="utf-8") as stream:
        return list(csv.DictReader(stream))


@pytest.fixture(scope="module")
def sensors(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sensors")
    series = foreign_data.traffic_folder(folder, names=("north", "east"))
    out = folder / "run"
    argv = ["run", "coin-forecast", "--quick", "--dataset", str(series), "--models", "linear"]
    assert main(argv + ["--no-progress", "--out", str(out)]) == 0
    return folder, series, out


def test_the_forecasts_are_the_runs_and_the_saved_model_both_ways(sensors, tmp_path, capsys):
    folder, series, out = sensors
    forecaster = COINForecaster("linear", **SETTINGS).fit(series)
    rows = _rows(out / "forecasts.csv")
    assert forecaster.forecast_stamps() == [row["time"] for row in rows[: QUICK.horizons]]
    for diffused, column in ((False, "linear"), (True, "coin over linear")):
        ours = forecaster.predict(diffused=diffused)
        theirs = np.array([float(row[column]) for row in rows]).reshape(len(forecaster.node_names_), -1)
        assert np.allclose(ours, theirs, rtol=1e-5), column
    assert forecaster.predict(2).shape == (12, 2)
    # a run's model, loaded here, and this one saved: the same forecasts, bit for bit after a reload
    loaded = COINForecaster.load(out / "model-linear")
    assert np.array_equal(loaded.predict(series=series), forecaster.predict())
    assert (loaded.step_size_, loaded.num_steps_) == (forecaster.step_size_, forecaster.num_steps_)
    saved = forecaster.save(tmp_path / "model-linear")
    again = COINForecaster.load(saved)
    assert torch.equal(torch.from_numpy(again.predict(series=series)), torch.from_numpy(forecaster.predict()))
    assert again.get_params() == forecaster.get_params()
    answer = tmp_path / "f.csv"
    assert main(["predict", str(saved), "--dataset", str(series), "--out", str(answer)]) == 0
    assert [row["coin over linear"] for row in _rows(answer)] == [row["coin over linear"] for row in rows]
    with pytest.raises(ValueError, match="give the series"):
        again.predict()


def test_a_learned_forecaster_uses_its_seed_and_settings(sensors):
    _, series, _ = sensors
    training = {"epochs": 3, "hidden_features": 8}
    first = COINForecaster("window-mlp", training=training, **SETTINGS).fit(series).predict(diffused=False)
    same = COINForecaster("window-mlp", training=training, **SETTINGS).fit(series).predict(diffused=False)
    other = COINForecaster("window-mlp", training=training, random_state=1, **SETTINGS).fit(series)
    wider = COINForecaster("window-mlp", training={**training, "hidden_features": 16}, **SETTINGS).fit(series)
    assert np.array_equal(first, same)
    assert not np.allclose(other.predict(diffused=False), first)
    assert not np.allclose(wider.predict(diffused=False), first)
    assert np.isfinite(first).all() and 20 < first.mean() < 100  # km/h, as the file holds them


def test_bad_settings_and_series_are_refused(sensors):
    _, series, _ = sensors
    for params, message in (
        ({"model": "prophet"}, "model must be one of"),
        ({"lags": 0}, "lags must be a positive integer"),
        ({"training": {"epoch": 3}}, "unknown 'epoch'"),
        ({"test_fraction": 0.5, "val_fraction": 0.5}, "leave 10 %"),
        ({"transform": "log"}, "transform must be"),
    ):
        with pytest.raises(ValueError, match=message):
            COINForecaster(**params).fit(series)
    with pytest.raises(TypeError, match="series must be"):
        COINForecaster().fit(np.zeros((10, 3)))
    forecaster = COINForecaster("last-value", **SETTINGS).fit(series)
    with pytest.raises(ValueError, match="horizon must be 1…3"):
        forecaster.predict(4)
    saved = forecaster.save(series.parent / "m")
    (saved / "model.json").write_text(
        (saved / "model.json").read_text().replace('"coin-forecast"', '"few-shot"')
    )
    with pytest.raises(SavedModelError, match="few-shot"):
        COINForecaster.load(saved)
