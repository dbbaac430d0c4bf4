"""coin-tabular on a user's table whose label cells are partly empty: the empty ones are predicted (never
trained on, never scored), every row by its id; the file gives the stored split's accuracy."""

import csv
import json
import re

import numpy as np
import pytest

from pdenets.cli import main
from pdenets.data.errors import DatasetError
from pdenets.data.tabular import load_tabular
from pdenets.experiments import job_key
from pdenets.experiments.predictions import prediction_accuracy, read_predictions
from pdenets.tasks.coin_tabular.task import CoinTabularConfig, CoinTabularTask, labelled_split

CLASSES = ["low", "mid", "high"]
PINNED_SPLIT = [8, 16, 18, 23, 24, 25]  # labelled_split(np.arange(30) % 3, 2, 7) before -1 rows existed


def _table(path, rows=120, empty_every=5, seed=0):
    """Three separated classes; every ``empty_every``-th label left empty; hostile ids; the truth."""
    rng = np.random.default_rng(seed)
    truth = {}
    with open(path, "w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream)
        writer.writerow(["wine id", "acidity", "sugar", "alcohol", "quality"])
        for row in range(rows):
            label = CLASSES[row % 3]
            values = rng.normal(size=3) + 3 * np.eye(3)[row % 3]
            row_id = f'<img src=x onerror="alert({row})">, #{row}' if row % 13 == 0 else f"w{row}"
            truth[row_id] = label
            writer.writerow([row_id, *(f"{v:.5f}" for v in values), "" if row % empty_every == 0 else label])
    return truth


def test_empty_labels_are_predicted_by_the_rows_ids(tmp_path):
    truth = _table(tmp_path / "wines.csv")
    out = tmp_path / "run"
    argv = ["run", "coin-tabular", "--dataset", str(tmp_path / "wines.csv"), "--labels", "5", "--splits", "2"]
    argv += [
        "--models",
        "coin",
        "--epochs",
        "60",
        "--set",
        "id_column=wine id",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    rows = read_predictions(out / "predictions.csv")
    assert [row["id"] for row in rows] == list(truth)  # every row once, in the file's order, by its id
    unlabelled = [row for row in rows if row["split"] == "unlabelled"]
    assert len(unlabelled) == 24 and all(row["label"] == "" for row in unlabelled)
    assert sum(row["predicted"] == truth[row["id"]] for row in unlabelled) / len(unlabelled) >= 0.8
    assert sum(row["split"] == "train" for row in rows) == 15
    report = (out / "report.md").read_text()
    accuracy = 100 * prediction_accuracy(rows, "test")
    assert f"| {accuracy:.2f} | {accuracy:.2f} |" in report  # the file's accuracy is the stored split's
    assert "24 samples without a label, predicted" in report and "<img" not in report
    # the accuracy to expect on the 24: their mean calibrated confidence, near what they turned out to be
    results = json.loads((out / "results.json").read_text())
    row = next(line for line in report.splitlines() if line.startswith("| wines | coin |"))
    estimate, low, high = map(
        float, re.search(r"\| 24 \| ([0-9.]+) \[([0-9.]+), ([0-9.]+)\] \|$", row).groups()
    )
    right = 100 * sum(row["predicted"] == truth[row["id"]] for row in unlabelled) / len(unlabelled)
    assert low < estimate < high and low - 10 <= right <= high + 10
    calibration = results["calibration"]["wines, 5 labels per class"]["coin"]
    assert calibration["runs"] == 2 and calibration["items"] == 2 * (len(truth) - 24 - 15)
    assert "## Calibration" in report and (out / "calibration.png").is_file()


def test_empty_label_rows_are_never_drawn_and_tables_without_them_keep_their_splits(tmp_path):
    _table(tmp_path / "t.csv", rows=60, empty_every=4)
    table = load_tabular(tmp_path / "t.csv", id_column="wine id")
    assert (table.labels == -1).sum() == 15 and table.class_names == sorted(CLASSES)
    assert table.ids()[1] == "w1" and table.feature_names == ["acidity", "sugar", "alcohol"]
    for seed in range(20):
        drawn = labelled_split(table.labels, 3, seed)
        assert (table.labels[drawn] >= 0).all() and np.bincount(table.labels[drawn]).tolist() == [3, 3, 3]
    # the draws of a table without empty labels are those of the versions before unlabelled rows existed
    assert labelled_split(np.arange(30) % 3, 2, 7).tolist() == PINNED_SPLIT


def test_the_table_checks_name_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("id,x,label\na,1,p\nb,2,q\na,3,p\n")
    with pytest.raises(DatasetError, match="line 4 repeats the id 'a' of line 2"):
        load_tabular(path, id_column="id")
    with pytest.raises(DatasetError, match=r"column 'id': .*\(name it with --id-column"):
        load_tabular(path)
    with pytest.raises(DatasetError, match="cannot be both the label and the id"):
        load_tabular(path, label_column="label", id_column="label")
    with pytest.raises(DatasetError, match="no column named 'ident'"):
        load_tabular(path, id_column="ident")
    path.write_text("id,x,label\na,1,p\n,2,q\n")
    with pytest.raises(DatasetError, match="line 3: the id column 'id' is empty"):
        load_tabular(path, id_column="id")
    path.write_text("x,label\n1,p\n2,\n3,\n")
    with pytest.raises(DatasetError, match="has 1 class"):
        load_tabular(path)


def test_naming_an_id_column_changes_the_job_keys_and_leaving_it_out_keeps_them(tmp_path):
    _table(tmp_path / "t.csv", rows=30)
    base = CoinTabularConfig(datasets=[str(tmp_path / "t.csv")], splits=1, labels_per_class=[2])
    named = CoinTabularConfig(
        datasets=[str(tmp_path / "t.csv")], splits=1, labels_per_class=[2], id_column="wine id"
    )
    plain = {job_key("coin-tabular", job) for job in CoinTabularTask(base).jobs()}
    with_id = {job_key("coin-tabular", job) for job in CoinTabularTask(named).jobs()}
    assert plain.isdisjoint(with_id)
    assert all(job.id_column is None for job in CoinTabularTask(base).jobs())


def test_a_column_headed_id_names_the_rows_without_being_asked(tmp_path):
    from pdenets.data.tabular import detected_id_column

    path = tmp_path / "t.csv"
    rng = np.random.default_rng(0)
    rows = ["ID,x,y,label"]
    for row in range(40):
        label = "" if row % 6 == 0 else "ab"[row % 2]
        rows.append(f"item-{row},{rng.normal() + 3 * (row % 2):.4f},{rng.normal():.4f},{label}")
    path.write_text("\n".join(rows) + "\n")
    assert detected_id_column(path) == "ID" and detected_id_column(path, "x") == "x"
    out = tmp_path / "run"
    argv = [
        "run",
        "coin-tabular",
        "--dataset",
        str(path),
        "--labels",
        "3",
        "--splits",
        "1",
        "--models",
        "mlp",
    ]
    assert main(argv + ["--epochs", "30", "--no-progress", "--out", str(out)]) == 0
    predicted = read_predictions(out / "predictions.csv")
    assert [row["id"] for row in predicted] == [f"item-{row}" for row in range(40)]
    assert "| ID |" not in (out / "report.md").read_text().split("## Settings")[0]  # no feature named ID
