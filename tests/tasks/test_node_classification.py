"""Node-classification protocol end to end: CLI, store, resume after kill -9, report."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from pdenets.cli import main
from pdenets.data.paths import resolve_data_dir
from pdenets.tasks.node_classification import NodeClassificationConfig, make_jobs, run_single

from ..graph_fixtures import write_sbm_npz

SHORT = ["--set", "max_epochs=20", "--set", "patience=5", "--set", "train_per_class=10", "--set",
         "val_per_class=10", "--no-progress"]


@pytest.fixture()
def graph(tmp_path):
    return str(write_sbm_npz(tmp_path / "sbm.npz"))


def test_cli_on_a_user_graph(graph, tmp_path):
    out = tmp_path / "run"
    code = main(["run", "node-classification", "--dataset", graph, "--model", "diff-resnet,no-diff-resnet,gcn",
                 "--splits", "2", "--inits", "1", "--workers", "1", "--out", str(out)] + SHORT)
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    table = results["table"]["sbm"]
    assert set(table) == {"diff-resnet", "no-diff-resnet", "gcn"} and all(e["runs"] == 2 for e in table.values())
    assert table["diff-resnet"]["mean"] > 50  # three classes: chance is 33 %
    assert results["graphs"]["sbm"]["nodes"] <= 180
    for name in ("report.md", "report.html", "accuracy.png", "runs.csv", "config.yaml", "results.sqlite"):
        assert (out / name).exists(), name
    assert "| diff-resnet |" in (out / "report.md").read_text()


def test_same_job_same_result(graph):
    config = NodeClassificationConfig(datasets=[graph], models=["diff-resnet"], num_splits=1, num_inits=1,
                                      max_epochs=10, patience=5, train_per_class=10, val_per_class=10)
    job = make_jobs(config)[0]
    first, second = run_single(job.payload), run_single(job.payload)
    assert (first["accuracy"], first["epochs"]) == (second["accuracy"], second["epochs"])


def test_kill_9_then_rerun_ends_with_exactly_all_runs(graph, tmp_path):
    out = tmp_path / "run"
    command = [sys.executable, "-m", "pdenets.cli", "run", "node-classification", "--dataset", graph, "--model",
               "diff-resnet", "--splits", "4", "--inits", "3", "--workers", "1", "--out", str(out)] + SHORT
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    database = out / "results.sqlite"
    deadline = time.time() + 120
    stored = 0
    while time.time() < deadline and process.poll() is None:
        if database.exists():
            try:
                stored = sqlite3.connect(database).execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            except sqlite3.OperationalError:
                stored = 0
            if stored >= 3:
                break
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert 3 <= stored < 12, "the run should be killed mid-way"
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = sqlite3.connect(database).execute("SELECT key FROM runs").fetchall()
    assert len(rows) == 12 and len(set(rows)) == 12


def test_unknown_shortcut_and_model_are_reported(capsys, graph):
    with pytest.raises(SystemExit):
        main(["run", "node-classification", "--datasett", graph])
    assert "unknown option" in capsys.readouterr().err
    code = main(["run", "node-classification", "--dataset", graph, "--model", "mlp", "--no-progress"])
    assert code == 2 and "unknown model" in capsys.readouterr().err


def test_missing_dataset_fails_before_any_run(tmp_path, capsys):
    code = main(["run", "node-classification", "--dataset", "cora", "--data-dir", str(tmp_path), "--out",
                 str(tmp_path / "run"), "--no-progress"])
    assert code == 2 and "missing dataset file" in capsys.readouterr().err


@pytest.mark.skipif(not (resolve_data_dir() / "npz" / "cora.npz").is_file(), reason="Cora not in $PDENETS_DATA")
def test_quick_cora_smoke(tmp_path):
    out = tmp_path / "cora"
    code = main(["run", "node-classification", "--quick", "--dataset", "cora", "--model", "diff-resnet,gcn",
                 "--set", "max_epochs=15", "--out", str(out), "--no-progress"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    assert results["graphs"]["cora"]["nodes"] == 2485 and results["graphs"]["cora"]["edges"] == 5069
    assert results["graphs"]["cora"]["spectral_bound"] > 0.25  # Table 6's gamma is stable
    for model in ("diff-resnet", "gcn"):
        assert 40 < results["table"]["cora"][model]["mean"] <= 100


def test_report_only_builds_the_report_from_stored_runs(graph, tmp_path):
    out = tmp_path / "run"
    base = ["run", "node-classification", "--dataset", graph, "--workers", "1", "--splits", "2", "--inits", "1",
            "--out", str(out)]
    assert main(base + ["--model", "no-diff-resnet"] + SHORT) == 0
    # Another model is asked for, but --report-only runs nothing.
    assert main(base + ["--model", "no-diff-resnet,gcn", "--report-only"] + SHORT) == 0
    assert sqlite3.connect(out / "results.sqlite").execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 2
    results = json.loads((out / "results.json").read_text())
    assert (results["runs_stored"], results["runs_planned"]) == (2, 4)
    assert set(results["table"]["sbm"]) == {"no-diff-resnet"}
    report = (out / "report.md").read_text()
    assert "2 of 4 planned runs stored" in report and "| gcn | — |" in report


def test_growing_the_protocol_keeps_the_stored_runs(graph, tmp_path):
    out = tmp_path / "run"
    base = ["run", "node-classification", "--dataset", graph, "--model", "no-diff-resnet", "--workers", "1",
            "--out", str(out)] + SHORT
    assert main(base + ["--splits", "2", "--inits", "1"]) == 0
    first = dict(sqlite3.connect(out / "results.sqlite").execute("SELECT key, accuracy FROM runs").fetchall())
    assert main(base + ["--splits", "3", "--inits", "2"]) == 0
    grown = dict(sqlite3.connect(out / "results.sqlite").execute("SELECT key, accuracy FROM runs").fetchall())
    assert len(grown) == 6 and all(grown[key] == accuracy for key, accuracy in first.items())
    # the runs computed within the larger protocol equal what a fresh 3 x 2 protocol computes
    config = NodeClassificationConfig(datasets=[graph], models=["no-diff-resnet"], num_splits=3, num_inits=2,
                                      max_epochs=20, patience=5, train_per_class=10, val_per_class=10)
    job = make_jobs(config)[0]
    assert run_single(job.payload)["accuracy"] == grown[job.key]
