"""A folder of a plain edge list: ``edges.csv|npy``, ``labels.csv|npy``, optional ``features.csv|npy``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Optional, Tuple, Union, overload

import numpy as np
import torch

from ..._limits import npy_header
from ..csvfile import (
    MAX_ID,
    is_number,
    parse_integer,
    parse_number,
    read_csv_table,
)
from ..errors import DatasetError, DatasetNotFoundError
from ..limits import MemoryBudgetError, check_allocation
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


# ----------------------------------------------------------------------------------------
# plain edge lists


_COUNT_WORDS = {1: "one column", 2: "two columns"}


def _table_columns(path: Path, width: int, columns: Optional[Tuple[str, ...]], header) -> None:
    """Refuse a table whose number of columns is not that of ``columns`` (naming a header's columns)."""
    if columns is None or width in (0, len(columns)):  # 0: an empty file
        return
    named = f" ({', '.join(repr(name) for name in header)})" if header else ""
    extra = "; edge weights are not read" if columns == ("source", "target") and width > 2 else ""
    raise DatasetError(
        f"{path}: expected {_COUNT_WORDS[len(columns)]} ({', '.join(columns)}), got {width}{named}{extra}"
    )


def _number_like(cell: str) -> bool:
    """Whether a cell is a number, strictly or for Python's lenient ``float`` (``1_0``): never a header's."""
    try:
        float(cell)
    except ValueError:
        return is_number(cell)
    return True


def _csv_table(path: Path, integer: bool, columns: Optional[Tuple[str, ...]]) -> np.ndarray:
    """A CSV table of numbers, an optional header line (a first row without anything like a number)
    skipped."""
    rows = read_csv_table(path)
    header = None
    if rows and not any(_number_like(cell) for cell in rows[0][1]):
        header = [cell.strip() for cell in rows[0][1]]
        rows = rows[1:]
    width = len(header) if header is not None else len(rows[0][1]) if rows else 0
    _table_columns(path, width, columns, header)
    values = []
    for line, cells in rows:
        if len(cells) != width:
            raise DatasetError(
                f"{path}: rows have different numbers of columns (line {line} has {len(cells)}, "
                f"{'the header' if header is not None else 'the first line'} {width})"
            )
        row = []
        for column, cell in enumerate(cells):
            try:
                row.append(parse_integer(cell) if integer else parse_number(cell, finite=False))
            except ValueError as error:
                name = repr(header[column]) if header is not None else str(column + 1)
                raise DatasetError(f"{path}: line {line}, column {name}: {error}") from None
        values.append(row)
    return np.array(values, dtype=np.int64 if integer else np.float64).reshape(len(values), width)


def _npy_table(path: Path) -> np.ndarray:
    """A ``.npy`` array read without pickles, its declared size checked against the budget first."""
    try:
        with regular_file(path).open("rb") as stream:
            shape, dtype = npy_header(stream)
        check_allocation(math.prod(shape), dtype.itemsize, f"an array of shape {shape}", path)
        return np.load(path, allow_pickle=False)
    except (DatasetError, MemoryBudgetError):  # ours, already naming the file or the setting
        raise
    except (ValueError, OSError, EOFError) as error:
        raise DatasetError(f"{path}: not a readable .npy array ({error})") from None


def _read_table(path: Path, *, integer: bool, columns: Optional[Tuple[str, ...]] = None) -> np.ndarray:
    """A table of an edge-list folder: ids (``integer``, whole numbers within int64) or finite-or-not floats.

    ``columns`` names the columns the table must have (``None``: any number); a CSV file may
    start with a header line, refused when it names a different number of columns.
    """
    if path.suffix != ".npy":
        return _csv_table(path, integer, columns)
    array = _npy_table(path)
    if array.size and not np.issubdtype(array.dtype, np.number):
        raise DatasetError(f"{path}: expected numbers, got dtype {array.dtype}")
    if columns is not None and array.ndim == 2:
        _table_columns(path, array.shape[1], columns, None)
    if integer and array.size:
        if not np.isfinite(array).all() or (array != np.round(array)).any():
            raise DatasetError(
                f"{path}: expected whole numbers (node or class ids), found values such as "
                f"{array[np.isfinite(array) & (array != np.round(array))][:3].tolist()}"
            )
        if (
            array.dtype.kind != "i"
            and (array > MAX_ID).any()
            or array.dtype.kind == "f"
            and (array < -MAX_ID).any()
        ):
            bad = array[(array > MAX_ID) | (array < -MAX_ID)][0]
            raise DatasetError(f"{path}: holds the id {bad:.6g}, too large for an id (at most 2^63 - 1)")
        array = array.astype(np.int64)
    return array


@overload
def _one_of(folder: Path, stem: str, required: Literal[True]) -> Path: ...
@overload
def _one_of(folder: Path, stem: str, required: bool) -> Optional[Path]: ...


def _one_of(folder: Path, stem: str, required: bool) -> Optional[Path]:
    found = [
        folder / f"{stem}{suffix}"
        for suffix in (".npy", ".csv")
        if (folder / f"{stem}{suffix}").exists() or (folder / f"{stem}{suffix}").is_symlink()
    ]
    if len(found) > 1:
        raise DatasetError(f"{folder}: both {found[0].name} and {found[1].name} exist; keep one")
    if not found and required:
        raise DatasetNotFoundError(
            f"{folder}: missing {stem}.csv or {stem}.npy (an edge-list graph folder holds "
            "edges.*, labels.* and optionally features.*)"
        )
    return regular_file(found[0]) if found else None


def load_edge_list(folder: Union[str, Path], *, missing_features: str = "identity") -> Data:
    """Read a folder with ``edges.csv|npy``, ``labels.csv|npy`` and optional ``features.csv|npy``.

    ``labels.*`` holds one class id per node (``-1`` for unlabelled) and defines the number
    of nodes ``N``; ``edges.*`` holds one ``source,target`` pair of node ids per row (kept
    directed, as written); ``features.*`` holds one row of numbers per node. CSV files may
    start with a header line (a first row without any number), which must name as many
    columns as the rows hold: two in ``edges.*`` (weights are not read: a third column is
    refused), one in ``labels.*``. Numbers are read strictly
    (:func:`~pdenets.data.csvfile.parse_number`: ``1_000`` is refused, not read as 1000);
    ``.npy`` files are read without pickles, their headers checked against the memory budget
    first. Keeping both a ``.csv`` and a ``.npy`` of the same stem is refused. Ids must be
    whole numbers within int64, edges must lie in ``[0, N)``, features must be finite.

    Args:
        folder: the graph's folder.
        missing_features: node features when the file holds none: ``"identity"`` (one-hot node
            ids, an ``N × N`` matrix) or ``"degree"`` (one column, each node's out-degree)
            (default: ``"identity"``).

    Returns:
        The graph as a PyG ``Data`` with ``x``, ``edge_index``, ``y``, ``num_nodes``, ``name``
        (the folder's name) and ``source`` (the folder).

    Raises:
        DatasetNotFoundError: the folder, ``edges.*`` or ``labels.*`` is missing.
        DatasetError: an unreadable or inconsistent table (wrong number of columns or rows,
            a cell that is not a number, non-integer ids, ids out of range, NaN/inf features),
            both ``.csv`` and ``.npy`` of one stem, a table that is not a regular file, or sizes
            above the memory budget.
        ValueError: the folder holds no features and ``missing_features`` is not one of
            ``"identity"``, ``"degree"``.

    Examples:
        >>> import tempfile
        >>> from pathlib import Path
        >>> folder = Path(tempfile.mkdtemp())
        >>> _ = (folder / "edges.csv").write_text("source,target\\n0,1\\n1,2\\n")
        >>> _ = (folder / "labels.csv").write_text("0\\n1\\n-1\\n")
        >>> graph = load_edge_list(folder, missing_features="degree")
        >>> graph.x.tolist(), graph.y.tolist(), graph.edge_index.tolist()
        ([[1.0], [1.0], [0.0]], [0, 1, -1], [[0, 1], [1, 2]])
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetNotFoundError(f"missing graph folder {folder}")
    edges_path, labels_path = _one_of(folder, "edges", True), _one_of(folder, "labels", True)
    labels_table = _read_table(labels_path, integer=True, columns=("label",)).reshape(-1)
    num_nodes = labels_table.shape[0]
    if num_nodes == 0:
        raise DatasetError(f"{labels_path}: no labels (the file defines the nodes: one class id per node)")
    edges = _read_table(edges_path, integer=True, columns=("source", "target"))
    if edges.size == 0:
        edges = edges.reshape(0, 2)
    if edges.ndim != 2 or edges.shape[1] != 2:
        raise DatasetError(f"{edges_path}: expected two columns (source, target), got shape {edges.shape}")
    if edges.size and (edges.min() < 0 or edges.max() >= num_nodes):
        raise DatasetError(
            f"{edges_path}: node ids must lie in [0, {num_nodes}) ({num_nodes} labels), found "
            f"{int(edges.min())}..{int(edges.max())}"
        )
    edge_index = torch.from_numpy(np.ascontiguousarray(edges.T))
    features_path = _one_of(folder, "features", False)
    if features_path is not None:
        table = _read_table(features_path, integer=False)
        if table.ndim != 2 or table.shape[0] != num_nodes:
            raise DatasetError(
                f"{features_path}: expected {num_nodes} rows (one per node), got shape {table.shape}"
            )
        features = _dense_features(table, features_path)
    else:
        features = _missing_features(edge_index, num_nodes, missing_features, folder)
    return _pyg_data(
        x=features,
        edge_index=edge_index,
        y=_labels(labels_table, num_nodes, labels_path),
        num_nodes=num_nodes,
        name=folder.name,
        source=str(folder),
    )


def _load_folder(spec: str, data_dir: Optional[Union[str, Path]], missing_features: str) -> Data:
    return load_edge_list(spec, missing_features=missing_features)


register_graph_format(
    GraphFormat(
        "folder",
        "a folder of edges.csv|npy (source,target ids), labels.csv|npy (a class per node), optional features",
        "a folder with edges.csv and labels.csv",
        lambda spec: Path(spec).is_dir(),
        _load_folder,
        priority=40,
    )
)
