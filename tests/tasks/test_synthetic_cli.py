"""End to end: ``pdenets run synthetic --quick`` writes a complete, sane run directory."""

import json
import subprocess
import sys

import pytest
import yaml

from pdenets.cli import main
from pdenets.tasks import TASKS
from pdenets.tasks.synthetic import PAPER_SCRIPT_REFERENCE


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    assert main(["run", "synthetic", "--quick", "--out", str(out), "--no-progress"]) == 0
    return out


def test_run_directory_is_complete(quick_run):
    for name in ("config.yaml", "results.json", "report.md", "report.html", "runs.csv", "curves.csv", "xor.png",
                 "summary.png", "moon_sgd-momentum.png", "spiral_sgd-plain.png"):
        assert (quick_run / name).stat().st_size > 0, name
    config = yaml.safe_load((quick_run / "config.yaml").read_text())
    assert config["task"] == "synthetic" and config["config"]["quick"] is True
    report = (quick_run / "report.md").read_text()
    for figure in json.loads((quick_run / "results.json").read_text())["figures"].values():
        assert f"]({figure})" in report


def test_numbers_are_sane(quick_run):
    results = json.loads((quick_run / "results.json").read_text())
    ratios = results["xor"]["L_over_D_median"]
    assert ratios["step_1"] < ratios["step_10"] < ratios["step_20"] < ratios["step_200"]
    for dataset, by_optimizer in results["classification"].items():
        for by_variant in by_optimizer.values():
            for entry in by_variant.values():
                assert 0.0 <= entry["test_accuracy"]["mean"] <= 1.0
                assert entry["runs"] == 1
    # Same data, initialization and protocol as the paper's scripts: same correct counts.
    for dataset, entry in results["paper_script"].items():
        assert entry["resnet"]["correct"] == PAPER_SCRIPT_REFERENCE[dataset]["resnet"]
        assert entry["diff-resnet"]["correct"] == PAPER_SCRIPT_REFERENCE[dataset]["diff-resnet"] == 1000


def test_overrides_and_print_config(capsys):
    assert main(["run", "synthetic", "--quick", "--set", "epochs=3", "--print-config"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["epochs"] == 3 and printed["seeds"] == [0]


def test_bad_override_exits_with_message(capsys):
    with pytest.raises(SystemExit):
        main(["run", "synthetic", "--set", "epochz=3"])
    assert "unknown config key" in capsys.readouterr().err


def test_invalid_config_value_is_reported(tmp_path, capsys):
    code = main(["run", "synthetic", "--quick", "--out", str(tmp_path), "--set", "datasets=[swirl]",
                 "--no-progress"])
    assert code == 2 and "unknown dataset" in capsys.readouterr().err


def test_console_script_lists_tasks():
    result = subprocess.run([sys.executable, "-m", "pdenets.cli", "tasks"], capture_output=True, text=True,
                            check=True)
    assert all(name in result.stdout for name in TASKS)


@pytest.mark.parametrize("num_steps", [0, 5])
def test_diverging_run_stops_cleanly(num_steps):
    """A learning rate far too large overflows the network: the run is marked diverged, not crashed."""
    import torch

    from pdenets.data.synthetic import make_synthetic
    from pdenets.tasks.synthetic import SyntheticConfig, _Split, _train_run, _weights

    config = SyntheticConfig(epochs=10)
    hp = {"n_top": 10, "sigma": 0.5, "step_size": 1.0, "lr": 1e30}
    splits = []
    for seed in (0, 1):
        data = make_synthetic("moon", 60, seed=seed)
        points = data.points.float()
        splits.append(_Split(points, data.labels, _weights(points, hp, config)))
    result = _train_run(splits[0], splits[1], hp, num_steps, 0.9, config, init_seed=0, snapshot_epochs=None)
    assert result["diverged_at_epoch"] is not None
    assert len(result["test_curve"]) == config.epochs + 1
    assert all(0.0 <= accuracy <= 1.0 for accuracy in result["train_curve"] + result["test_curve"])
