"""``pdenets run synthetic --quick``: a complete run directory with the numbers pinned for its seeds."""

import json

import pytest
import torch
import yaml

from pdenets.cli import main
from pdenets.experiments.context import RunContext
from pdenets.experiments.records import record_dict
from pdenets.tasks.synthetic.task import (
    PAPER_SCRIPT_REFERENCE,
    ClassificationJob,
    GraphConvention,
    SyntheticConfig,
    SyntheticHyperparameters,
    SyntheticTask,
    TrainingProtocol,
)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic") / "run"
    assert main(["run", "synthetic", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out


def test_run_directory_is_complete(quick_run):
    for name in (
        "config.yaml",
        "results.json",
        "results.sqlite",
        "report.md",
        "report.html",
        "runs.csv",
        "curves.csv",
        "xor.png",
        "summary.png",
        "moon_sgd-momentum.png",
        "spiral_sgd-plain.png",
    ):
        assert (quick_run / name).stat().st_size > 0, name
    document = yaml.safe_load((quick_run / "config.yaml").read_text())
    assert (
        document["task"] == "synthetic" and document["quick"] is True and document["config"]["seeds"] == [0]
    )
    report = (quick_run / "report.md").read_text()
    results = json.loads((quick_run / "results.json").read_text())
    assert set(results["figures"]) == {"xor", "summary"} | {
        f"{d}_{o}" for d in ("moon", "circle", "spiral") for o in ("sgd-momentum", "sgd-plain")
    }
    for figure in results["figures"].values():
        assert f"]({figure})" in report
    assert (results["runs_planned"], results["runs_stored"]) == (2 + 12 + 3, 17)


#: held-out test accuracy after 20 epochs, seed 0 (quick configuration): train/test samples of 1,000 points
PINNED_TEST_ACCURACY = {
    ("moon", "sgd-momentum"): (0.698, 0.955),
    ("moon", "sgd-plain"): (0.885, 0.939),
    ("circle", "sgd-momentum"): (0.947, 0.5),
    ("circle", "sgd-plain"): (0.534, 0.823),
    ("spiral", "sgd-momentum"): (0.481, 0.5),
    ("spiral", "sgd-plain"): (0.502, 0.352),
}
PINNED_L_OVER_D = {
    "step_1": 0.7921971012385058,
    "step_10": 2.954122464310273,
    "step_20": 6.885340286318304,
    "step_200": 140385.95815998485,
}


def test_pinned_numbers(quick_run):
    results = json.loads((quick_run / "results.json").read_text())
    assert results["xor"]["L_over_D_median"] == pytest.approx(PINNED_L_OVER_D, rel=1e-9)
    for (dataset, optimizer), (resnet, diff_resnet) in PINNED_TEST_ACCURACY.items():
        entry = results["classification"][dataset][optimizer]
        assert entry["resnet"]["test_accuracy"]["mean"] == pytest.approx(resnet, abs=1e-12), (
            dataset,
            optimizer,
        )
        assert entry["diff-resnet"]["test_accuracy"]["mean"] == pytest.approx(diff_resnet, abs=1e-12)
        assert entry["resnet"]["runs"] == entry["diff-resnet"]["runs"] == 1
    # Same data, initialization and protocol as the paper's scripts: same correct counts.
    for dataset, entry in results["paper_script"].items():
        assert entry["resnet"]["correct"] == PAPER_SCRIPT_REFERENCE[dataset]["resnet"]
        assert entry["diff-resnet"]["correct"] == PAPER_SCRIPT_REFERENCE[dataset]["diff-resnet"] == 1000


def test_rerun_resumes_without_running_anything(quick_run, capsys):
    assert main(["run", "synthetic", "--quick", "--out", str(quick_run), "--no-progress"]) == 0
    assert "0 new run(s), 17 of 17 stored" in capsys.readouterr().out


def test_jobs_cover_every_combination_and_only_the_first_seed_keeps_features():
    task = SyntheticTask(
        SyntheticConfig(seeds=[3, 4], datasets=["moon"], xor_seeds=[0], epochs=5, feature_epochs=[0, 5, 20])
    )
    jobs = task.jobs()
    classification = [j for j in jobs if isinstance(j, ClassificationJob)]
    assert len(jobs) == 1 + 2 * 2 * 2 + 1 and len(classification) == 8
    assert {(j.seed, j.optimizer, j.variant) for j in classification} == {
        (s, o, v) for s in (3, 4) for o in ("sgd-momentum", "sgd-plain") for v in ("resnet", "diff-resnet")
    }
    assert {j.snapshot_epochs for j in classification if j.seed == 3} == {(0, 5)}
    assert {j.snapshot_epochs for j in classification if j.seed == 4} == {()}
    assert {j.momentum for j in classification if j.optimizer == "sgd-momentum"} == {0.9}


@pytest.mark.parametrize("num_steps", [0, 5])
def test_diverging_run_stops_cleanly_and_keeps_its_last_finite_state(num_steps):
    """A learning rate far too large overflows the network: the run is marked diverged, not crashed."""
    hp = SyntheticHyperparameters(n_top=10, sigma=0.5, step_size=1.0, num_steps=5, lr=1e30)
    spec = ClassificationJob(
        dataset="moon",
        seed=0,
        optimizer="sgd",
        momentum=0.9,
        variant="diff-resnet" if num_steps else "resnet",
        hyperparameters=hp,
        protocol=TrainingProtocol(60, 60, 10, 20, 5e-4, "float32"),
        graph=GraphConvention(True, "row"),
        snapshot_epochs=(0, 5, 10),
    )
    record = record_dict(SyntheticTask.run_job(spec, RunContext()))
    diverged = record["diverged_at_epoch"]
    assert diverged is not None and 1 <= diverged <= 10
    assert len(record["test_curve"]) == len(record["train_curve"]) == 11
    assert len(record["losses"]) == diverged - 1
    # after divergence every epoch repeats the last finite state's accuracy and features
    assert len(set(record["test_curve"][diverged:])) == 1
    later = [e for e in (0, 5, 10) if e >= diverged]
    assert all(
        torch.equal(torch.as_tensor(record["snapshots"][later[0]]), torch.as_tensor(record["snapshots"][e]))
        for e in later
    )


def test_every_setting_of_a_synthetic_job_reaches_the_result():
    """Classification and XOR jobs: each key setting (nested ones entry by entry) changes the record."""
    from pdenets.tasks.synthetic.task import XorJob

    from ...helpers.spec_sensitivity import assert_every_key_setting_matters

    hp = SyntheticHyperparameters(n_top=8, sigma=0.5, step_size=0.5, num_steps=3, lr=0.5)
    spec = ClassificationJob(
        dataset="moon",
        seed=0,
        optimizer="sgd-momentum",
        momentum=0.9,
        variant="diff-resnet",
        hyperparameters=hp,
        protocol=TrainingProtocol(30, 30, 4, 2, 5e-4, "float32"),
        graph=GraphConvention(True, "row"),
        snapshot_epochs=(0, 2),
    )
    assert_every_key_setting_matters(
        SyntheticTask.run_job,
        spec,
        changes={
            "dataset": "circle",
            "variant": "resnet",
            "protocol.dtype": "float64",
            "protocol.epochs": 6,
            "protocol.paper_epochs": 3,
            "graph.normalization": "symmetric",
            "snapshot_epochs": (0, 4),
            "hyperparameters.sigma": 0.25,
        },
        skip={
            "optimizer": "the name of the optimizer entry; its momentum is the setting and is checked",
        },
    )
    xor = XorJob(
        seed=0,
        points_per_disc=20,
        n_top=6,
        sigma=0.5,
        step_size=0.5,
        steps=4,
        report_steps=(1, 2),
        graph=GraphConvention(False, "row"),
    )
    assert_every_key_setting_matters(
        SyntheticTask.run_job,
        xor,
        changes={"report_steps": (1, 3), "graph.normalization": "symmetric"},
    )
