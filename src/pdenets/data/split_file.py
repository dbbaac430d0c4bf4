"""The user's own split: which items are training, validation and test, read from a file and used exactly.

A split file is a CSV (or whitespace-separated text) file of ``id,split`` lines, ``split`` one of ``train``,
``val`` (or ``validation``), ``test``; a first line ``id,split`` (any header words) is read as a header.
Items the file does not name are in no set (they still take part in a transductive model, and are
predicted). :func:`read_split_file` refuses, naming the file and the line: an unknown id, an id named twice,
an unknown set, a training or validation item without a label, an empty training or validation set, and
an id outside the model's graph.

The split's :attr:`ItemSplit.digest` (SHA-256 of the sets as resolved) enters the store key of every run on
it: an edited file gives other runs, never the stored ones.

Examples:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "split.csv"
    >>> _ = path.write_text("node,set\\na,train\\nb,val\\nc,test\\nd,train\\n")
    >>> split = read_split_file(path, ["a", "b", "c", "d", "e"], [0, 1, 0, 1, -1])
    >>> split.train.tolist(), split.val.tolist(), split.test.tolist()
    ([0, 3], [1], [2])
"""

from __future__ import annotations

import csv
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

import torch

from .csvfile import read_text_file, shown_value
from .errors import DatasetError

__all__ = ["ItemSplit", "read_split_file", "split_of_entries", "split_file_beside", "SPLIT_NAMES"]

#: the words of a split file's second column → the set they name
SPLIT_NAMES = {"train": "train", "val": "val", "validation": "val", "valid": "val", "test": "test"}
#: each set in the words of a message
SET_WORDS = {"train": "training", "val": "validation", "test": "test"}


def _cells(line: str) -> List[str]:
    """A line's cells: CSV where it holds a comma (quotes as CSV reads them), else tab- or space-separated."""
    if "," in line:
        return [cell.strip() for cell in next(csv.reader([line]))]
    return line.split("\t") if "\t" in line else line.split()


@dataclass(frozen=True)
class ItemSplit:
    """The user's split as item positions (int64 tensors), with the digest that keys its runs."""

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor
    digest: str
    source: str


def read_split_file(
    path: Union[str, Path],
    ids: Sequence[str],
    labels: Sequence[int],
    *,
    outside: Sequence[str] = (),
    sets: Sequence[str] = ("train", "val", "test"),
    required: Sequence[str] = ("train", "val"),
) -> ItemSplit:
    """Read ``path`` against the items ``ids`` (position ``i`` has id ``ids[i]`` and label ``labels[i]``,
    ``-1``: unlabelled).

    Args:
        path: the split file (module docstring).
        ids: every item's id, in item order.
        labels: every item's class id, ``-1`` where unknown.
        outside: ids the data holds but the model leaves out (a graph's nodes outside its largest component):
            named as such when the file names one.
        sets: the sets the task has (default: ``train``, ``val``, ``test``; a task without validation
            refuses ``val``).
        required: the sets that must not be empty (default: ``train`` and ``val``).

    Raises:
        DatasetError: the file cannot be used as written (module docstring), naming the file and the line.
    """
    path = Path(path)
    text = read_text_file(path, "a split file (id,split per line)")
    position: Dict[str, int] = {str(item): index for index, item in enumerate(ids)}
    entries: List[Tuple[int, str, str]] = []
    first = True
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped[0] == "#":
            continue
        cells = _cells(stripped)
        if len(cells) != 2:
            raise DatasetError(f"{path}, line {number}: expected 'id,split', got {len(cells)} cell(s)")
        if first and cells[1].lower() not in SPLIT_NAMES and cells[0] not in position:
            first = False
            continue  # a header
        first = False
        entries.append((number, cells[0], cells[1]))
    return split_of_entries(
        f"{path}, line", entries, ids, labels, outside=outside, sets=sets, required=required
    )


def split_of_entries(
    where: str,
    entries: Sequence[Tuple[int, str, str]],
    ids: Sequence[str],
    labels: Sequence[int],
    *,
    outside: Sequence[str] = (),
    sets: Sequence[str] = ("train", "val", "test"),
    required: Sequence[str] = ("train", "val"),
) -> ItemSplit:
    """The split of ``entries`` ``(line, id, set word)`` (a split file's lines, a table's split column),
    checked as :func:`read_split_file` checks a file; ``where`` + the line number names a problem's place."""
    source = where.rsplit(",", 1)[0]
    position: Dict[str, int] = {str(item): index for index, item in enumerate(ids)}
    away = set(str(item) for item in outside)
    seen: Dict[str, int] = {}
    members: Dict[str, List[int]] = {"train": [], "val": [], "test": []}
    for number, item, given in entries:
        word = given.lower()
        if SPLIT_NAMES.get(word) not in sets:
            raise DatasetError(
                f"{where} {number}: unknown set {shown_value(given)}; "
                f"use {', '.join(sets[:-1])} or {sets[-1]}"
            )
        if item in seen:
            raise DatasetError(
                f"{where} {number}: {shown_value(item)} is named again (first on line {seen[item]})"
            )
        seen[item] = number
        if item not in position:
            place = (
                "is outside the graph's largest component, which the models keep"
                if item in away
                else "is no item of the data"
            )
            raise DatasetError(f"{where} {number}: {shown_value(item)} {place}")
        index = position[item]
        name = SPLIT_NAMES[word]
        if name in ("train", "val") and int(labels[index]) < 0:
            raise DatasetError(f"{where} {number}: {shown_value(item)} is in {name} but has no label")
        members[name].append(index)
    for name in required:
        if not members[name]:
            raise DatasetError(
                f"{source}: no item is in {name}; a split needs "
                f"{', '.join(SET_WORDS[n] for n in required[:-1])} and {SET_WORDS[required[-1]]} items"
                if len(required) > 1
                else f"{source}: no item is in {name}"
            )
    tensors = {name: torch.tensor(sorted(items), dtype=torch.int64) for name, items in members.items()}
    resolved = "|".join(
        f"{name}:{','.join(map(str, tensors[name].tolist()))}" for name in ("train", "val", "test")
    )
    digest = hashlib.sha256(resolved.encode()).hexdigest()[:16]
    return ItemSplit(tensors["train"], tensors["val"], tensors["test"], digest, source)


def split_file_beside(spec: str) -> Optional[str]:
    """The split file that comes with a graph of the user's: ``split.csv`` (or ``split.txt``) in a graph
    folder, ``<name>-split.csv`` (or ``.txt``) beside a graph file ``<name>.<ext>`` (as ``<name>-labels.txt``
    is); ``None`` where there is none.

    Examples:
        >>> import tempfile, pathlib
        >>> folder = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (folder / "roads.txt").write_text("a b\\n")
        >>> _ = (folder / "roads-split.csv").write_text("a,train\\n")
        >>> pathlib.Path(split_file_beside(str(folder / "roads.txt"))).name
        'roads-split.csv'
        >>> split_file_beside(str(folder / "other.txt")) is None
        True
    """
    path = Path(spec).expanduser()
    if path.is_dir():
        candidates = [path / "split.csv", path / "split.txt"]
    elif path.suffix:
        candidates = [path.with_name(f"{path.stem}-split{suffix}") for suffix in (".csv", ".txt")]
    else:
        return None
    return next((str(candidate) for candidate in candidates if candidate.is_file()), None)
