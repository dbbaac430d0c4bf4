"""``pdenets run image-classification`` at toy scale: CIFAR-10 and canvas segmentation, resume, report, config
checks."""

import dataclasses
import json

import pytest
from datafiles import MNIST, cifar10, requires_data

from pdenets.cli import main
from pdenets.experiments import run_task
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


def test_cli_refuses_a_model_typo_in_one_line(capsys):
    assert main(["run", "image-classification", "--model", "hamiltonian-47", "--out", "unused"]) == 2
    assert "hamiltonian-47" in capsys.readouterr().err


@requires_data(*MNIST)
@pytest.mark.parametrize("model", ["hamiltonian-74-fractional", "resnet-44"])
def test_every_setting_of_an_image_job_reaches_the_result(model):
    """Each key setting (architecture, training and data entry by entry) changes the record; a job's key holds
    only the settings its network is built and trained with (the others are None)."""
    from pdenets.tasks.image_classification.task import run_image_job

    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

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
            "model": "each model has its own settings; two are checked one by one",
            **unused,
        },
        ignore=("seconds",),
    )
