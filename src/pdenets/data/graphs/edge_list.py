"""A text edge list, as SNAP, KONECT and NetworkX's ``write_edgelist`` write them: one edge per line.

``graph.txt`` (also ``.tsv``, ``.edges``, ``.edgelist``) holds one ``source target`` pair per line, separated
by spaces, a tab or a comma; lines starting with ``#`` or ``%`` are comments, blank lines are skipped. Nodes
are named by the file: whole numbers (ordered by value) or any other words (ordered by name); they are
numbered ``0 … N−1`` in that order, and the node names are kept (``Data.node_names``). Whole numbers are one
node per value: ``7``, ``07`` and ``+7`` name the same node (``"7"``); among words, two spellings of one
number are refused, naming both.

Beside it, optionally:

* ``graph-labels.txt`` (same stem, ``-labels`` and the same suffix): one ``node label`` pair per line, the
  label a whole number (``1`` and ``1.0`` are class 1) or a class name (class names are numbered in sorted
  order, ``Data.class_names``); a node without a line is unlabelled (``-1``), a node named only here is a node
  without edges;
* ``graph-features.txt``: one ``node x1 x2 … xF`` line per node, numbers read strictly.

Without features the ``missing_features`` rule applies (one-hot ids or degrees). Edges are kept directed,
as written; a third column (weights, timestamps) is refused rather than dropped silently, as is a node named
twice in the labels or features, or a file over the memory budget.

Examples:
    >>> import tempfile
    >>> from pathlib import Path
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "karate.txt").write_text("# a comment\\n10 20\\n20 30\\n")
    >>> _ = (folder / "karate-labels.txt").write_text("10 officer\\n30 mr-hi\\n")
    >>> graph = load_text_edge_list(folder / "karate.txt", missing_features="degree")
    >>> graph.node_names, graph.edge_index.tolist(), graph.y.tolist(), graph.class_names
    (['10', '20', '30'], [[0, 1], [1, 2]], [1, -1, 0], ['mr-hi', 'officer'])
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

import numpy as np
import torch

from ..csvfile import parse_integer, parse_number, read_text_file, shown_value
from ..errors import DatasetError, DatasetNotFoundError
from ..limits import check_allocation
from ..paths import regular_file
from ._common import (
    GraphFormat,
    _dense_features,
    _labels,
    _missing_features,
    _pyg_data,
    register_graph_format,
)

if TYPE_CHECKING:
    from torch_geometric.data import Data

__all__ = ["load_text_edge_list", "EDGE_LIST_SUFFIXES"]

#: the file name endings read as a text edge list
EDGE_LIST_SUFFIXES = (".txt", ".tsv", ".edges", ".edgelist")
_SEPARATOR = re.compile(r"[\s,]+")
_INTEGER = re.compile(r"[+-]?[0-9]+")
#: the longest node or class name taken (a longer one is a sign of a wrong file)
MAX_NAME = 200


def _rows(path: Path, what: str) -> List[Tuple[int, List[str]]]:
    """``(line number, cells)`` of every line that is not blank or a comment."""
    text = read_text_file(path, what)
    # the parsed lines are Python lists of strings: about 20 bytes of objects per byte of a short line
    check_allocation(len(text), 32, "the parsed lines", path)
    rows = []
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped[0] in "#%":
            continue
        cells = [cell for cell in _SEPARATOR.split(stripped) if cell]
        for cell in cells:
            if len(cell) > MAX_NAME:
                raise DatasetError(
                    f"{path}, line {number}: a cell of {len(cell)} characters ({shown_value(cell)})"
                )
        rows.append((number, cells))
    return rows


def _companion(path: Path, kind: str) -> Optional[Path]:
    """``<stem>-<kind><suffix>`` beside ``path``, if it exists."""
    companion = path.with_name(f"{path.stem}-{kind}{path.suffix}")
    if companion.exists() or companion.is_symlink():
        return regular_file(companion)
    return None


def _canonical_names(rows: List[Tuple[Path, int, List[str]]]) -> Dict[str, str]:
    """Each node name of ``rows`` (``(file, line, names)``) → the name of its node: where every name is a
    whole number, its value written plainly (``07`` and ``+7`` → ``7``), else the name itself.

    Raises:
        DatasetError: a whole number beyond ``±(2^63 − 1)``, or, among words, two spellings of one number;
            the message names the file and line of each.
    """
    first: Dict[str, Tuple[Path, int]] = {}
    for file, number, names in rows:
        for name in names:
            first.setdefault(name, (file, number))
    if all(_INTEGER.fullmatch(name) for name in first):
        canonical = {}
        for name, (file, number) in first.items():
            try:
                canonical[name] = str(parse_integer(name, "node id"))
            except ValueError as error:
                raise DatasetError(f"{file}, line {number}: {error}") from None
        return canonical
    spelled: Dict[int, str] = {}
    for name, (file, number) in first.items():
        if _INTEGER.fullmatch(name):
            other = spelled.setdefault(int(name), name)
            if other != name:
                where = first[other]
                raise DatasetError(
                    f"{file}, line {number}: node {shown_value(name)} and node {shown_value(other)} "
                    f"({where[0]}, line {where[1]}) spell the same number; name each node one way"
                )
    return {name: name for name in first}


def _renamed(
    rows: List[Tuple[int, List[str]]], names: Dict[str, str], cells: int
) -> List[Tuple[int, List[str]]]:
    """``rows`` with their first ``cells`` cells (the node names) written as their nodes' names."""
    return [(number, [names[cell] for cell in row[:cells]] + row[cells:]) for number, row in rows]


def _node_order(names: List[str]) -> List[str]:
    """Whole-number names by value, else every name by text."""
    if all(_INTEGER.fullmatch(name) for name in names):
        return sorted(names, key=lambda name: (parse_integer(name), name))
    return sorted(names)


def _per_node(rows: List[Tuple[int, List[str]]], path: Path, what: str) -> Dict[str, Tuple[int, List[str]]]:
    """Node name → (line, the rest of its line); a node named twice is refused."""
    table: Dict[str, Tuple[int, List[str]]] = {}
    for number, cells in rows:
        if len(cells) < 2:
            raise DatasetError(
                f"{path}, line {number}: expected a node and its {what}, got {' '.join(cells)!r}"
            )
        if cells[0] in table:
            raise DatasetError(
                f"{path}, line {number}: node {shown_value(cells[0])} is given again (first on line "
                f"{table[cells[0]][0]})"
            )
        table[cells[0]] = (number, cells[1:])
    return table


def _class_ids(path: Path, labelled: Dict[str, Tuple[int, List[str]]]) -> Optional[Dict[str, int]]:
    """Node name → class id where every label is a whole number (``1``, ``+1``, ``1.0``: class 1), else
    ``None`` (class names); among names, two spellings of one number (``1`` and ``1.0``) are refused.

    Raises:
        DatasetError: a class id beyond ``±(2^63 − 1)``, or two spellings of one number among class names.
    """
    numbers: Dict[str, Optional[float]] = {}
    for _, rest in labelled.values():
        if rest[0] not in numbers:
            try:
                numbers[rest[0]] = parse_number(rest[0], finite=True)
            except ValueError:
                numbers[rest[0]] = None
    if all(value is not None and float(value).is_integer() for value in numbers.values()):
        ids = {}
        for name, (number, rest) in labelled.items():
            try:
                ids[name] = parse_integer(rest[0], "class id")
            except ValueError as error:
                raise DatasetError(f"{path}, line {number}: {error}") from None
        return ids
    first: Dict[float, Tuple[str, int]] = {}
    for name, (number, rest) in labelled.items():
        value = numbers[rest[0]]
        if value is None:
            continue
        other = first.setdefault(value, (rest[0], number))
        if other[0] != rest[0]:
            raise DatasetError(
                f"{path}, line {number}: label {shown_value(rest[0])} and label {shown_value(other[0])} "
                f"(line {other[1]}) are one number written two ways; write each class one way"
            )
    return None


def load_text_edge_list(path: Union[str, Path], *, missing_features: str = "identity") -> "Data":
    """Read a text edge list and its optional ``-labels`` and ``-features`` files (module docstring).

    Args:
        path: the edge list (``.txt``, ``.tsv``, ``.edges`` or ``.edgelist``).
        missing_features: node features without a features file: ``"identity"`` (one-hot node ids, an
            ``N × N`` matrix) or ``"degree"`` (one column, each node's out-degree) (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y`` (``-1``: unlabelled), ``num_nodes``,
        ``name`` (the file's stem), ``source``, ``node_names`` and ``class_names`` (``None`` for numbered
        classes).

    Raises:
        DatasetNotFoundError: the file is missing.
        DatasetError: a line that is not one edge, a third column, a node or class name too long, a node given
            twice in the labels or features, ragged or non-finite features, no edges and no labels, or sizes
            above the memory budget; the message names the file and the line.
    """
    path = Path(path)
    if not path.exists() and not path.is_symlink():
        raise DatasetNotFoundError(f"missing edge-list file {path}")
    edges = _rows(path, "an edge list (one 'source target' pair per line)")
    for number, cells in edges:
        if len(cells) != 2:
            extra = "a third column (weights are not read)" if len(cells) > 2 else "one node only"
            raise DatasetError(
                f"{path}, line {number}: expected 'source target', got {extra}: {' '.join(cells)!r}"
            )
    labels_path, features_path = _companion(path, "labels"), _companion(path, "features")
    label_rows = _rows(labels_path, "node labels") if labels_path else []
    feature_rows = _rows(features_path, "node features") if features_path else []
    canonical = _canonical_names(
        [(path, number, cells) for number, cells in edges]
        + [(labels_path, number, cells[:1]) for number, cells in label_rows if labels_path is not None]
        + [(features_path, number, cells[:1]) for number, cells in feature_rows if features_path is not None]
    )
    edges = _renamed(edges, canonical, 2)
    labelled = _per_node(_renamed(label_rows, canonical, 1), labels_path, "label") if labels_path else {}
    described = (
        _per_node(_renamed(feature_rows, canonical, 1), features_path, "features") if features_path else {}
    )
    names = {cell for _, cells in edges for cell in cells} | set(labelled) | set(described)
    if not names:
        raise DatasetError(f"{path}: no edges (and no labelled nodes): an empty graph")
    check_allocation(len(names), 64, "the node names", path)
    order = _node_order(list(names))
    index = {name: position for position, name in enumerate(order)}
    num_nodes = len(order)
    pairs = np.asarray([[index[a], index[b]] for _, (a, b) in edges], dtype=np.int64).reshape(-1, 2)
    edge_index = torch.from_numpy(np.ascontiguousarray(pairs.T))

    class_names: Optional[List[str]] = None
    raw_labels = np.full(num_nodes, -1, dtype=np.int64)
    if labels_path is not None:
        for name, (number, rest) in labelled.items():
            if len(rest) != 1:
                raise DatasetError(
                    f"{labels_path}, line {number}: expected 'node label', got {len(rest) + 1} cells"
                )
        values = [rest[0] for _, rest in labelled.values()]
        class_ids = _class_ids(labels_path, labelled)
        if class_ids is not None:
            for name, class_id in class_ids.items():
                raw_labels[index[name]] = class_id
        else:
            class_names = sorted(set(values))
            ids = {label: position for position, label in enumerate(class_names)}
            for name, (_, rest) in labelled.items():
                raw_labels[index[name]] = ids[rest[0]]
    if not (raw_labels >= 0).any():
        expected = path.with_name(f"{path.stem}-labels{path.suffix}")
        raise DatasetError(
            f"{labels_path}: no node is labelled (every label is -1)"
            if labels_path is not None
            else f"{path}: no node is labelled: write one 'node label' pair per line in {expected} beside it"
        )
    labels = _labels(raw_labels, num_nodes, labels_path or path)

    if features_path is not None:
        widths = {len(rest) for _, rest in described.values()}
        if len(widths) != 1:
            raise DatasetError(
                f"{features_path}: the nodes' rows hold different numbers of features {sorted(widths)}"
            )
        missing = [name for name in order if name not in described]
        if missing:
            raise DatasetError(
                f"{features_path}: no features for {len(missing)} node(s), e.g. {shown_value(missing[0])}"
            )
        (width,) = widths
        check_allocation(num_nodes * width, 8, f"the {num_nodes} x {width} node features", features_path)
        table = np.empty((num_nodes, width), dtype=np.float64)
        for name, (number, rest) in described.items():
            try:
                table[index[name]] = [parse_number(cell, finite=False) for cell in rest]
            except ValueError as error:
                raise DatasetError(f"{features_path}, line {number}: {error}") from None
        features = _dense_features(table, features_path)
    else:
        features = _missing_features(edge_index, num_nodes, missing_features, path)
    return _pyg_data(
        x=features,
        edge_index=edge_index,
        y=labels,
        num_nodes=num_nodes,
        name=path.stem,
        source=str(path),
        node_names=order,
        class_names=class_names,
    )


def _is_text_edge_list(spec: str) -> bool:
    """A path with an edge list's ending that is not a folder: a missing file, a dangling link or a device is
    then refused by the reader, naming what is wrong."""
    return spec.lower().endswith(EDGE_LIST_SUFFIXES) and not Path(spec).is_dir()


def _load(spec: str, data_dir: Optional[Union[str, Path]], missing_features: str) -> "Data":
    return load_text_edge_list(spec, missing_features=missing_features)


register_graph_format(
    GraphFormat(
        "edge-list",
        "a text edge list (.txt/.tsv/.edges/.edgelist, as SNAP or NetworkX write it), optional -labels and "
        "-features files beside it",
        "a .txt/.tsv edge list (graph-labels.txt beside it)",
        _is_text_edge_list,
        _load,
        priority=45,
    )
)
