"""`torchrun --nproc-per-node 2 pdenets run node-classification ...`: the graph split over two processes."""

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from datafiles import CORA_NPZ, requires_data

from ...graph_fixtures import write_sbm_npz

PDENETS = [sys.executable, "-m", "pdenets.cli"]
RUN = [
    "run",
    "node-classification",
    "--models",
    "diff-resnet",
    "--num-splits",
    "2",
    "--num-inits",
    "1",
    "--max-epochs",
    "25",
    "--patience",
    "10",
    "--train-per-class",
    "5",
    "--val-per-class",
    "5",
    "--no-progress",
]


def _env():
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    for name in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    return env


def _runs(folder):
    with open(Path(folder) / "runs.csv", newline="", encoding="utf-8") as handle:
        return sorted(csv.DictReader(handle), key=lambda row: int(row["split"]))


def _pair(args, cwd):
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--nproc-per-node=2",
            "--standalone",
            "-m",
            "pdenets.cli",
            *args,
        ],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=cwd,
        timeout=600,
    )


def test_two_processes_store_the_single_process_runs(tmp_path):
    graph = str(write_sbm_npz(tmp_path / "sbm.npz", classes=3, per_class=40))
    single = subprocess.run(
        [*PDENETS, *RUN, "--datasets", graph, "--out", "single"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=600,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    pair = _pair([*RUN, "--datasets", graph, "--out", "pair"], tmp_path)
    assert pair.returncode == 0, pair.stderr[-3000:]
    assert "rank 1: ran 2 run(s) beside rank 0" in pair.stdout
    alone, split = _runs(tmp_path / "single"), _runs(tmp_path / "pair")
    assert [row["key"] for row in alone] == [row["key"] for row in split]  # the same runs: contiguous parts
    for one, two in zip(alone, split):
        assert float(two["accuracy"]) == float(one["accuracy"])
        assert float(two["val_loss"]) == pytest.approx(float(one["val_loss"]), abs=1e-5)
        assert two["epochs"] == one["epochs"]
        # the calibration of the gathered validation and test nodes is the single process's
        for name in ("temperature", "ece", "calibrated_ece"):
            assert float(two[name]) == pytest.approx(float(one[name]), rel=1e-4), name
    assert not list(tmp_path.glob("single/*rank*")) and sorted(
        p.name for p in (tmp_path / "pair").iterdir()
    ) == sorted(p.name for p in (tmp_path / "single").iterdir())

    # a METIS partition saved once: other dropout draws, so other store keys; the run resumes nothing of the
    # above
    saved = subprocess.run(
        [*PDENETS, "partition", graph, "--parts", "2", "--out", "parts"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert saved.returncode == 0 and "into 2 parts" in saved.stdout, saved.stderr
    metis = _pair([*RUN, "--datasets", graph, "--out", "pair", "--partition", "parts"], tmp_path)
    assert metis.returncode == 0, metis.stderr[-3000:]
    keys = {row["key"] for row in _runs(tmp_path / "pair")}
    assert len(keys) == 2 and keys.isdisjoint(row["key"] for row in alone)
    assert "2 new run(s), 2 of 2 stored" in metis.stdout
    again = subprocess.run(
        [*PDENETS, "partition", graph, "--parts", "2", "--out", "parts"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert again.returncode != 0 and "not an empty folder" in again.stderr


@requires_data(CORA_NPZ)
def test_the_documented_command_runs_on_cora_with_the_default_step_size(tmp_path):
    """docs/large_graphs.md's command with no --set: γ = 0.25 lies beyond Cora's Gershgorin bound (0.174) and
    within its spectral bound, which the ranks now compute together as one process does; the two processes
    store the single process's runs (keys, accuracies)."""
    args = ["run", "node-classification", "--datasets", "cora", "--models", "diff-resnet", "--no-progress"]
    args += ["--num-splits", "1", "--num-inits", "1", "--max-epochs", "5", "--patience", "5"]
    env = {**_env(), "PDENETS_DATA": os.environ.get("PDENETS_DATA", "")}
    single = subprocess.run(
        [*PDENETS, *args, "--out", "single"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    assert single.returncode == 0, single.stderr[-3000:]
    pair = _pair([*args, "--out", "pair"], tmp_path)
    assert pair.returncode == 0, pair.stderr[-3000:]
    alone, split = _runs(tmp_path / "single"), _runs(tmp_path / "pair")
    assert [row["key"] for row in alone] == [row["key"] for row in split]
    assert [row["accuracy"] for row in alone] == [row["accuracy"] for row in split]


def test_a_saved_partition_of_other_parts_is_refused(tmp_path):
    graph = str(write_sbm_npz(tmp_path / "sbm.npz", classes=2, per_class=20))
    saved = subprocess.run(
        [*PDENETS, "partition", graph, "--parts", "3", "--out", "parts"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert saved.returncode == 0, saved.stderr
    pair = _pair([*RUN, "--datasets", graph, "--out", "pair", "--partition", "parts"], tmp_path)
    assert pair.returncode != 0
    assert "has 3 parts" in pair.stderr and "this run has 2 processes" in pair.stderr
    wrong = subprocess.run(
        [*PDENETS, *RUN, "--datasets", graph, "--partition", "nowhere"],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert wrong.returncode != 0 and "neither a partitioner" in wrong.stderr
