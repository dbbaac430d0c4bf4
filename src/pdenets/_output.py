"""Files pdenets writes for a user to open: CSV cells a spreadsheet would not evaluate, files created in one
step, never over the data they answer.

The ground floor of the package (like :mod:`pdenets._io`): the predictions and forecasts files, a run's
``runs.csv`` and the report's tables all write through :func:`write_csv`, so it imports nothing of pdenets.

**Cells.** A spreadsheet (Excel, LibreOffice, Google Sheets) reads a cell that starts with ``=``, ``+``,
``-``, ``@``, a tab or a carriage return as a formula, and a formula can run a program
(``=cmd|' /C calc'!A0``). Every text cell that starts with one of them, after any apostrophes, is written
with one more apostrophe in front (``'=cmd…``): the spreadsheet shows the text and evaluates nothing (the
OWASP rule for CSV injection).
A cell that is a number (``-0.25``, ``+3``, ``-inf``) is a value, not a formula, and is written as it is.
:func:`unneutralized_cell` undoes the rule: an id written and read back (:func:`read_csv_rows`) is the id
given.

**Creation.** Without ``overwrite`` a file is written beside its target and linked into place in one step
that fails where the target exists (two writers of one name: one wins, the other is refused); with
``overwrite`` it replaces the target in one rename. A target that is a folder, lies in a folder that cannot
be written, or is one of the files read (``inputs``: a file, or any file inside a folder) is refused in one
line (:class:`OutputError`), before anything is written.

Examples:
    >>> neutralized_cell("=cmd|' /C calc'!A0"), neutralized_cell("-0.5"), neutralized_cell("a-b")
    ("'=cmd|' /C calc'!A0", '-0.5', 'a-b')
    >>> unneutralized_cell(neutralized_cell("@sum")), unneutralized_cell(neutralized_cell("'=x"))
    ('@sum', "'=x")
"""

from __future__ import annotations

import csv
import errno
import io
import math
import os
import re
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Union

from ._io import atomic_write, new_temporary_file

__all__ = [
    "OutputError",
    "OutputExistsError",
    "neutralized_cell",
    "unneutralized_cell",
    "csv_text",
    "write_csv",
    "read_csv_rows",
    "checked_output",
]

#: a cell a spreadsheet evaluates: its first character after any apostrophes
_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_WRITTEN = re.compile(r"^'+[=+\-@\t\r]")


class OutputError(ValueError):
    """An output file that cannot be written where asked (one line naming it and why)."""


class OutputExistsError(OutputError, FileExistsError):
    """An output file that exists already (or was created meanwhile by another writer)."""


def _is_number(cell: str) -> bool:
    try:
        value = float(cell)
    except ValueError:
        return False
    return math.isfinite(value) or cell.strip().lstrip("+-").lower() in ("inf", "infinity")


def neutralized_cell(cell: object) -> str:
    """``cell`` as text that a spreadsheet shows and never evaluates (module docstring)."""
    text = "" if cell is None else str(cell)
    if _FORMULA.match(text) and not _is_number(text):
        return "'" + text
    return text


def unneutralized_cell(cell: str) -> str:
    """The text :func:`neutralized_cell` was given, from what it wrote."""
    if _WRITTEN.match(cell) and not _is_number(cell):
        return cell[1:]
    return cell


def csv_text(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """The CSV text of ``header`` and ``rows``, every cell neutralized (module docstring)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([neutralized_cell(cell) for cell in header])
    for row in rows:
        writer.writerow([neutralized_cell(cell) for cell in row])
    return buffer.getvalue()


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def checked_output(
    path: Union[str, Path],
    *,
    inputs: Sequence[Union[str, Path]] = (),
    overwrite: bool = False,
    suffix: Optional[str] = None,
) -> Path:
    """``path``, if a file can be written there (module docstring); raises :class:`OutputError` in one line
    naming it otherwise.

    Args:
        path: the file to write.
        inputs: the files and folders read to make it; the output is never one of them, nor inside one.
        overwrite: an existing file may be replaced (default: refuse).
        suffix: the ending the name must have (e.g. ``".csv"``).
    """
    path = Path(path)
    if suffix is not None and path.suffix.lower() != suffix:
        raise OutputError(f"{path}: the file name must end in {suffix}")
    resolved = path.resolve()
    for given in inputs:
        source = Path(given).resolve()
        if _inside(resolved, source) if source.is_dir() else resolved == source:
            where = f"inside the dataset folder {given}" if source.is_dir() else f"an input file ({given})"
            raise OutputError(f"{path} is {where}: outputs never replace the data they answer")
    if path.is_dir():
        raise OutputError(f"{path} is a folder; give the path of a file to write")
    if path.exists() and not overwrite:
        raise OutputExistsError(f"{path} exists; pass --overwrite to replace it (overwrite=True in Python)")
    parent = path.parent if str(path.parent) else Path(".")
    existing = next((folder for folder in [parent, *parent.parents] if folder.exists()), None)
    if existing is not None and not existing.is_dir():
        raise OutputError(f"{path}: {existing} is a file, not a folder")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise OutputError(f"{path}: the folder {existing} cannot be written (permission denied)")
    return path


def write_csv(
    path: Union[str, Path],
    header: Sequence[object],
    rows: Iterable[Sequence[object]],
    *,
    overwrite: bool = False,
    inputs: Sequence[Union[str, Path]] = (),
) -> Path:
    """Write a CSV file for a user (module docstring): cells neutralized, created in one step, never over
    ``inputs``; returns ``path``.

    Raises:
        OutputError: ``path`` exists (without ``overwrite``), was created meanwhile by another writer, is a
            folder, cannot be written, or is one of ``inputs``.
    """
    path = checked_output(path, inputs=inputs, overwrite=overwrite)
    text = csv_text(header, rows)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if overwrite:
            with atomic_write(path) as stream:
                stream.write(text)
        else:
            _create(path, text)
    except OutputError:
        raise
    except OSError as error:
        raise OutputError(f"{path}: cannot be written ({error.strerror or error})") from None
    return path


def _create(path: Path, text: str) -> None:
    """Write ``text`` beside ``path`` and link it into place where nothing is there yet (one step)."""
    handle, temporary = new_temporary_file(path, f".{path.stem}-")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        try:
            os.link(temporary, path)
        except FileExistsError:
            raise OutputExistsError(
                f"{path} was created by another writer meanwhile; pass --overwrite to replace it"
            ) from None
        except OSError as error:  # a file system without hard links: exclusive creation instead
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            try:
                with open(path, "x", encoding="utf-8", newline="") as stream:
                    stream.write(text)
            except FileExistsError:
                raise OutputExistsError(
                    f"{path} was created by another writer meanwhile; pass --overwrite to replace it"
                ) from None
    finally:
        Path(temporary).unlink(missing_ok=True)


def read_csv_rows(path: Union[str, Path]) -> List[List[str]]:
    """The rows of a CSV file :func:`write_csv` wrote, every cell as it was given."""
    with open(path, newline="", encoding="utf-8") as stream:
        return [[unneutralized_cell(cell) for cell in row] for row in csv.reader(stream)]
