"""``CoinTabularConfig``: each setting's bounds (edge accepted, past it refused by name), the user's split
file, the datasets it accepts, the former name of the MLP width, and what ``--quick`` changes."""

import dataclasses

import pytest

from pdenets.experiments.config import ConfigError, RenamedSettingWarning, resolve_config
from pdenets.tasks.coin_tabular.config import MODELS, CoinTabularConfig
from pdenets.tasks.coin_tabular.task import CoinTabularTask


@pytest.mark.parametrize(
    "changes",
    [
        dict(n_top=5, sigma_neighbor=5),
        dict(n_top=1, sigma_neighbor=1),
        dict(step_size=1.0),
        dict(spreading_alpha=0.999),
        dict(dropout=0.0),
        dict(num_steps=0, weight_decay=0.0),
        dict(labels_per_class=[1]),
        dict(datasets=["Survey.CSV", "breast-cancer"]),
        dict(models=["label-spreading"]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    CoinTabularConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(n_top=5, sigma_neighbor=6), r"sigma_neighbor \(6\) must not exceed n_top \(5\)"),
        (dict(step_size=1.01), "step_size must be <= 1 on a row-normalized graph, got 1.01"),
        (dict(step_size=0.0), "step_size must be > 0"),
        (dict(spreading_alpha=1.0), r"spreading_alpha must lie in \(0, 1\), got 1.0"),
        (dict(spreading_alpha=0.0), "spreading_alpha must be > 0"),
        (dict(dropout=1.0), r"dropout must be in \[0, 1\)"),
        (dict(labels_per_class=[5, 0]), "labels_per_class must be >= 1, got 0"),
        (dict(labels_per_class=[]), "labels_per_class must not be empty"),
        (dict(num_steps=-1), "num_steps must be >= 0"),
        (dict(weight_decay=-1e-4), "weight_decay must be >= 0"),
        (dict(models=["svm"]), r"models must be one of \['coin', 'mlp', 'label-spreading'\]"),
        (dict(predictions="sometimes"), "predictions must be one of"),
        (dict(datasets=["iris"]), "datasets: 'iris' is neither breast-cancer nor a .csv path"),
        (dict(datasets=["table.tsv"]), "neither breast-cancer nor a .csv path"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        CoinTabularConfig(**changes).validate()


def test_a_split_file_must_exist_and_name_the_rows_of_one_table(tmp_path):
    split = tmp_path / "split.csv"
    with pytest.raises(ConfigError, match="split_file '.*split.csv' is not a file"):
        CoinTabularConfig(datasets=["a.csv"], split_file=str(split)).validate()
    split.write_text("0,train\n1,test\n")
    CoinTabularConfig(datasets=["a.csv"], split_file=str(split)).validate()
    CoinTabularConfig(datasets=["a.csv", "a.csv"], split_file=str(split)).validate()  # the same table twice
    with pytest.raises(ConfigError, match="give one dataset with it"):
        CoinTabularConfig(datasets=["a.csv", "b.csv"], split_file=str(split)).validate()


def test_the_former_name_of_the_mlp_width_is_read_with_a_warning():
    with pytest.warns(RenamedSettingWarning, match="'hidden' is now 'hidden_features'"):
        config = resolve_config(CoinTabularConfig, overrides=["hidden=16"])
    assert config.hidden_features == 16


def test_quick_config_changes_only_the_splits_and_the_epochs():
    quick, full = CoinTabularTask.quick_config(), CoinTabularConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {"splits", "epochs"}
    assert (quick.splits, quick.epochs) == (5, 100) and full.models == list(MODELS)
    quick.validate()
