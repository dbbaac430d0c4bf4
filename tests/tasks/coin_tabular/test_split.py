"""coin-tabular on the user's own split: a column headed ``split`` or ``--split FILE`` fixes the training and
test rows, used exactly (the predictions file shows them), named in the store key; bad splits are refused
naming the line."""

import csv

import numpy as np
import pytest

from pdenets.cli import main
from pdenets.experiments.predictions import prediction_accuracy, read_predictions


def _table(path, split_column=True, words=None, rows=60):
    rng = np.random.default_rng(0)
    words = words or (lambda row: "train" if row < 10 else ("test" if row < 40 else ""))
    with open(path, "w", encoding="utf-8") as stream:
        stream.write("id,acidity,sugar" + (",Split" if split_column else "") + ",quality\n")
        for row in range(rows):
            kind = row % 2
            values = rng.normal(size=2) + 3 * kind
            cells = [f"r{row}", f"{values[0]:.4f}", f"{values[1]:.4f}"]
            cells += [words(row)] if split_column else []
            stream.write(",".join(cells + [["dry", "sweet"][kind]]) + "\n")
    return path


def _run(table, out, *extra):
    argv = ["run", "coin-tabular", "--dataset", str(table), "--epochs", "30", "--models", "coin,mlp"]
    return main(argv + list(extra) + ["--no-progress", "--out", str(out)])


def test_the_split_column_and_a_split_file_are_used_exactly_and_agree(tmp_path, capsys):
    table = _table(tmp_path / "wines.csv")
    assert _run(table, tmp_path / "column") == 0
    rows = read_predictions(tmp_path / "column" / "predictions-coin.csv")
    assert [row["id"] for row in rows if row["split"] == "train"] == [f"r{row}" for row in range(10)]
    assert [row["id"] for row in rows if row["split"] == "test"] == [f"r{row}" for row in range(10, 40)]
    assert all(row["split"] == "" for row in rows[40:])
    with open(tmp_path / "column" / "runs.csv", newline="") as stream:
        coin = next(r for r in csv.DictReader(stream) if r["model"] == "coin")
    assert coin["labels_per_class"] == "0" and coin["unlabelled"] == "30"
    assert prediction_accuracy(rows, "test") == pytest.approx(float(coin["accuracy"]))
    report = (tmp_path / "column" / "report.md").read_text()
    assert "| your split |" in report and "the table's split column" in report
    assert "Your split: its training rows" in report and "Per split, k labelled" not in report
    assert "| labels_per_class | 5, 10, 20 |" not in report and "| splits | 50 |" not in report
    assert "Left out, as they do nothing here: labels_per_class, splits" in report
    # the same split as a file (--split): the same runs, the same numbers
    plain = _table(tmp_path / "plain.csv", split_column=False)
    split = tmp_path / "my split.csv"
    split.write_text("id,set\n" + "".join(f"r{row},{'train' if row < 10 else 'test'}\n" for row in range(40)))
    assert _run(plain, tmp_path / "file", "--split", str(split)) == 0
    assert "`my split.csv`" in (tmp_path / "file" / "report.md").read_text()
    again = read_predictions(tmp_path / "file" / "predictions-coin.csv")
    assert [row["split"] for row in again] == [row["split"] for row in rows]
    assert [row["p(dry)"] for row in again] == [row["p(dry)"] for row in rows]
    # another split is another run (its digest is in the key), never the stored one
    split.write_text("".join(f"r{row},{'train' if row < 12 else 'test'}\n" for row in range(40)))
    assert _run(plain, tmp_path / "file", "--split", str(split)) == 0
    assert "2 new run(s)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "words, message",
    [
        (lambda row: "val" if row == 3 else ("train" if row < 10 else "test"), "line 5: unknown set 'val'"),
        (lambda row: "train" if row < 10 else "", "no item is in test"),
        (
            lambda row: "trian" if row == 0 else ("train" if row < 10 else "test"),
            "line 2: unknown set 'trian'",
        ),
    ],
)
def test_a_bad_split_column_is_refused_naming_the_line(tmp_path, capsys, words, message):
    table = _table(tmp_path / "wines.csv", words=words)
    assert _run(table, tmp_path / "run") == 2
    error = capsys.readouterr().err
    assert message in error and "wines.csv" in error and error.count("\n") == 1, error


def test_a_bad_split_file_is_refused_naming_the_line(tmp_path, capsys):
    table = _table(tmp_path / "plain.csv", split_column=False)
    split = tmp_path / "split.csv"
    for text, message in (
        ("r0,train\nr99,test\n", "line 2: 'r99' is no item of the data"),
        ("r0,train\nr1,test\nr0,test\n", "line 3: 'r0' is named again"),
    ):
        split.write_text(text)
        assert _run(table, tmp_path / "run", "--split", str(split)) == 2
        assert message in capsys.readouterr().err
    both = _table(tmp_path / "both.csv")
    split.write_text("r0,train\nr1,test\n")
    assert _run(both, tmp_path / "run2", "--split", str(split)) == 2
    assert "keep one of them" in capsys.readouterr().err
    # a row of the training set without a label
    text = (tmp_path / "plain.csv").read_text().replace("r0,", "r0,", 1).splitlines()
    text[1] = ",".join(text[1].split(",")[:-1] + [""])
    (tmp_path / "plain.csv").write_text("\n".join(text) + "\n")
    assert _run(table, tmp_path / "run3", "--split", str(split)) == 2
    assert "'r0' is in train but has no label" in capsys.readouterr().err
