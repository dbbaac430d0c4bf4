"""``pdenets run synthetic --quick``: a complete run directory with the numbers pinned for its seeds."""

import dataclasses

import pytest
import yaml

from pdenets.cli import main
from pdenets.experiments.config import ConfigError
from pdenets.models.synthetic_diffresnet import TABLE4, SyntheticHyperparameters
from pdenets.tasks.synthetic.config import OptimizerSettings, SyntheticConfig
from pdenets.tasks.synthetic.task import SyntheticTask


def test_overrides_and_print_config(capsys, tmp_path):
    assert (
        main(
            [
                "run",
                "synthetic",
                "--quick",
                "--epochs",
                "3",
                "--dataset",
                "moon,circle",
                "--set",
                "hyperparameters.moon.num_steps=7",
                "--no-paper-script-check",
                "--print-config",
            ]
        )
        == 0
    )
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["epochs"] == 3 and printed["seeds"] == [0] and printed["datasets"] == ["moon", "circle"]
    assert printed["hyperparameters"]["moon"]["num_steps"] == 7 and printed["paper_script_check"] is False
    assert list(tmp_path.iterdir()) == []


def test_invalid_config_value_is_reported_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["run", "synthetic", "--quick", "--out", str(out), "--set", "datasets=[swirl]"]) == 2
    assert "datasets must be one of ['circle', 'moon', 'spiral'], got 'swirl'" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize(
    "changes",
    [
        dict(xor_steps=20, xor_report_steps=[1, 20]),
        dict(xor_steps=1, xor_report_steps=[1]),
        dict(paper_epochs=0, feature_epochs=[0], seeds=[0], xor_seeds=[0]),
        dict(optimizers={"still": OptimizerSettings(0.0)}, weight_decay=0.0),
        dict(
            datasets=["spiral"], hyperparameters={"spiral": SyntheticHyperparameters(1, 1e-9, 1e-9, 0, 1e-9)}
        ),
        dict(normalization="symmetric", dtype="float64"),
        dict(normalization="none", include_self=False),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    SyntheticConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(xor_steps=20, xor_report_steps=[1, 21]), r"xor_report_steps must lie in \[1, xor_steps=20\]"),
        (dict(xor_report_steps=[0, 1]), "xor_report_steps must be >= 1, got 0"),
        (dict(paper_epochs=-1), "paper_epochs must be >= 0"),
        (dict(feature_epochs=[0, -5]), "feature_epochs must be >= 0, got -5"),
        (dict(xor_seeds=[]), "xor_seeds must not be empty"),
        (dict(optimizers={}), "optimizers must not be empty"),
        (
            dict(optimizers={"heavy": OptimizerSettings(-0.1)}),
            "optimizers.heavy.momentum must be >= 0, got -0.1",
        ),
        (
            dict(datasets=["moon", "circle"], hyperparameters={"moon": TABLE4["moon"]}),
            r"no hyperparameters for \['circle'\]",
        ),
        (
            dict(hyperparameters={**TABLE4, "moon": SyntheticHyperparameters(0, 0.5, 1.0, 60, 1.0)}),
            "hyperparameters.moon.n_top must be >= 1, got 0",
        ),
        (
            dict(hyperparameters={**TABLE4, "circle": SyntheticHyperparameters(50, 0.5, 1.0, -1, 1.0)}),
            "hyperparameters.circle.num_steps must be >= 0",
        ),
        (
            dict(hyperparameters={**TABLE4, "spiral": SyntheticHyperparameters(25, 0.0, 1.0, 9, 0.8)}),
            "hyperparameters.spiral.sigma must be > 0",
        ),
        (dict(xor_sigma=0.0), "xor_sigma must be > 0"),
        (dict(xor_step_size=float("nan")), "xor_step_size must be > 0, got nan"),
        (dict(weight_decay=-5e-4), "weight_decay must be >= 0"),
        (dict(normalization="column"), r"normalization must be one of \['symmetric', 'row', 'none'\]"),
        (dict(dtype="float16"), r"dtype must be one of \['float32', 'float64'\]"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        SyntheticConfig(**changes).validate()


def test_the_table4_defaults_and_the_optimizers_are_copied_into_each_config():
    config = SyntheticConfig()
    assert config.hyperparameters == TABLE4 and config.hyperparameters is not TABLE4
    assert {name: s.momentum for name, s in config.optimizers.items()} == {
        "sgd-momentum": 0.9,
        "sgd-plain": 0.0,
    }
    config.hyperparameters["moon"].num_steps = 1
    config.optimizers["sgd-plain"].momentum = 0.5
    fresh = SyntheticConfig()
    assert TABLE4["moon"].num_steps == 60 and fresh.hyperparameters["moon"].num_steps == 60
    assert fresh.optimizers["sgd-plain"].momentum == 0.0


def test_quick_config_changes_only_the_seeds_the_epochs_and_the_plotted_epochs():
    quick, full = SyntheticTask.quick_config(), SyntheticConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {"seeds", "epochs", "feature_epochs", "xor_seeds"}
    assert (quick.seeds, quick.epochs, quick.xor_seeds) == ([0], 20, [0, 1])
    assert quick.epochs == quick.paper_epochs  # the paper's step count
    assert max(quick.feature_epochs) <= quick.epochs and quick.datasets == ["moon", "circle", "spiral"]
    quick.validate()
