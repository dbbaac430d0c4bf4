"""Reading a user's text files — CSV tables, JSON documents, lists of ids — and the numbers in them.

Every reader of :mod:`pdenets.data` reads text through :func:`read_text_file` or
:func:`read_csv_table`: the path must be a regular file (:func:`~pdenets.data.paths.regular_file`),
its size is checked against the memory budget before it is read, it is decoded as UTF-8 with an
optional byte-order mark (``utf-8-sig``: a spreadsheet's BOM never becomes part of the first
header), a field longer than the ``csv`` module's default limit is read (the limit is raised to
the file's size) rather than failing with ``_csv.Error``, and undecodable bytes or malformed
quoting are reported with the file's name.

Numbers are read by one strict parser, :func:`parse_number` (and :func:`parse_integer` for ids
and counts): ASCII decimal digits with an optional sign, decimal point and exponent, surrounding
spaces ignored. Python's ``float`` also reads ``1_000`` (as 1000) and digits of other scripts;
those are refused here. ``nan``/``inf`` are read only where a reader allows non-finite values,
and a value beyond the range of float64 (``1e400``) or an id beyond 64 bits is refused as too
large, never read as ``inf`` or wrapped around.
"""

from __future__ import annotations

import csv
import math
import re
from pathlib import Path
from typing import List, Tuple, Union

from .errors import dataset_error
from .limits import check_allocation
from .paths import regular_file

__all__ = [
    "read_csv_rows",
    "read_csv_table",
    "read_text_file",
    "parse_number",
    "parse_integer",
    "is_number",
    "shown_value",
    "normalized_labels",
    "MAX_ID",
]

#: Largest id or count a reader accepts (the largest int64).
MAX_ID = 2**63 - 1

_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # ASCII digits only
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NON_FINITE = re.compile(r"[+-]?(?:nan|inf|infinity)", flags=re.IGNORECASE)


def shown_value(value, limit: int = 40) -> str:
    """A cell or a value as an error message shows it: text quoted, other values as Python writes them, long
    ones cut.

    Examples:
        >>> shown_value("1_000"), shown_value(0.4), shown_value(10**50)
        ("'1_000'", '0.4', '1000000000000000000000000000000000000000… (51 digits)')
    """
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            text = str(value)
        except ValueError:  # more digits than Python converts
            return f"an integer of {value.bit_length()} bits"
        digits = len(text.lstrip("-"))
        return text if len(text) <= limit else text[:limit] + f"… ({digits} digits)"
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"
    return repr(value) if len(value) <= limit else repr(value[:limit]) + f"… ({len(value)} characters)"


def parse_number(cell: str, *, finite: bool = True) -> float:
    """The float64 a CSV cell spells, read strictly (see the module docstring).

    Args:
        cell: the text; surrounding spaces are ignored.
        finite: refuse ``nan`` and ``inf`` (default: ``True``).

    Raises:
        ValueError: the cell is not a decimal number (``1_000``, ``0x10``, ``1,5``), is
            ``nan``/``inf`` where ``finite``, or lies beyond the range of float64 (``1e400``); the
            message quotes the cell.

    Examples:
        >>> parse_number(" -1.5e3 "), parse_number("inf", finite=False)
        (-1500.0, inf)
        >>> parse_number("1_000")
        Traceback (most recent call last):
        ...
        ValueError: '1_000' is not a number
    """
    text = cell.strip()
    if _DECIMAL.fullmatch(text):
        value = float(text)
        if math.isinf(value):
            raise ValueError(f"{shown_value(cell)} is too large for a float64 (at most 1.8e308)")
        return value
    if _NON_FINITE.fullmatch(text):
        if finite:
            raise ValueError(f"{shown_value(cell)} is not a finite number")
        return float(text)
    raise ValueError(f"{shown_value(cell)} is not a number")


def is_number(cell: str) -> bool:
    """Whether :func:`parse_number` reads ``cell`` (``nan`` and ``inf`` included)."""
    text = cell.strip()
    return bool(_DECIMAL.fullmatch(text) or _NON_FINITE.fullmatch(text))


def parse_integer(cell: str, what: str = "id") -> int:
    """The whole number a CSV cell spells (``3``, ``-1``, ``3.0``, ``1e3``), as a Python ``int``.

    Args:
        cell: the text; surrounding spaces are ignored.
        what: what the number is, for the message (default: ``"id"``).

    Raises:
        ValueError: not a number, not a whole number (``2.5``), or beyond ``±(2^63 - 1)``; the
            message quotes the cell.

    Examples:
        >>> parse_integer("42"), parse_integer("-1"), parse_integer("2.0")
        (42, -1, 2)
        >>> parse_integer("100000000000000000000000000000")
        Traceback (most recent call last):
        ...
        ValueError: '100000000000000000000000000000' is too large for an id (at most 2^63 - 1)
    """
    text = cell.strip()
    if _INTEGER.fullmatch(text):
        digits = text.lstrip("+-").lstrip("0")
        value = int(text) if len(digits) <= 19 else None
        if value is None or abs(value) > MAX_ID:
            raise ValueError(f"{shown_value(text)} is too large for {_article(what)} (at most 2^63 - 1)")
        return value
    number = parse_number(cell, finite=True)
    if not number.is_integer():
        raise ValueError(f"{shown_value(cell)} is not a whole number")
    if abs(number) > MAX_ID:
        raise ValueError(f"{shown_value(cell)} is too large for {_article(what)} (at most 2^63 - 1)")
    return int(number)


def _article(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def read_text_file(path: Union[str, Path], what: str = "a text file") -> str:
    """The text of a UTF-8 file (a byte-order mark is dropped); every failure a DatasetError naming it.

    Args:
        path: a regular file (:func:`~pdenets.data.paths.regular_file`; missing raises
            :class:`~pdenets.data.errors.DatasetNotFoundError`).
        what: what the file should be, for the message (default: ``"a text file"``).
    """
    path = regular_file(path)
    size = path.stat().st_size
    check_allocation(
        size, 8, "reading the file", path
    )  # text and what is parsed from it: several bytes per byte
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        raise dataset_error(path, f"not UTF-8 text; expected {what}") from None
    except OSError as error:
        raise dataset_error(path, f"cannot be read ({error.strerror or error})") from None


def read_csv_table(path: Union[str, Path]) -> List[Tuple[int, List[str]]]:
    """``(line number, cells)`` of every row of a UTF-8 CSV file that holds a non-blank cell.

    Lines are numbered from 1 as an editor shows them; a byte-order mark is dropped.
    """
    path = regular_file(path)
    size = path.stat().st_size
    check_allocation(
        size, 8, "reading the CSV file", path
    )  # rows of Python strings: several bytes per byte read
    csv.field_size_limit(max(csv.field_size_limit(), size + 1))
    rows = []
    try:
        with open(path, newline="", encoding="utf-8-sig") as handle:
            reader = csv.reader(handle)
            start = 1
            for row in reader:
                if any(cell.strip() for cell in row):
                    rows.append((start, row))
                start = reader.line_num + 1
    except UnicodeDecodeError:
        raise dataset_error(path, "not a UTF-8 text CSV file") from None
    except csv.Error as error:
        raise dataset_error(path, f"not a readable CSV file ({error})") from None
    except OSError as error:
        raise dataset_error(path, f"cannot be read ({error.strerror or error})") from None
    return rows


def read_csv_rows(path: Union[str, Path]) -> List[List[str]]:
    """The rows of a UTF-8 CSV file that hold a non-blank cell, as lists of strings (see
    :func:`read_csv_table`)."""
    return [row for _, row in read_csv_table(path)]


def normalized_labels(cells: List[str]) -> Tuple[List[str], List[int]]:
    """Class names and class ids of label cells, compared by value: ``1``, ``1.0`` and `` 1 `` are one class.

    Cells that all read as finite numbers (:func:`parse_number`) are classes by numeric value
    (named ``1``, ``2.5``; ``10`` after ``2``); otherwise by the stripped text. Returns
    ``(names, ids)``; an empty cell raises ``ValueError`` naming its position.
    """
    stripped = [cell.strip() for cell in cells]
    empty = next((index for index, cell in enumerate(stripped) if not cell), None)
    if empty is not None:
        raise ValueError(f"row {empty + 1} has an empty label")
    try:
        numbers = [parse_number(cell) for cell in stripped]
        numeric = True
    except ValueError:
        numeric = False
    keys: Union[List[Union[int, float]], List[str]]
    ordered: Union[List[Union[int, float]], List[str]]
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
