"""Tabular CSV files: labels compared by value, empty labels and oversized fields named in one line."""

import csv

import numpy as np
import pytest

from pdenets.data import DatasetError
from pdenets.data.csvfile import normalized_labels
from pdenets.data.tabular import load_tabular


def _csv(tmp_path, text, name="table.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_labels_are_classes_by_value():
    assert normalized_labels(["1", "1.0", " 1", "2", "10"]) == (["1", "2", "10"], [0, 0, 0, 1, 2])
    assert normalized_labels(["b ", "a", " b"]) == (["a", "b"], [1, 0, 1])
    assert normalized_labels(["1", "x"]) == (["1", "x"], [0, 1])  # mixed: compared as text
    with pytest.raises(ValueError, match="row 2 has an empty label"):
        normalized_labels(["1", " "])


def test_tabular_csv_labels_whitespace_and_number_spellings_are_one_class(tmp_path):
    data = load_tabular(_csv(tmp_path, "a,b,kind\n0.1,1,1\n0.2,2,1.0\n0.3,3, 2\n0.4,4,2\n"))
    assert data.class_names == ["1", "2"] and data.labels.tolist() == [0, 0, 1, 1]
    np.testing.assert_allclose(data.features[:, 1], [1, 2, 3, 4])


def test_tabular_csv_errors_name_the_line(tmp_path):
    unlabelled = load_tabular(_csv(tmp_path, "a,kind\n1,x\n2,\n3,y\n"))  # an empty label: an unlabelled row
    assert unlabelled.labels.tolist() == [0, -1, 1] and unlabelled.ids() == ["2", "3", "4"]
    with pytest.raises(DatasetError, match="line 3: the id column 'id' is empty"):
        load_tabular(_csv(tmp_path, "id,a,kind\nq,1,x\n,2,y\n", "ids.csv"), id_column="id")
    long_field = "x" * (csv.field_size_limit() + 10)
    data = load_tabular(_csv(tmp_path, f"a,kind\n1,{long_field}\n2,y\n", "long.csv"))  # read, not _csv.Error
    assert data.features.shape == (2, 1) and data.num_classes == 2
    with pytest.raises(
        DatasetError, match=r"'1111111111111111111111111111111111111111'… \(2000 characters\) is not"
    ):
        load_tabular(_csv(tmp_path, "a,kind\n" + "1" * 1999 + "z,x\n2,y\n", "wide.csv"))
    (tmp_path / "binary.csv").write_bytes(b"a,kind\n\xff\xfe,1\n")
    with pytest.raises(DatasetError, match="not a UTF-8 text CSV file"):
        load_tabular(tmp_path / "binary.csv")


def test_a_byte_order_mark_is_not_part_of_the_first_column_name(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbflabel,x,y\n0,1,2\n1,3,4\n")
    data = load_tabular(path, label_column="label")
    assert data.feature_names == ["x", "y"] and data.labels.tolist() == [0, 1]
    path.write_bytes(b"\xef\xbb\xbfx,y\n1,0\n3,1\n")
    assert load_tabular(path).feature_names == ["x"]


@pytest.mark.parametrize(
    "text, label_column, message",
    [
        ("f1,f2,label\n1_0,2,a\n3,4,b\n", None, "line 2, column 'f1': '1_0' is not a number"),
        ("f1,f2,label\n1,inf,a\n3,4,b\n", None, "line 2, column 'f2': 'inf' is not a finite number"),
        (
            "f1,f2,label\n1,1e999,a\n3,4,b\n",
            None,
            "line 2, column 'f2': '1e999' is too large for a float64 (at most 1.8e308)",
        ),
        (
            "f1,f2,label\n1,2,a\n3,4,b\n",
            "lable",
            "no column named 'lable' (did you mean 'label'?); columns: f1, f2, label",
        ),
    ],
    ids=["underscore", "infinite", "overflowing", "mistyped label column"],
)
def test_tabular_numbers_are_read_strictly(tmp_path, text, label_column, message):
    path = _csv(tmp_path, text)
    with pytest.raises(DatasetError) as caught:
        load_tabular(path, label_column=label_column)
    assert str(caught.value) == f"{path}: {message}"
