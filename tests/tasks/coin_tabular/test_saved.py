"""A coin-tabular run on a user's table keeps its models; ``pdenets predict RUN_DIR`` answers new rows with
them, the same answer after every reload, and refuses a model file that was altered, truncated, or comes
from another task or version, and new rows with other columns."""

import csv
import json

import numpy as np
import pytest

from pdenets.cli import main
from pdenets.experiments.predictions import prediction_accuracy, read_predictions

CLASSES = ["low", "mid", "high"]


def _write(path, rows, seed, order=("wine id", "acidity", "sugar", "alcohol", "quality"), empty_every=0):
    rng = np.random.default_rng(seed)
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(order)
        for row in range(rows):
            values = dict(zip(("acidity", "sugar", "alcohol"), rng.normal(size=3) + 3 * np.eye(3)[row % 3]))
            label = "" if empty_every and row % empty_every == 0 else CLASSES[row % 3]
            cells = {
                "wine id": f"s{seed}-{row}",
                "quality": label,
                **{k: f"{v:.5f}" for k, v in values.items()},
            }
            writer.writerow([cells[name] for name in order])


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("saved")
    _write(folder / "wines.csv", 90, seed=0, empty_every=5)
    out = folder / "run"
    argv = ["run", "coin-tabular", "--dataset", str(folder / "wines.csv"), "--labels", "5", "--splits", "1"]
    argv += ["--models", "coin,mlp", "--epochs", "60", "--set", "id_column=wine id", "--no-progress"]
    assert main(argv + ["--out", str(out)]) == 0
    return folder, out


def test_new_rows_are_answered_by_the_saved_models_the_same_after_every_reload(run, capsys):
    folder, out = run
    _write(folder / "new.csv", 30, seed=1, order=("quality", "alcohol", "wine id", "sugar", "acidity"))
    for model in ("coin", "mlp"):
        first, second = folder / f"{model}-1.csv", folder / f"{model}-2.csv"
        for path in (first, second):
            argv = [
                "predict",
                str(out),
                "--dataset",
                str(folder / "new.csv"),
                "--model",
                model,
                "--out",
                str(path),
            ]
            assert main(argv) == 0
        assert "30 rows of" in capsys.readouterr().out
        assert first.read_bytes() == second.read_bytes()  # reloaded, the same answer bit for bit
        rows = read_predictions(first)
        assert [row["id"] for row in rows] == [f"s1-{row}" for row in range(30)]
        assert prediction_accuracy(rows) >= 0.8
    # the MLP reads each row alone: its answer on the training rows is the run's predictions file
    mlp = folder / "train-mlp.csv"
    assert (
        main(
            ["predict", str(out), "--dataset", str(folder / "wines.csv"), "--model", "mlp", "--out", str(mlp)]
        )
        == 0
    )
    again = {row["id"]: row for row in read_predictions(mlp)}
    for row in read_predictions(out / "predictions-mlp.csv"):
        assert [again[row["id"]][key] for key in row if key.startswith("p(")] == [
            value for key, value in row.items() if key.startswith("p(")
        ]
    assert "model-coin/" in (out / "report.md").read_text()


def _damage(folder, how):
    weights, manifest = folder / "weights.safetensors", folder / "model.json"
    document = json.loads(manifest.read_text())
    if how == "flipped byte":
        data = bytearray(weights.read_bytes())
        data[-3] ^= 0xFF
        weights.write_bytes(bytes(data))
    elif how == "truncated":
        weights.write_bytes(weights.read_bytes()[:-8])
    elif how == "not JSON":
        manifest.write_text("{oops")
    else:
        field, value = how
        document[field] = value
        manifest.write_text(json.dumps(document))


@pytest.mark.parametrize(
    "how, message",
    [
        ("flipped byte", "SHA-256 is not its manifest's"),
        ("truncated", "its manifest says"),
        ("not JSON", "not a JSON manifest"),
        (("task", "node-classification"), "a model of the task 'node-classification', not 'coin-tabular'"),
        (("pdenets", "0.0.1"), "written by pdenets '0.0.1'"),
        (("format", 99), "not a pdenets model manifest of format 1"),
        (("shapes", {}), "its tensors are not those its manifest lists"),
        (("weights", {"bytes": 1, "sha256": "0"}), "its manifest says 1"),
    ],
)
def test_a_damaged_or_foreign_model_is_refused_in_one_line_naming_the_file(
    run, tmp_path, capsys, how, message
):
    import shutil

    folder, out = run
    copy = tmp_path / "run"
    shutil.copytree(out, copy)
    _damage(copy / "model-mlp", how)
    _write(tmp_path / "new.csv", 6, seed=2)
    argv = [
        "predict",
        str(copy),
        "--dataset",
        str(tmp_path / "new.csv"),
        "--model",
        "mlp",
        "--out",
        str(tmp_path / "p.csv"),
    ]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert message in error and "model-mlp" in error and error.count("\n") == 1, error
    assert not (tmp_path / "p.csv").exists()


@pytest.mark.parametrize(
    "order, message",
    [
        (("wine id", "acidity", "sugar", "quality"), "missing 'alcohol'"),
        (("wine id", "acidity", "sugar", "alcohol", "quality", "colour"), "not the model's 'colour'"),
        (("acidity", "sugar", "alcohol", "quality"), "missing 'wine id'"),
    ],
)
def test_new_rows_with_other_columns_are_refused(run, tmp_path, capsys, order, message):
    _, out = run
    rng = np.random.default_rng(0)
    with open(tmp_path / "new.csv", "w", newline="") as stream:
        writer = csv.writer(stream)
        writer.writerow(order)
        for row in range(3):
            writer.writerow(
                [
                    f"n{row}" if name == "wine id" else "low" if name == "quality" else f"{rng.normal():.3f}"
                    for name in order
                ]
            )
    argv = [
        "predict",
        str(out),
        "--dataset",
        str(tmp_path / "new.csv"),
        "--model",
        "coin",
        "--out",
        str(tmp_path / "p.csv"),
    ]
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_predict_names_what_is_missing(run, tmp_path, capsys):
    folder, out = run
    cases = [
        (
            ["predict", str(tmp_path), "--dataset", "x.csv", "--out", str(tmp_path / "p.csv")],
            "no saved model",
        ),
        (["predict", str(out), "--out", str(tmp_path / "p.csv")], "give the new data with --dataset"),
        (
            ["predict", str(out), "--dataset", "x.csv", "--model", "gcn", "--out", str(tmp_path / "p.csv")],
            "give --model, one of coin, mlp",
        ),
        (
            [
                "predict",
                str(out),
                "--dataset",
                str(folder / "wines.csv"),
                "--model",
                "coin",
                "--out",
                str(folder / "wines.csv"),
            ],
            "is an input file",
        ),
        (
            ["predict", "few-shot", "--dataset", "x.csv", "--out", str(tmp_path / "p.csv")],
            "--dataset is for a run's saved model",
        ),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err, argv


def test_a_run_folder_reused_with_other_settings_keeps_the_saved_model(tmp_path):
    _write(tmp_path / "wines.csv", 60, seed=0)
    argv = [
        "run",
        "coin-tabular",
        "--dataset",
        str(tmp_path / "wines.csv"),
        "--splits",
        "1",
        "--models",
        "mlp",
    ]
    argv += ["--epochs", "20", "--set", "id_column=wine id", "--no-progress", "--out", str(tmp_path / "run")]
    assert main(argv + ["--labels", "5"]) == 0
    first = (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes()
    assert main(argv + ["--labels", "5", "--report-only"]) == 0  # the same model again: rewritten alike
    assert (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes() == first
    assert main(argv + ["--labels", "8"]) == 0  # other settings: another folder, the first model kept
    assert (tmp_path / "run" / "model-mlp" / "weights.safetensors").read_bytes() == first
    others = sorted(p.name for p in (tmp_path / "run").glob("model-mlp-*"))
    assert len(others) == 1 and others[0] in (tmp_path / "run" / "report.md").read_text()
