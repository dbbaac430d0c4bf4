"""Tabular classification data: scikit-learn's bundled breast-cancer set, or a CSV file of the user's.

A CSV file needs a header row, numeric feature columns and one label column (the last one, or the
one named by ``label_column``); labels may be any strings or numbers, compared by value (``1``,
``1.0`` and `` 1`` are one class); a row whose label cell is empty is *unlabelled* (label ``-1``: it
takes part, and is predicted, but is never trained on or scored). An ``id_column`` names the rows
(distinct, non-empty; it is no feature; :func:`detected_id_column` finds a column headed ``id``); without
one, a row is named by its line number. Feature cells
are read strictly
(:func:`~pdenets.data.csvfile.parse_number`: finite decimal numbers; ``1_0`` is refused, not read
as 10). Features are returned unscaled; the task standardizes them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

import numpy as np

from .._checks import nearest_hint
from .csvfile import normalized_labels, parse_number, read_csv_table, shown_value
from .errors import DatasetError, DatasetNotFoundError, dataset_error
from .paths import regular_file

__all__ = ["TabularData", "load_tabular", "TABULAR_DATASETS", "detected_id_column", "has_split_column"]

TABULAR_DATASETS = ("breast-cancer",)


@dataclass(frozen=True)
class TabularData:
    name: str
    features: np.ndarray  # (n, d) float64
    labels: np.ndarray  # (n,) int64 in 0..c-1, -1 for an unlabelled row
    class_names: List[str]
    feature_names: List[str]
    #: each row's id: the id column's cell, else its line number in the file (its row number, from 0, for a
    #: bundled dataset)
    row_ids: Optional[List[str]] = None
    #: the label column's header (a CSV file's)
    label_column: str = ""
    #: the table's own split: a column headed ``split`` (any case), as ``(line, row id, set word)`` for its
    #: non-empty cells (:func:`~pdenets.data.split_file.split_of_entries` reads them); ``None``: no such
    #: column
    split_entries: Optional[List[Tuple[int, str, str]]] = None

    def ids(self) -> List[str]:
        return self.row_ids if self.row_ids is not None else [str(row) for row in range(len(self.labels))]

    @property
    def num_classes(self) -> int:
        return len(self.class_names)


def load_tabular(
    name: Union[str, Path], *, label_column: Optional[str] = None, id_column: Optional[str] = None
) -> TabularData:
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
    label_index = _column_index(path, header, label_column, len(header) - 1)
    assert label_index is not None  # the default is a position
    id_index = _column_index(path, header, id_column, None)
    if id_index is not None and id_index == label_index:
        raise dataset_error(path, f"the column {header[label_index]!r} cannot be both the label and the id")
    split_index = next(
        (
            column
            for column, cell in enumerate(header)
            if cell.lower() == "split" and column not in (label_index, id_index)
        ),
        None,
    )
    if len(header) - (id_index is not None) - (split_index is not None) < 2:
        raise dataset_error(path, "needs at least one feature column beside the label and id columns")
    split_entries: List[Tuple[int, str, str]] = []
    features, labels, lines, row_ids = [], [], [], []
    seen: Dict[str, int] = {}
    for number, row in rows[1:]:
        if len(row) != len(header):
            raise dataset_error(path, f"line {number} has {len(row)} fields, the header {len(header)}")
        values = []
        for column, cell in enumerate(row):
            if column in (label_index, id_index, split_index):
                continue
            try:
                values.append(parse_number(cell))
            except ValueError as error:
                hint = (
                    " (name it with --id-column, it is then no feature)"
                    if header[column].lower() == "id"
                    else ""
                )
                raise dataset_error(
                    path, f"line {number}, column {header[column]!r}: {error}{hint}"
                ) from None
        column_name = header[id_index] if id_index is not None else None
        row_id = row_id_of(path, number, row, id_index, column_name, seen)
        if split_index is not None and row[split_index].strip():
            split_entries.append((number, row_id, row[split_index].strip()))
        features.append(values)
        labels.append(row[label_index])
        lines.append(number)
        row_ids.append(row_id)
    known = [row for row, cell in enumerate(labels) if cell.strip()]
    names, ids = normalized_labels([labels[row] for row in known]) if known else ([], [])
    if len(names) < 2:
        raise dataset_error(
            path, f"the label column {header[label_index]!r} has {len(names)} class(es); need >= 2"
        )
    class_ids = np.full(len(labels), -1, dtype=np.int64)
    class_ids[known] = ids
    return TabularData(
        path.stem,
        np.asarray(features, dtype=np.float64),
        class_ids,
        names,
        [h for c, h in enumerate(header) if c not in (label_index, id_index, split_index)],
        row_ids,
        header[label_index],
        split_entries if split_index is not None else None,
    )


def row_id_of(
    path: Path, number: int, row: List[str], index: Optional[int], column: Optional[str], seen: Dict[str, int]
) -> str:
    """The id of the row on line ``number``: its cell in the id column ``column`` (at ``index``), else the
    line number; an empty or repeated id is refused naming the line(s). ``seen`` (id → line) grows by it."""
    row_id = row[index].strip() if index is not None else str(number)
    if not row_id:
        raise dataset_error(path, f"line {number}: the id column {column!r} is empty")
    if row_id in seen:
        raise dataset_error(
            path, f"line {number} repeats the id {shown_value(row_id)} of line {seen[row_id]}"
        )
    seen[row_id] = number
    return row_id


def detected_id_column(name: Union[str, Path], id_column: Optional[str] = None) -> Optional[str]:
    """The id column of a table: ``id_column`` where given, else a column headed ``id`` (any case) of a CSV
    file, else ``None`` (a bundled dataset's rows are numbered).

    Examples:
        >>> detected_id_column("breast-cancer") is None
        True
    """
    if id_column is not None or str(name) in TABULAR_DATASETS:
        return id_column
    path = Path(str(name)).expanduser()
    if path.suffix.lower() != ".csv" or not path.is_file():
        return None
    rows = read_csv_table(path)
    header = [cell.strip() for cell in rows[0][1]] if rows else []
    return next((cell for cell in header if cell.lower() == "id"), None)


def has_split_column(name: Union[str, Path], label_column: Optional[str] = None) -> bool:
    """Whether a CSV table has a column headed ``split`` (any case) that is not its label column: the table's
    own split (:attr:`TabularData.split_entries`); only the header is read.

    Examples:
        >>> has_split_column("breast-cancer")
        False
    """
    path = Path(str(name)).expanduser()
    if str(name) in TABULAR_DATASETS or path.suffix.lower() != ".csv" or not path.is_file():
        return False
    rows = read_csv_table(path)
    header = [cell.strip() for cell in rows[0][1]] if rows else []
    return any(cell.lower() == "split" and cell != label_column for cell in header)


def _column_index(
    path: Path, header: List[str], name: Optional[str], default: Optional[int]
) -> Optional[int]:
    """The position of the column ``name`` (refused, with the nearest header, if absent), else ``default``."""
    if name is None:
        return default
    if name in header:
        return header.index(name)
    raise dataset_error(
        path, f"no column named {name!r}{nearest_hint(name, header)}; columns: {', '.join(header[:10])}"
    )
