"""The predictions file: every id read back as written (hostile ones too), the predicted class the most
probable, the accuracy recomputed from the file, and nothing replaced or written wrong silently."""

import csv

import pytest
import torch

from pdenets.experiments.predictions import prediction_accuracy, read_predictions, write_predictions

HOSTILE = ["<script>alert(1)</script>", 'a,"b"', "line\nbreak\r\n", "x" * 10_000, "=1+1", " padded "]


def test_hostile_ids_and_class_names_read_back_unchanged(tmp_path):
    probabilities = torch.softmax(torch.randn(len(HOSTILE), 3, generator=torch.Generator().manual_seed(0)), 1)
    names = ["<i>cat</i>", "dog, big", 'say "hi"']
    path = write_predictions(tmp_path / "p.csv", HOSTILE, probabilities, names, labels=[names[0]] * 6)
    rows = read_predictions(path)
    assert [row["id"] for row in rows] == HOSTILE
    assert list(rows[0]) == ["id", "label", "predicted"] + [f"p({name})" for name in names]
    for row, values in zip(rows, probabilities):
        assert row["predicted"] == names[int(values.argmax())]
        assert [float(row[f"p({name})"]) for name in names] == pytest.approx(values.tolist(), rel=1e-5)


def test_the_accuracy_is_recomputed_from_the_file_per_split(tmp_path):
    probabilities = torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.3, 0.7]])
    path = write_predictions(
        tmp_path / "p.csv",
        ["1", "2", "3", "4"],
        probabilities,
        ["a", "b"],
        labels=["a", "a", None, "b"],
        splits=["train", "test", "unlabelled", "test"],
    )
    rows = read_predictions(path)
    assert [row["split"] for row in rows] == ["train", "test", "unlabelled", "test"]
    assert rows[2]["label"] == ""
    assert prediction_accuracy(rows) == pytest.approx(2 / 3)
    assert prediction_accuracy(rows, "test") == 0.5 and prediction_accuracy(rows, "unlabelled") is None


def test_a_tie_goes_to_the_first_class_and_the_header_is_exact(tmp_path):
    path = write_predictions(tmp_path / "p.csv", ["q"], torch.tensor([[0.5, 0.5]]), ["b", "a"])
    with open(path, newline="") as stream:
        assert list(csv.reader(stream)) == [["id", "predicted", "p(b)", "p(a)"], ["q", "b", "0.5", "0.5"]]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"ids": ["a", "a"]}, "must be distinct"),
        ({"class_names": ["x", "x"]}, "class names of a predictions file must be distinct"),
        ({"probabilities": torch.tensor([[0.5, float("nan")], [1.0, 0.0]])}, "NaN or infinity"),
        ({"probabilities": torch.ones(3, 2)}, "for 2 ids and 2 classes"),
        ({"labels": ["x"]}, "1 labels for 2 ids"),
        ({"splits": ["test"] * 3}, "3 splits for 2 ids"),
    ],
)
def test_inconsistent_predictions_are_refused(tmp_path, change, message):
    arguments = {"ids": ["a", "b"], "probabilities": torch.eye(2), "class_names": ["x", "y"], **change}
    with pytest.raises(ValueError, match=message):
        write_predictions(tmp_path / "p.csv", **arguments)
    assert not (tmp_path / "p.csv").exists()


def test_an_existing_file_is_never_replaced_unless_asked(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("mine")
    with pytest.raises(FileExistsError, match="exists"):
        write_predictions(path, ["a"], torch.tensor([[1.0, 0.0]]), ["x", "y"])
    assert path.read_text() == "mine"
    write_predictions(path, ["a"], torch.tensor([[1.0, 0.0]]), ["x", "y"], overwrite=True)
    assert read_predictions(path)[0]["predicted"] == "x"
