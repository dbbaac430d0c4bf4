"""Tabular classification data: scikit-learn's bundled breast-cancer set, or a CSV file of the user's.

A CSV file needs a header row, numeric feature columns and one label column (the last one, or the
one named by ``label_column``); labels may be any strings or numbers. Features are returned
unscaled; the task standardizes them.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Union

import numpy as np

from .errors import DatasetError, DatasetNotFoundError, dataset_error

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
        return TabularData("breast-cancer", bunch.data.astype(np.float64), bunch.target.astype(np.int64),
                           [str(c) for c in bunch.target_names], [str(f) for f in bunch.feature_names])
    path = Path(text).expanduser()
    if path.suffix.lower() != ".csv":
        raise DatasetError(f"unknown tabular dataset {text!r}: give breast-cancer or a path to a .csv file")
    if not path.is_file():
        raise DatasetNotFoundError(f"missing dataset file {path}")
    try:
        with path.open(newline="") as stream:
            rows = list(csv.reader(stream))
    except UnicodeDecodeError:
        raise dataset_error(path, "not a text CSV file") from None
    if len(rows) < 2:
        raise dataset_error(path, "needs a header row and at least one data row")
    header = [h.strip() for h in rows[0]]
    if len(header) < 2:
        raise dataset_error(path, "needs at least one feature column and a label column")
    if label_column is None:
        label_index = len(header) - 1
    elif label_column in header:
        label_index = header.index(label_column)
    else:
        raise dataset_error(path, f"no column named {label_column!r}; columns: {', '.join(header[:10])}")
    features, labels = [], []
    for number, row in enumerate(rows[1:], start=2):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            raise dataset_error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
        values = []
        for column, cell in enumerate(row):
            if column == label_index:
                continue
            try:
                value = float(cell)
            except ValueError:
                raise dataset_error(path, f"line {number}, column {header[column]!r}: {cell!r} is not a number") \
                    from None
            if not math.isfinite(value):
                raise dataset_error(path, f"line {number}, column {header[column]!r}: non-finite value {cell!r}")
            values.append(value)
        features.append(values)
        labels.append(row[label_index].strip())
    names = sorted(set(labels))
    if len(names) < 2:
        raise dataset_error(path, f"the label column {header[label_index]!r} has {len(names)} class(es); need >= 2")
    index = {label: position for position, label in enumerate(names)}
    return TabularData(path.stem, np.asarray(features, dtype=np.float64),
                       np.asarray([index[label] for label in labels], dtype=np.int64), names,
                       [h for c, h in enumerate(header) if c != label_index])
