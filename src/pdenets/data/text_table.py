"""A user's texts with their labels: a CSV or TSV table, a JSON-lines file or a plain text file.

:func:`read_text_table` reads, by the file's suffix:

* ``.csv`` / ``.tsv``: a header row, then one text per row. The text column is ``text_column``, or the
  first header among ``text``, ``utterance``, ``sentence``, ``query``, ``question``, ``document``,
  ``content``, ``body`` (any case), or the one column left when the label and id columns are taken; the
  label column ``label_column`` or the first of ``label``, ``class``, ``intent``, ``category``, ``target``,
  ``y``; the id column ``id_column`` or ``id`` (optional: the line number otherwise).
* ``.jsonl``: one JSON object per line, its fields named as the columns above.
* ``.txt``: one text per line, ``label<TAB>text``, or the text alone for a text with no label.

A row whose label is empty (or absent) is *unlabelled*: it is kept, with its id, for prediction. Every
problem is a :class:`~pdenets.data.errors.DatasetError` naming the file and the line: an empty text, a
repeated id, a row with more or fewer cells than the header, a line that is no JSON object, a text or label
column that is not there (the columns are listed), fewer than two labelled classes.

Examples:
    >>> import tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "intents.csv").write_text("id,text,intent\\nq1,book a flight,travel\\n"
    ...                                           "q2,what is my balance,banking\\nq3,rent a car,\\n")
    >>> table = read_text_table(folder / "intents.csv")
    >>> table.class_names, table.labelled_ids, table.unlabelled_ids
    (('banking', 'travel'), ('q1', 'q2'), ('q3',))
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from .csvfile import normalized_labels, read_text_file
from .errors import DatasetError

__all__ = ["TextTable", "read_text_table", "TEXT_COLUMNS", "LABEL_COLUMNS", "TEXT_FILE_SUFFIXES"]

#: the headers read as the text column, in order of preference (any case)
TEXT_COLUMNS = ("text", "utterance", "sentence", "query", "question", "document", "content", "body")
#: the headers read as the label column, in order of preference (any case)
LABEL_COLUMNS = ("label", "class", "intent", "category", "target", "y")
#: the suffixes :func:`read_text_table` reads
TEXT_FILE_SUFFIXES = (".csv", ".tsv", ".jsonl", ".txt")


@dataclass(frozen=True)
class TextTable:
    """Texts, their class ids (``-1``: unlabelled), the class names and the rows' ids, in the file's order.

    Attributes:
        texts: one text per row.
        labels: class id per row, ``0 … K−1``, or ``-1`` for an unlabelled row.
        class_names: the labels' names, sorted (numbers by value).
        ids: the user's id of each row (the id column), else its line number.
        source: the file, for messages.
        text_column / label_column: the columns read (``""`` where the format has none).
    """

    texts: Tuple[str, ...]
    labels: Tuple[int, ...]
    class_names: Tuple[str, ...]
    ids: Tuple[str, ...]
    source: str
    text_column: str = ""
    label_column: str = ""

    @property
    def labelled_ids(self) -> Tuple[str, ...]:
        return tuple(row_id for row_id, label in zip(self.ids, self.labels) if label >= 0)

    @property
    def unlabelled_ids(self) -> Tuple[str, ...]:
        return tuple(row_id for row_id, label in zip(self.ids, self.labels) if label < 0)


def _fail(path: Path, problem: str) -> DatasetError:
    return DatasetError(f"{path}: {problem}")


def _column(
    path: Path, header: Sequence[str], given: Optional[str], preferred: Sequence[str], what: str
) -> Optional[int]:
    """The index of the column ``given`` (refused when absent), else of the first preferred header."""
    folded = [name.strip().lower() for name in header]
    if given is not None:
        if given.strip().lower() not in folded:
            raise _fail(path, f"no {what} column {given!r}; the columns are {', '.join(map(repr, header))}")
        return folded.index(given.strip().lower())
    return next((folded.index(name) for name in preferred if name in folded), None)


def _records(path: Path, text: str) -> Tuple[List[str], List[Tuple[int, Dict[str, str]]]]:
    """The header and ``(line, {column: cell})`` rows of a CSV/TSV table or a JSON-lines file."""
    if path.suffix.lower() == ".jsonl":
        header: List[str] = []
        rows = []
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except json.JSONDecodeError as error:
                raise _fail(path, f"line {number} is not JSON ({error.msg})") from None
            if not isinstance(document, dict):
                raise _fail(path, f"line {number} is not a JSON object (one object per line)")
            for key in document:
                if key not in header:
                    header.append(key)
            cells = {
                str(key): "" if value is None else value if isinstance(value, str) else json.dumps(value)
                for key, value in document.items()
            }
            rows.append((number, cells))
        return header, rows
    delimiter = "\t" if path.suffix.lower() == ".tsv" else ","
    try:
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
        table = []
        start = 1
        for row in reader:
            if any(cell.strip() for cell in row):
                table.append((start, row))
            start = reader.line_num + 1
    except csv.Error as error:
        raise _fail(path, f"not a readable table ({error})") from None
    if not table:
        raise _fail(path, "holds no rows")
    header = [cell.strip() for cell in table[0][1]]
    rows = []
    for number, row in table[1:]:
        if len(row) != len(header):
            raise _fail(path, f"line {number} has {len(row)} cells, the header {len(header)}")
        rows.append((number, dict(zip(header, row))))
    return header, rows


def _plain_lines(path: Path, text: str) -> List[Tuple[int, Dict[str, str]]]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label, tab, body = line.partition("\t")
        rows.append((number, {"label": label if tab else "", "text": body if tab else line}))
    return rows


def read_text_table(
    path: Union[str, Path],
    *,
    text_column: Optional[str] = None,
    label_column: Optional[str] = None,
    id_column: Optional[str] = None,
) -> TextTable:
    """Read a user's texts, labels and ids (module docstring for the formats and the checks).

    Args:
        path: a ``.csv``, ``.tsv``, ``.jsonl`` or ``.txt`` file.
        text_column / label_column / id_column: the columns (fields) to read, by header (any case); default
            found by name.

    Raises:
        DatasetError: a file that cannot be read as one, naming the file and the line.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in TEXT_FILE_SUFFIXES:
        raise _fail(path, f"a file of texts must end in {', '.join(TEXT_FILE_SUFFIXES)}, got {suffix!r}")
    text = read_text_file(path, "texts with labels")
    if suffix == ".txt":
        if any(given is not None for given in (text_column, label_column, id_column)):
            raise _fail(
                path, "a .txt file has no columns (label<TAB>text per line): leave the column names out"
            )
        header, rows = ["label", "text"], _plain_lines(path, text)
    else:
        header, rows = _records(path, text)
    if not rows:
        raise _fail(path, "holds no texts")
    label_index = _column(path, header, label_column, LABEL_COLUMNS, "label")
    id_index = _column(path, header, id_column, ("id",), "id")
    text_index = _column(path, header, text_column, TEXT_COLUMNS, "text")
    if text_index is None:
        rest = [i for i in range(len(header)) if i not in (label_index, id_index)]
        if len(rest) != 1:
            raise _fail(
                path,
                f"which column holds the texts? none is named {', '.join(TEXT_COLUMNS[:4])}, …; the columns "
                f"are {', '.join(map(repr, header))} (name it with --text-column)",
            )
        text_index = rest[0]
    if label_index is None:
        raise _fail(
            path,
            f"no label column (named {', '.join(LABEL_COLUMNS)}); the columns are "
            f"{', '.join(map(repr, header))} (name it with --label-column)",
        )
    roles = {"text": text_index, "label": label_index, "id": id_index}
    taken = [index for index in roles.values() if index is not None]
    if len(set(taken)) < len(taken):
        shown = {role: header[index] for role, index in roles.items() if index is not None}
        raise _fail(path, f"one column is read for two roles: {shown}")
    texts: List[str] = []
    labels: List[str] = []
    ids: List[str] = []
    seen: Dict[str, int] = {}
    for number, cells in rows:
        body = str(cells.get(header[text_index], ""))
        if not body.strip():
            raise _fail(path, f"line {number} has an empty text")
        row_id = str(cells.get(header[id_index], "")).strip() if id_index is not None else str(number)
        if not row_id:
            raise _fail(path, f"line {number} has an empty id")
        if row_id in seen:
            raise _fail(path, f"line {number} repeats the id {row_id[:80]!r} of line {seen[row_id]}")
        seen[row_id] = number
        texts.append(body)
        labels.append(str(cells.get(header[label_index], "")).strip())
        ids.append(row_id)
    labelled = [index for index, label in enumerate(labels) if label]
    class_names, class_ids = ([], []) if not labelled else normalized_labels([labels[i] for i in labelled])
    if len(class_names) < 2:
        raise _fail(
            path,
            f"{len(labelled)} labelled text(s) of {len(class_names)} class(es): a few-shot task needs "
            "labelled texts of at least 2 classes",
        )
    label_ids = [-1] * len(texts)
    for index, class_id in zip(labelled, class_ids):
        label_ids[index] = class_id
    return TextTable(
        tuple(texts),
        tuple(label_ids),
        tuple(class_names),
        tuple(ids),
        str(path),
        text_column="" if suffix == ".txt" else header[text_index],
        label_column="" if suffix == ".txt" else header[label_index],
    )
