"""``pdenets run image-classification`` at toy scale: CIFAR-10 and canvas segmentation, resume, report, config
checks."""

import dataclasses

import pytest

from pdenets.experiments import ConfigError
from pdenets.tasks.image_classification.config import DATASETS, ImageClassificationConfig
from pdenets.tasks.image_classification.task import ImageClassificationTask


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(units=[1, 1], widths=[4]), "same length"),
        (dict(widths=[4, 5, 8]), "even"),
        (dict(resnet_depth=10), "6n \\+ 2"),
        (dict(models=["hamiltonian-75"]), "models"),
        (dict(datasets=["cifar100"]), "datasets"),
        (dict(train_limit=10), "one batch"),
        (dict(canvas_label="product"), "canvas_label"),
        (dict(canvas_digits=[3, 3]), "two distinct digits"),
        (dict(canvas_digits=[0, 10]), "two distinct digits"),
    ],
)
def test_bad_configs_are_refused(changes, message):
    with pytest.raises(ConfigError, match=message):
        ImageClassificationTask(ImageClassificationConfig(**changes)).validate()


def test_the_training_settings_follow_the_architecture_each_network_declares():
    from pdenets.models import list_models

    config = ImageClassificationConfig(models=list_models("image"), l2=2e-4, l2_resnet=1e-4, smoothness=1e-8)
    training = {spec.model: spec.training for spec in ImageClassificationTask(config).jobs()}
    for model, settings in training.items():
        hamiltonian = model.startswith("hamiltonian")
        assert settings.smoothness == (1e-8 if hamiltonian else None), model  # only with a step size h
        # the ResNet baselines (ResNet-44 and PreResNet-20) take l2_resnet, the networks with a step size l2
        assert settings.l2 == (2e-4 if hamiltonian else 1e-4), model
    assert training["preresnet-20"].l2 == 1e-4 and training["resnet-44"].l2 == 1e-4


@pytest.mark.parametrize(
    "changes",
    [
        dict(resnet_depth=8),
        dict(resnet_depth=20),
        dict(batch_size=64, train_limit=64),
        dict(test_limit=1),
        dict(canvas_digits=[0, 9]),
        dict(canvas_digits=[4, 4, 7]),
        dict(units=[2], widths=[2]),
        dict(momentum=0.0, l2=0.0, l2_resnet=0.0, smoothness=0.0, min_distance=0.0),
        dict(datasets=list(DATASETS), canvas_label="same"),
        dict(seeds=[0]),
    ],
)
def test_values_at_the_edge_of_each_bound_are_accepted(changes):
    ImageClassificationConfig(**changes).validate()


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(resnet_depth=9), "resnet_depth must be 6n \\+ 2 with n ≥ 1 \\(8, 14, 20, …\\), got 9"),
        (dict(resnet_depth=46), "resnet_depth must be 6n \\+ 2 with n ≥ 1 \\(8, 14, 20, …\\), got 46"),
        (dict(batch_size=64, train_limit=63), "train_limit must be at least one batch"),
        (dict(test_limit=0), "test_limit must be a positive count"),
        (
            dict(canvas_digits=[-1, 3]),
            r"canvas_digits must name at least two distinct digits 0-9, got \[-1, 3\]",
        ),
        (dict(canvas_digits=[5]), "canvas_digits must name at least two distinct digits"),
        (
            dict(units=[1, 1, 1], widths=[8, 16]),
            r"units \[1, 1, 1\] and widths \[8, 16\] need the same length",
        ),
        (dict(units=[1], widths=[3]), r"widths must be even, got \[3\]"),
        (dict(widths=[0, 16, 32]), "widths must be >= 1, got 0"),
        (dict(step_size=0.0), "step_size must be > 0"),
        (dict(s=-0.5), "s must be > 0"),
        (dict(l2=-1e-4), "l2 must be >= 0"),
        (dict(seeds=[]), "seeds must not be empty"),
        (dict(seeds=[-1]), "seeds must be >= 0"),
        (dict(subsample=0), "subsample must be >= 1"),
    ],
)
def test_a_value_past_a_bound_is_refused_naming_the_setting(changes, message):
    with pytest.raises(ConfigError, match=message):
        ImageClassificationConfig(**changes).validate()


def test_the_defaults_are_valid_and_each_instance_owns_its_lists():
    config = ImageClassificationConfig()
    config.validate()
    assert config.models == config.flops_models and config.models is not config.flops_models
    config.models.append("preresnet-20")
    config.widths[0] = 33
    fresh = ImageClassificationConfig()
    assert "preresnet-20" not in fresh.models + fresh.flops_models and fresh.widths == [32, 64, 112]
    fresh.validate()


def test_quick_config_changes_only_the_documented_settings():
    quick, full = ImageClassificationTask.quick_config(), ImageClassificationConfig()
    changed = {f.name for f in dataclasses.fields(full) if getattr(quick, f.name) != getattr(full, f.name)}
    assert changed == {
        "units",
        "widths",
        "resnet_depth",
        "resnet_widths",
        "epochs",
        "seeds",
        "train_limit",
        "models",
    }
    assert (quick.epochs, quick.seeds, quick.train_limit) == (2, [0], 1000)
    assert quick.resnet_depth == 8 and quick.units == [1, 1, 1]  # the smallest depths
    assert set(quick.models) < set(full.models) and quick.datasets == full.datasets == ["cifar10"]
    quick.validate()


@pytest.mark.parametrize("depth, accepted", [(-4, False), (2, False), (8, True), (14, True), (15, False)])
def test_a_resnet_depth_the_network_refuses_is_refused_before_any_run(depth, accepted):
    """6n + 2 with n ≥ 1: 2 and −4 are 6n + 2 too, but no network has n ≤ 0 blocks per stage."""
    config = ImageClassificationConfig(resnet_depth=depth)
    if accepted:
        config.validate()
    else:
        with pytest.raises(ConfigError, match="resnet_depth must be 6n \\+ 2 with n ≥ 1"):
            config.validate()
