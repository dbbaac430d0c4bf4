"""``pdenets run synthetic --quick``: a complete run directory with the numbers pinned for its seeds."""

import json

import pytest
import torch
import yaml

from pdenets.cli import main
from pdenets.experiments import Stats
from pdenets.tasks.synthetic.results import SyntheticResults
from pdenets.tasks.synthetic.task import (
    PAPER_SCRIPT_REFERENCE,
    VARIANTS,
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


def test_summarize_builds_typed_results_whose_plain_form_keeps_the_keys_and_their_order():
    """Hand-made records: two seeds of one cell, one of another, two XOR seeds, then the paper scripts."""
    task = SyntheticTask(SyntheticConfig(xor_steps=1, xor_report_steps=[1]))
    cell = {
        "part": "classification",
        "dataset": "moon",
        "optimizer": "sgd-plain",
        "variant": "resnet",
        "train_accuracy": 1.0,
        "train_accuracy_at_paper_epochs": 0.9,
        "test_accuracy_at_paper_epochs": 0.7,
        "diverged_at_epoch": None,
    }
    records = [
        {"part": "xor", "seed": 0, "distance": [1.0, 1.0], "diameter": [2.0, 1.0], "cross_edges": 0},
        {"part": "xor", "seed": 1, "distance": [1.0, 2.0], "diameter": [2.0, 0.5], "cross_edges": 3},
        {**cell, "seed": 0, "test_accuracy": 0.8, "seconds": 1.0},
        {**cell, "seed": 1, "test_accuracy": 1.0, "diverged_at_epoch": 7, "seconds": 3.0},
        {**cell, "variant": "diff-resnet", "seed": 0, "test_accuracy": 0.5, "seconds": 2.0},
    ]
    results = task.summarize(records)
    assert isinstance(results, SyntheticResults) and results.paper_script is None
    resnet = results.classification["moon"]["sgd-plain"]["resnet"]
    # test accuracy over the two seeds: mean (0.8 + 1.0) / 2, population std |1.0 - 0.8| / 2
    assert (resnet.test_accuracy.mean, resnet.test_accuracy.std) == pytest.approx((0.9, 0.1), abs=1e-12)
    assert resnet.train_accuracy == Stats(1.0, 0.0, 1.0, 1.0, 1.0, 2)
    assert (resnet.runs, resnet.perfect_train_runs, resnet.perfect_test_runs, resnet.diverged_runs) == (
        2,
        2,
        1,
        1,
    )
    assert resnet.seconds_per_run == 2.0
    assert results.classification["moon"]["sgd-plain"]["diff-resnet"].test_accuracy.count == 1
    # L/D after one step: 1/1 for seed 0 and 2/0.5 for seed 1; D: 1 and 0.5; L: 1 and 2
    assert results.xor is not None
    assert results.xor.L_over_D_per_seed == {"0": {"step_1": 1.0}, "1": {"step_1": 4.0}}
    assert (results.xor.L_over_D_median, results.xor.D_median, results.xor.L_median) == (
        {"step_1": 2.5},
        {"step_1": 0.75},
        {"step_1": 1.5},
    )
    assert results.xor.seeds_with_edges_between_discs == 1

    plain = results.to_dict()
    assert list(plain) == ["xor", "classification", "figures"]
    assert list(plain["xor"]) == [
        "L_over_D_median",
        "L_over_D_per_seed",
        "D_median",
        "L_median",
        "seeds_with_edges_between_discs",
    ]
    assert list(plain["classification"]["moon"]["sgd-plain"]) == ["resnet", "diff-resnet"]
    entry = plain["classification"]["moon"]["sgd-plain"]["resnet"]
    assert list(entry) == [
        "runs",
        "train_accuracy",
        "test_accuracy",
        "test_accuracy_at_paper_epochs",
        "train_accuracy_at_paper_epochs",
        "perfect_train_runs",
        "perfect_test_runs",
        "diverged_runs",
        "seconds_per_run",
    ]
    assert entry["test_accuracy"] == Stats.of([0.8, 1.0]).as_dict()
    assert list(entry["test_accuracy"]) == ["mean", "std", "min", "max", "median", "count"]

    script = {"part": "paper-script", "dataset": "moon"}
    script.update({variant: {"correct": 900, "reference": 877, "seconds": 0.5} for variant in VARIANTS})
    with_script = task.summarize(records + [script])
    assert with_script.paper_script is not None and with_script.paper_script["moon"]["resnet"].correct == 900
    plain = with_script.to_dict()
    assert list(plain) == ["xor", "classification", "paper_script", "figures"]
    assert plain["paper_script"] == {
        "moon": {variant: {"correct": 900, "reference": 877, "seconds": 0.5} for variant in VARIANTS}
    }
    assert list(task.summarize(records[2:]).to_dict()) == ["classification", "figures"]


def test_rerun_resumes_without_running_anything(quick_run, capsys):
    assert main(["run", "synthetic", "--quick", "--out", str(quick_run), "--no-progress"]) == 0
    assert "0 new run(s), 17 of 17 stored" in capsys.readouterr().out


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
        "moon",
        0,
        "sgd",
        0.9,
        "diff-resnet" if num_steps else "resnet",
        hp,
        TrainingProtocol(60, 60, 10, 20, 5e-4, "float32"),
        GraphConvention(True, "row"),
        (0, 5, 10),
        "cpu",
    )
    record = SyntheticTask.run_job(spec)
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

    from ..helpers.spec_sensitivity import assert_every_key_setting_matters

    hp = SyntheticHyperparameters(n_top=8, sigma=0.5, step_size=0.5, num_steps=3, lr=0.5)
    spec = ClassificationJob(
        "moon",
        0,
        "sgd-momentum",
        0.9,
        "diff-resnet",
        hp,
        TrainingProtocol(30, 30, 4, 2, 5e-4, "float32"),
        GraphConvention(True, "row"),
        (0, 2),
        "cpu",
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
            "device": "one device on a CPU-only machine",
            "optimizer": "the name of the optimizer entry; its momentum is the setting and is checked",
        },
    )
    xor = XorJob(0, 20, 6, 0.5, 0.5, 4, (1, 2), GraphConvention(False, "row"), "cpu")
    assert_every_key_setting_matters(
        SyntheticTask.run_job,
        xor,
        changes={"report_steps": (1, 3), "graph.normalization": "symmetric"},
        skip={"device": "one device on a CPU-only machine"},
    )
