"""The geodesic study end to end at toy scale: MNIST MLP pairs and CIFAR-10 K = 1 / K = 4 CNN pairs."""

import dataclasses

import pytest

from pdenets.experiments.config import ConfigError
from pdenets.tasks.geodesic.config import CIFAR_ARCHITECTURES, DATASETS, KINDS, GeodesicConfig
from pdenets.tasks.geodesic.task import PAPER, GeodesicTask


def test_paper_tables_are_read_in_column_order_and_bad_settings_are_refused():
    assert PAPER[("cifar10", "k1")][("resnet", 5e-3)]["lss"].mean == 2.70
    assert PAPER[("cifar10", "k1")][("plain", 0.0)]["lsr"].mean == 78.5
    assert PAPER[("cifar10", "k4")][("resnet", 1e-3)]["ots"].mean == 0.813
    with pytest.raises(ConfigError, match="k4_widths must list 4"):
        GeodesicConfig(k4_widths=[8, 8]).validate()
    with pytest.raises(ConfigError, match="exceeds the MLP"):
        GeodesicConfig(blocks=2, ablation_block=3).validate()
    with pytest.raises(ConfigError, match="train_limit must be >= 1"):
        GeodesicConfig(train_limit=0).validate()
    with pytest.raises(ConfigError, match="architectures"):
        GeodesicConfig(architectures=["k2"]).validate()


@pytest.mark.parametrize(
    "changes",
    [
        dict(blocks=3, ablation_block=3),
        dict(blocks=1, ablation_block=1, width=1),
        dict(train_limit=1, test_limit=1),
        dict(weight_decays=[0.0], momentum=0.0, figure_weight_decay=0.0),
        dict(noise_levels=[0.0], fgsm_levels=[0.0], ablation_counts=[0], seeds=[0]),
        dict(datasets=list(DATASETS), architectures=list(CIFAR_ARCHITECTURES), kinds=list(KINDS)),
        dict(init="kaiming"),
        dict(k4_widths=[1, 1, 1, 1]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    GeodesicConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(blocks=3, ablation_block=4), "ablation_block=4 exceeds the MLP's 3 blocks"),
        (dict(ablation_block=0), "ablation_block must be >= 1, got 0"),
        (dict(test_limit=0), r"test_limit must be >= 1 \(or null for all images\), got 0"),
        (dict(train_limit=-5), "train_limit must be >= 1"),
        (dict(k4_widths=[8, 8, 8, 8, 8]), r"k4_widths must list 4 stage widths, got \[8, 8, 8, 8, 8\]"),
        (dict(k4_widths=[8, 8, 0, 8]), "k4_widths must be >= 1, got 0"),
        (dict(weight_decays=[0.0, -1e-4]), "weight_decays must be >= 0, got -0.0001"),
        (dict(noise_levels=[float("inf")]), "noise_levels must be >= 0, got inf"),
        (dict(lr=0.0), "lr must be > 0, got 0.0"),
        (dict(momentum=-0.1), "momentum must be >= 0"),
        (dict(seeds=[-1]), "seeds must be >= 0"),
        (dict(ablation_counts=[-1]), "ablation_counts must be >= 0"),
        (dict(kinds=["densenet"]), r"kinds must be one of \['plain', 'resnet'\]"),
        (dict(datasets=["svhn"]), r"datasets must be one of \['mnist', 'cifar10'\]"),
        (dict(init="xavier"), r"init must be one of \['auto', 'kaiming', 'torch'\]"),
        (dict(weight_decays=[]), "weight_decays must not be empty"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        GeodesicConfig(**changes).validate()


def test_the_ablated_block_is_checked_against_the_mlp_only():
    # CIFAR-10 alone trains no MLP: its block count does not bound the ablated block
    GeodesicConfig(datasets=["cifar10"], blocks=2, ablation_block=3).validate()
    with pytest.raises(ConfigError, match="exceeds the MLP's 2 blocks"):
        GeodesicConfig(datasets=["cifar10", "mnist"], blocks=2, ablation_block=3).validate()


def test_quick_config_changes_only_the_documented_settings():
    quick, full = GeodesicTask.quick_config(), GeodesicConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {
        "weight_decays",
        "width",
        "epochs",
        "train_limit",
        "test_limit",
        "track_points",
        "robustness_points",
        "ablation_counts",
        "noise_levels",
        "fgsm_levels",
        "projection_points",
    }
    assert quick.datasets == ["mnist"] and (quick.width, quick.epochs, quick.train_limit) == (64, 2, 3000)
    assert len(quick.weight_decays) == 3 and set(quick.weight_decays) <= set(full.weight_decays)
    assert quick.figure_weight_decay in quick.weight_decays  # the figures' decay is among those run
    assert max(quick.ablation_counts) <= quick.width  # no more units eliminated than a block has
    quick.validate()
