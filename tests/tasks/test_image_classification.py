"""``pdenets run image-classification`` at toy scale: CIFAR-10 and canvas segmentation, resume, report, config
checks."""

import dataclasses
import json

import pytest
from datafiles import MNIST, cifar10, requires_data

from pdenets.cli import main
from pdenets.experiments import ConfigError, run_task
from pdenets.tasks.image_classification.task import ImageClassificationConfig, ImageClassificationTask

TINY = dict(
    units=[1, 1],
    widths=[4, 8],
    resnet_depth=8,
    resnet_widths=[4, 8, 8],
    epochs=1,
    batch_size=50,
    workers=1,
    flops_models=["resnet-44", "hamiltonian-74-fractional"],
)


@requires_data(*cifar10(0, 40, 50))
def test_cifar_run_stores_resumes_and_reports(tmp_path):
    config = ImageClassificationConfig(
        models=["resnet-44", "hamiltonian-74-fractional"], seeds=[0], train_limit=100, test_limit=200, **TINY
    )
    outcome = run_task(ImageClassificationTask(config), out=tmp_path / "run", progress=False)
    assert outcome.stored == 2 and outcome.new == 2
    table = outcome.results["table"]["cifar10"]
    for entry in table.values():
        assert set(entry) >= {"held-out accuracy", "official accuracy", "parameters"}
        assert 0 <= entry["held-out accuracy"]["median"] <= 100
    assert outcome.results["flops"]["paper scale"]["resnet-44"]["parameters"] == 661_338
    again = run_task(ImageClassificationTask(config), out=tmp_path / "run", progress=False)
    assert again.new == 0
    assert json.loads((tmp_path / "run" / "results.json").read_text())["table"] == outcome.results["table"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "held out" in report and "eigenvalues.png" in report
    assert (tmp_path / "run" / "eigenvalues.png").stat().st_size > 1000


@requires_data(*MNIST)
def test_canvas_segmentation_reports_pixel_accuracy_and_mean_iou(tmp_path):
    config = ImageClassificationConfig(
        datasets=["canvas-segmentation"],
        models=["hamiltonian-74-diffusion"],
        seeds=[0],
        canvas_train=50,
        canvas_test=20,
        canvas_size=40,
        min_distance=10.0,
        **TINY,
    )
    outcome = run_task(ImageClassificationTask(config), out=tmp_path / "run", progress=False)
    entry = outcome.results["table"]["canvas-segmentation"]["hamiltonian-74-diffusion"]
    assert 0 <= entry["test canvases mean_iou"]["median"] <= entry["test canvases accuracy"]["median"] <= 100


@requires_data(*MNIST)
def test_same_label_canvases_train_a_two_class_head(tmp_path):
    config = ImageClassificationConfig(
        datasets=["canvas"],
        models=["hamiltonian-74"],
        seeds=[0],
        canvas_train=50,
        canvas_test=20,
        canvas_size=40,
        min_distance=10.0,
        canvas_label="same",
        **TINY,
    )
    task = ImageClassificationTask(config)
    assert task.jobs()[0].data.canvas_label == "same"
    default = ImageClassificationTask(ImageClassificationConfig(datasets=["canvas"], **TINY)).jobs()[0]
    assert default.data.canvas_label == "sum"
    assert task.jobs()[0].data.canvas_digits is None
    pair = ImageClassificationTask(
        ImageClassificationConfig(datasets=["canvas"], canvas_digits=[1, 0], **TINY)
    )
    assert pair.jobs()[0].data.canvas_digits == (0, 1)
    run_task(task, out=tmp_path / "run", progress=False)
    assert "test canvases" in (tmp_path / "run" / "report.md").read_text()


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


def test_cli_refuses_a_model_typo_in_one_line(capsys):
    assert main(["run", "image-classification", "--model", "hamiltonian-47", "--out", "unused"]) == 2
    assert "hamiltonian-47" in capsys.readouterr().err


@requires_data(*MNIST)
@pytest.mark.parametrize("model", ["hamiltonian-74-fractional", "resnet-44"])
def test_every_setting_of_an_image_job_reaches_the_result(model):
    """Each key setting (architecture, training and data entry by entry) changes the record; a job's key holds
    only the settings its network is built and trained with (the others are None)."""
    from pdenets.tasks.image_classification.task import run_image_job

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

    config = ImageClassificationConfig(
        datasets=["canvas"],
        models=[model],
        seeds=[0],
        canvas_train=40,
        canvas_test=10,
        canvas_size=40,
        min_distance=10.0,
        **{**TINY, "batch_size": 20, "resnet_widths": [2, 4, 4], "units": [2, 1]},
    )  # two blocks in a unit: a smoothness penalty
    spec = ImageClassificationTask(config).jobs()[0]
    assert spec.training.l2 == (config.l2_resnet if model in ("resnet-44", "preresnet-20") else config.l2)
    unused = {
        f"{group}.{name}": "not a setting of this network (None in its spec)"
        for group in ("architecture", "training")
        for name, value in dataclasses.asdict(getattr(spec, group)).items()
        if value is None
    }
    assert ("architecture.units" in unused) == (model == "resnet-44")
    assert_every_key_setting_matters(
        run_image_job,
        spec,
        changes={
            "dataset": "canvas-segmentation",
            "architecture.units": (1, 2),
            "architecture.widths": (4, 6),
            "architecture.resnet_widths": (2, 4, 6),
            "architecture.resnet_depth": 14,
            "architecture.subsample": 1,
            "training.batch_size": 10,
            "training.momentum": 0.5,
            "data.min_distance": 12.0,
            "data.canvas_size": 44,
            "training.l2": 0.5,
            "data.canvas_label": "same",
            "data.canvas_digits": (3, 8),
        },
        skip={
            "device": "one device on a CPU-only machine",
            "model": "each model has its own settings; two are checked one by one",
            **unused,
        },
        ignore=("seconds",),
    )


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


def test_image_results_are_typed_and_their_plain_form_pins_the_numbers():
    from pdenets.models.image_networks import NetworkCost

    task = ImageClassificationTask(ImageClassificationConfig(flops_models=[]))
    records = [
        {
            "dataset": "canvas",
            "model": "resnet-44",
            "parameters": 10,
            "seconds": seconds,
            "tests": {"test": {"accuracy": accuracy, "mean_iou": iou}},
        }
        for seconds, accuracy, iou in ((1.0, 0.5, 0.25), (3.0, 0.7, 0.35), (5.0, 0.9, 0.15))
    ]
    results = task.summarize(records)
    cell = results.table["canvas"]["resnet-44"]
    assert (cell.parameters, cell.runs, cell.seconds_per_run) == (10, 3, 3.0)
    spread = cell.metrics["test accuracy"]
    assert (spread.median, spread.mean, spread.min, spread.max) == pytest.approx((70.0, 70.0, 50.0, 90.0))
    assert cell.metrics["test mean_iou"].median == pytest.approx(25.0)
    plain = results.to_dict()
    assert list(plain) == ["table", "flops", "figures"]
    assert list(plain["table"]["canvas"]["resnet-44"]) == [
        "parameters",
        "runs",
        "seconds_per_run",
        "test accuracy",
        "test mean_iou",
    ]
    assert list(plain["table"]["canvas"]["resnet-44"]["test accuracy"]) == ["median", "mean", "min", "max"]
    assert plain["flops"] == {}  # no FLOPs models configured
    cost = NetworkCost(1.5, 7)
    flat = dataclasses.replace(results, flops={"this run": {"resnet-44": cost}}).to_dict()
    assert flat["flops"] == {"this run": {"resnet-44": {"mflops": 1.5, "parameters": 7}}}
