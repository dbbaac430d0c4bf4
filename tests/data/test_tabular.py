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
    with pytest.raises(DatasetError, match="line 3: the label column 'kind' is empty"):
        load_tabular(_csv(tmp_path, "a,kind\n1,x\n2,\n3,y\n"))
    long_field = "x" * (csv.field_size_limit() + 10)
    data = load_tabular(_csv(tmp_path, f"a,kind\n1,{long_field}\n2,y\n", "long.csv"))  # read, not _csv.Error
    assert data.features.shape == (2, 1) and data.num_classes == 2
    with pytest.raises(DatasetError, match=r"'1111111111111111111111111111111111111111'… \(2000 characters\) is not"):
        load_tabular(_csv(tmp_path, "a,kind\n" + "1" * 1999 + "z,x\n2,y\n", "wide.csv"))
    (tmp_path / "binary.csv").write_bytes(b"a,kind\n\xff\xfe,1\n")
    with pytest.raises(DatasetError, match="not a UTF-8 text CSV file"):
        load_tabular(tmp_path / "binary.csv")
