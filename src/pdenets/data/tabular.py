"""Tabular classification data: scikit-learn's bundled breast-cancer set, or a CSV file of the user's.

A CSV file needs a header row, numeric feature columns and one label column (the last one, or the
one named by ``label_column``); labels may be any strings or numbers, compared by value (``1``,
``1.0`` and `` 1`` are one class; an empty label is refused). Feature cells are read strictly
(:func:`~pdenets.data.csvfile.parse_number`: finite decimal numbers; ``1_0`` is refused, not read
as 10). Features are returned unscaled; the task standardizes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Union

import numpy as np

from .._checks import nearest_hint
from .csvfile import normalized_labels, parse_number, read_csv_table
from .errors import DatasetError, DatasetNotFoundError, dataset_error
from .paths import regular_file

__all__ = ["TabularData", "load_tabular", "TABULAR_DATASETS"]

TABULAR_DATASETS = ("breast-cancer",)


@dataclass(frozen=True)
class TabularData:
    name: str
    features: np.ndarray  # (n, d) float64
    labels: np.ndarray  # (n,) int64 in 0..c-1
    class_names: List[str]
    feature_names: List[str]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def load_tabular(name: Union[str, Path], *, label_column: Optional[str] = None) -> TabularData:
    """``breast-cancer`` (569 × 30, 2 classes, bundled with scikit-learn) or a path to a CSV file."""
    text = str(name)
    if text == "breast-cancer":
        from sklearn.datasets import load_breast_cancer

        bunch = load_breast_cancer()
        return TabularData(
            "breast-cancer",
            bunch.data.astype(np.float64),
            bunch.target.astype(np.int64),
            [str(c) for c in bunch.target_names],
            [str(f) for f in bunch.feature_names],
        )
    path = Path(text).expanduser()
    if path.suffix.lower() != ".csv":
        raise DatasetError(f"unknown tabular dataset {text!r}: give breast-cancer or a path to a .csv file")
    regular_file(path, DatasetNotFoundError(f"missing dataset file {path}"))
    rows = read_csv_table(path)
    if len(rows) < 2:
        raise dataset_error(path, "needs a header row and at least one data row")
    header = [h.strip() for h in rows[0][1]]
    if len(header) < 2:
        raise dataset_error(path, "needs at least one feature column and a label column")
    if label_column is None:
        label_index = len(header) - 1
    elif label_column in header:
        label_index = header.index(label_column)
    else:
        raise dataset_error(
            path,
            f"no column named {label_column!r}{nearest_hint(label_column, header)}; columns: "
            f"{', '.join(header[:10])}",
        )
    features, labels, lines = [], [], []
    for number, row in rows[1:]:
        if len(row) != len(header):
            raise dataset_error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
        values = []
        for column, cell in enumerate(row):
            if column == label_index:
                continue
            try:
                values.append(parse_number(cell))
            except ValueError as error:
                raise dataset_error(path, f"line {number}, column {header[column]!r}: {error}") from None
        features.append(values)
        labels.append(row[label_index])
        lines.append(number)
    empty = next((row for row, cell in enumerate(labels) if not cell.strip()), None)
    if empty is not None:
        raise dataset_error(path, f"line {lines[empty]}: the label column {header[label_index]!r} is empty")
    names, ids = normalized_labels(labels)
    if len(names) < 2:
        raise dataset_error(
            path, f"the label column {header[label_index]!r} has {len(names)} class(es); need >= 2"
        )
    return TabularData(
        path.stem,
        np.asarray(features, dtype=np.float64),
        np.asarray(ids, dtype=np.int64),
        names,
        [h for c, h in enumerate(header) if c != label_index],
    )
