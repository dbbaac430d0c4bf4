"""``CoinForecastConfig``: the bounds of the diffusion grid, the step size, the split fractions and the early
stopping (edge accepted, past it refused by name), the datasets it accepts, the names it derives from the
forecaster registry, and what ``--quick`` changes."""

import dataclasses
import re

import pytest

from pdenets.experiments.config import ConfigError
from pdenets.tasks.coin_forecast.config import (
    BASELINES,
    CONVECTION_ALONE,
    LEARNED,
    RENAMED,
    UNFITTED,
    CoinForecastConfig,
)
from pdenets.tasks.coin_forecast.task import CoinForecastTask


@pytest.mark.parametrize(
    "changes",
    [
        dict(diffusion_step_sizes=[0.0, 1.0]),
        dict(diffusion_num_steps=[1]),
        dict(step_size=0.999, learn_step_size=True),
        dict(step_size=1.0, learn_step_size=False),
        dict(test_fraction=0.5, val_fraction=0.39),
        dict(min_improvement=0.0),
        dict(min_improvement=0.999),
        dict(num_steps=0, seeds=[0], weight_decay=0.0),
        dict(protocols=["ours", "pyg-temporal"]),
        dict(datasets=["series.JSON", "export.csv", "chickenpox"]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    CoinForecastConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(diffusion_step_sizes=[-0.01]), r"diffusion_step_sizes must be values in \[0, 1\]"),
        (dict(diffusion_step_sizes=[]), "diffusion_step_sizes must be values in"),
        (dict(diffusion_num_steps=[0]), r"diffusion_num_steps must be positive integers, got \[0\]"),
        (dict(diffusion_num_steps=[True]), r"diffusion_num_steps must be positive integers, got \[True\]"),
        (dict(diffusion_num_steps=[2.5]), "diffusion_num_steps must be positive integers"),
        (dict(diffusion_num_steps=[]), "diffusion_num_steps must be positive integers"),
        (
            dict(step_size=1.0, learn_step_size=True),
            r"step_size must be <= 1 .*\(< 1 when learned\), got 1.0",
        ),
        (dict(step_size=1.001, learn_step_size=False), "step_size must be <= 1"),
        (dict(step_size=0.0), "step_size must be > 0, got 0.0"),
        (dict(test_fraction=0.5, val_fraction=0.4), "must leave at least 10 % of the steps for training"),
        (dict(val_fraction=0.0), "val_fraction must be > 0"),
        (dict(min_improvement=1.0), "min_improvement is a relative decrease below 1, got 1.0"),
        (dict(min_improvement=-0.1), "min_improvement must be >= 0"),
        (dict(protocols=["auto", "ours"]), "auto chooses the protocols of each dataset; give it alone"),
        (dict(protocols=["theirs"]), r"protocols must be one of \['ours', 'pyg-temporal', 'auto'\]"),
        (dict(count_transform="log"), "count_transform must be one of"),
        (dict(forecasts="sometimes"), "forecasts must be one of"),
        (dict(seeds=[0, -1]), "seeds must be >= 0, got -1"),
        (dict(batch_rows=0), "batch_rows must be >= 1"),
        (dict(models=["prophet"]), "models must be one of"),
        (dict(datasets=["no-such-folder"]), "'no-such-folder' is neither england_covid"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        CoinForecastConfig(**changes).validate()


def test_a_csv_folder_is_accepted_only_where_it_exists(tmp_path):
    CoinForecastConfig(datasets=[str(tmp_path)]).validate()
    with pytest.raises(ConfigError, match="neither england_covid, chickenpox, a .json file nor a CSV folder"):
        CoinForecastConfig(datasets=[str(tmp_path / "missing")]).validate()


def test_the_names_derived_from_the_forecaster_registry_are_consistent():
    defaults = CoinForecastConfig()
    assert defaults.models == list(BASELINES + LEARNED)
    assert not set(BASELINES) & set(LEARNED)
    assert set(UNFITTED) <= set(BASELINES) and "linear" not in UNFITTED  # linear regression fits targets
    for coin, convection in CONVECTION_ALONE.items():  # the pair the graph figure compares: both run
        assert coin in LEARNED and convection in LEARNED and coin != convection
    for old in RENAMED:  # a former name is refused with what it became, not as an unknown model
        assert old not in BASELINES + LEARNED
        with pytest.raises(ConfigError, match=re.escape(RENAMED[old])):
            CoinForecastConfig(models=["linear", old]).validate()


def test_quick_config_changes_only_the_documented_settings():
    quick, full = CoinForecastTask.quick_config(), CoinForecastConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {"lags", "horizons", "seeds", "patience"}
    assert (quick.lags, quick.horizons, quick.seeds, quick.patience) == (4, 3, [0], 50)
    assert quick.datasets == full.datasets and quick.protocols == ["auto"]  # both datasets and protocols
    quick.validate()
