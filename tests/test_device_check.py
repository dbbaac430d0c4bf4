"""``benchmarks/device_check.py``: the CIFAR-10 epoch it times is the task's first epoch, and an epoch whose
loss turned NaN keeps its time and says so instead of losing the section."""

import math

import pytest
from scripts import load_script

from pdenets import NonFiniteError
from pdenets.tasks.image_classification.config import ImageClassificationConfig


@pytest.fixture(scope="module")
def device_check():
    return load_script("benchmarks/device_check.py", "device_check")


def test_the_timed_cifar_epoch_runs_at_the_schedules_warm_up_rate(device_check):
    config = ImageClassificationConfig()
    result = device_check.check_cifar(["cpu"], smoke=True)
    # the task's first epoch trains at a tenth of the peak rate: the paper-width network diverges on the
    # check's random images at the peak rate without the warm-up (measured on a GPU at batch 109-290)
    assert result["lr"] == pytest.approx(config.lr / 10)
    assert len(result["rows"]) == 4  # two networks, fp32 and amp
    assert all(row["finite"] and math.isfinite(row["loss"]) for row in result["rows"])


def test_a_diverged_epoch_keeps_its_time_and_the_report_names_it(device_check, monkeypatch):
    import pdenets.models.training as training

    def diverging_epoch(*args, **kwargs):
        raise NonFiniteError("the training loss became NaN or inf in this epoch")

    monkeypatch.setattr(training, "train_epoch", diverging_epoch)
    result = device_check.check_cifar(["cpu"], smoke=True)
    assert len(result["rows"]) == 4
    assert all(not row["finite"] and row["epoch_s"] > 0 for row in result["rows"])

    report = device_check._markdown(
        {"device": "cpu", "device_name": "CPU", "command": "c", "torch": "t", "python": "p", "cifar": result}
    )
    assert "hamiltonian-74, fp32, loss NaN/inf on cpu" in report
    assert f"lr = {result['lr']:g}" in report
