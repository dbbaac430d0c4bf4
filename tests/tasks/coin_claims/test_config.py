"""``CoinClaimsConfig``: each setting's bounds (accepted at the edge, refused past it, the message naming the
setting) and what ``--quick`` changes."""

import dataclasses

import pytest

from pdenets.experiments.config import ConfigError
from pdenets.tasks.coin_claims.config import CHECKS, CoinClaimsConfig
from pdenets.tasks.coin_claims.task import CoinClaimsTask


@pytest.mark.parametrize(
    "changes",
    [
        dict(samples=1),
        dict(sigmas=[1e-12]),
        dict(drop_rates=[0.0, 0.999]),
        dict(checks=["propagation"]),
        dict(checks=["dropout", "smoothing"]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    CoinClaimsConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(samples=0), "samples must be >= 1, got 0"),
        (dict(sigmas=[0.5, 0.0]), r"sigmas must be > 0, got 0.0"),
        (dict(sigmas=[float("nan")]), r"sigmas must be > 0, got nan"),
        (dict(sigmas=[]), "sigmas must not be empty"),
        (dict(drop_rates=[1.0]), r"drop_rates must be in \[0, 1\), got 1.0"),
        (dict(drop_rates=[-0.01]), r"drop_rates must be in \[0, 1\), got -0.01"),
        (dict(drop_rates=[]), "drop_rates must not be empty"),
        (dict(checks=[]), "checks must not be empty"),
        (
            dict(checks=["smoothing", "heat"]),
            r"checks must be one of \['smoothing', 'dropout', 'propagation'\]",
        ),
        (dict(seed=-1), r"seed must lie in \[0, 2\^32\)"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        CoinClaimsConfig(**changes).validate()


def test_defaults_run_every_check_and_each_instance_owns_its_lists():
    config = CoinClaimsConfig()
    config.validate()
    assert config.checks == list(CHECKS) == ["smoothing", "dropout", "propagation"]
    config.checks.remove("dropout")
    config.sigmas.append(9.0)
    fresh = CoinClaimsConfig()
    assert fresh.checks == list(CHECKS) and 9.0 not in fresh.sigmas


def test_quick_config_changes_only_the_samples_and_the_noise_scales():
    quick, full = CoinClaimsTask.quick_config(), CoinClaimsConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {"samples", "sigmas"}
    assert (quick.samples, quick.sigmas) == (4000, [0.25, 1.0])
    assert quick.samples < full.samples and set(quick.sigmas) <= set(full.sigmas)
    quick.validate()
