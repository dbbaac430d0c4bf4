"""Reading a user's CSV file: every failure one :class:`~pdenets.data.DatasetError` naming the file.

Shared by the loaders that take CSV (tabular data, region series). The file's size is checked
against the memory budget before it is read; a field longer than the ``csv`` module's default
limit is read (the limit is raised to the file's size) rather than failing with ``_csv.Error``;
undecodable bytes and malformed quoting are reported with the file's name.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import List

from .errors import dataset_error
from .limits import check_allocation

__all__ = ["read_csv_rows", "normalized_labels"]


def read_csv_rows(path: Path) -> List[List[str]]:
    """The non-empty rows of a UTF-8 CSV file as lists of strings."""
    path = Path(path)
    size = path.stat().st_size
    check_allocation(size, 8, "reading the CSV file", path)  # rows of Python strings: several bytes per byte read
    csv.field_size_limit(max(csv.field_size_limit(), size + 1))
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            return [row for row in csv.reader(handle) if row]
    except UnicodeDecodeError:
        raise dataset_error(path, "not a UTF-8 text CSV file") from None
    except csv.Error as error:
        raise dataset_error(path, f"not a readable CSV file ({error})") from None


def normalized_labels(cells: List[str]) -> tuple:
    """Class names and class ids of label cells, compared by value: ``1``, ``1.0`` and `` 1 `` are one class.

    Cells that all read as numbers are classes by numeric value (named ``1``, ``2.5``); otherwise by the
    stripped text. Returns ``(names, ids)``; an empty cell raises ``ValueError`` naming its position.
    """
    stripped = [cell.strip() for cell in cells]
    empty = next((index for index, cell in enumerate(stripped) if not cell), None)
    if empty is not None:
        raise ValueError(f"row {empty + 1} has an empty label")
    try:
        numbers = [float(cell) for cell in stripped]
        numeric = all(number == number and abs(number) != float("inf") for number in numbers)
    except ValueError:
        numeric = False
    if numeric:
        keys = [int(number) if number.is_integer() else number for number in numbers]
        ordered = sorted(set(keys))
        names = [str(key) for key in ordered]
    else:
        keys = stripped
        ordered = sorted(set(keys))
        names = list(ordered)
    position = {key: index for index, key in enumerate(ordered)}
    return names, [position[key] for key in keys]
