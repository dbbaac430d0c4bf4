"""Time series on a graph of regions: the epidemic datasets of ``temporal/`` and files in public layouts.

* ``england_covid`` — daily COVID-19 cases in 129 English NUTS3 regions over 61 days (March–May
  2020), a mobility graph per day (``edge_mapping.edge_index[t]``, ``edge_weight[t]``; raw
  counts of people moving, self-loops included). Values are **raw case counts**.
* ``chickenpox`` — weekly chickenpox cases in 20 Hungarian counties over 521 weeks with the
  county adjacency (102 directed pairs, self-loops included). Values are **standardized as
  stored** (mean 0, standard deviation 1 over the whole file); the raw counts are not shipped.

A ``PATH`` reads any file in the JSON layouts of PyTorch Geometric Temporal's datasets, as
their files come (the layout is recognised from the keys; :data:`LAYOUTS`):

=================  ==========================================================================
layout             keys
=================  ==========================================================================
``edge_mapping``   ``y`` (T × N), ``edge_mapping.edge_index[t]`` / ``edge_weight[t]`` (England COVID)
``FX``             ``FX`` (T × N), ``edges``, optional ``edge_weight`` / ``weights`` (chickenpox)
``X``              ``X`` (T × N), ``edges``, ``weights`` (PedalMe London)
``block``          ``block`` (T × N), ``edges``, ``weights`` (Windmill output)
``snapshots``      ``time_periods``, ``"t": {"y": N values}`` per step, ``edges`` / ``weights``
                   at the top (WikiVital mathematics) or in every step (Twitter tennis)
``node-link``      networkx node-link JSON: ``nodes`` with a series ``y`` (or ``X.y``) and an
                   ``id``, ``links`` with ``source``, ``target``, optional ``weight`` (Montevideo bus)
=================  ==========================================================================

or a CSV folder (or its ``series.csv``): ``series.csv`` with one column per node (a region, a sensor: the
header names them) and one row per step. A first column named ``date``, ``datetime``, ``timestamp``, ``time``,
``day``, ``week``, ``month``, ``hour``, ``minute``, ``step``, ``t`` or ``period``, or whose first cell is a
date, is the time column: it is read strictly (:func:`~pdenets.data.time_column.read_time_column`: dates,
date-times or step numbers going forward at one interval; a repeated, earlier or missing row is refused naming
the lines) and gives the step's unit and the series' span, and ``edges.csv`` with ``source,target[,weight]``
naming nodes by header name (any other column is refused, with the nearest name). Files may start with a UTF-8
byte-order mark; CSV numbers are read strictly (:func:`~pdenets.data.csvfile.parse_number`: ``1_000`` is
refused, not read as 1000). Node ids must be integers (or, in node-link and CSV files, the declared names); a
float id, an unknown or out-of-range id, a ragged series, a non-finite value, a value beyond float64, a
negative count, or the weights given twice (``edge_weight`` and ``weights``) is refused with a
:class:`~pdenets.data.DatasetError` naming the file and the place.

Each layout also records how PyTorch Geometric Temporal's loader presents that dataset (its
default lags and its scaling: none, per-node standardization, ``log(1 + y)``), which the
``pyg-temporal`` protocol of ``pdenets run coin-forecast`` follows.

:func:`forecast_windows` cuts a series into (window, horizons) pairs for forecasting.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple, Union

import numpy as np
import torch

from .._checks import nearest_hint
from .._registry import Registry
from .csvfile import parse_number, read_csv_table, read_text_file, shown_value
from .errors import DatasetError, DatasetNotFoundError, dataset_error
from .limits import check_allocation
from .paths import regular_file, resolve_data_dir
from .time_column import STEP_COLUMNS, TIME_COLUMNS, TimeAxis, looks_like_time, read_time_column

__all__ = [
    "TemporalGraphSeries",
    "load_temporal",
    "forecast_windows",
    "ForecastWindows",
    "TEMPORAL_DATASETS",
    "LAYOUTS",
    "TemporalLayout",
    "register_layout",
]

TEMPORAL_DATASETS = {"england_covid": "temporal/england_covid.json", "chickenpox": "temporal/chickenpox.json"}
#: the step of each built-in series, and what one of its nodes is
TEMPORAL_FACTS = {"england_covid": ("day", "region"), "chickenpox": ("week", "county")}
Graph = Tuple[torch.Tensor, torch.Tensor]  # (edge_index (2, E) long, edge_weight (E,) float64)
#: PyTorch Geometric Temporal's presentation of a series: its default lags and its scaling
#: (``"none"``, ``"standardize"`` per node with ``np.std``, the same plus 1e-10, or ``"log1p"``)
PYG_SCALINGS = ("none", "standardize", "standardize+eps", "log1p")


@dataclass(frozen=True)
class TemporalGraphSeries:
    """A graph time series: one value per node and step, over a fixed or time-varying graph.

    Attributes:
        name: the dataset's name (file stem or folder name for user files).
        values: ``(T, N)`` float64; ``values[t, i]`` is the series of node ``i`` at step ``t``.
        graphs: one graph (fixed) or ``T`` graphs (one per step).
        raw_counts: the values are counts (True) or an already standardized series (False).
        source: where the series was read from.
        layout: the file layout it was read in (``FX``, ``edge_mapping``, ..., or ``csv``).
        pyg_lags: the number of lags PyTorch Geometric Temporal's loader uses for this dataset.
        pyg_scaling: how PyTorch Geometric Temporal scales it (``none``, ``standardize``, ...).
        node_names: the nodes' names where the file gives them (a CSV folder's header), else ``()``.
        step_unit: what one step is, in words: ``"day"``, ``"week"``, ``"5 minutes"`` (from a CSV time
            column: the interval of its dates or times, or its name for step numbers), else ``"step"``.
        time_axis: the stamps of the rows where the file has a time column (a CSV folder), else ``None``.
    """

    name: str
    values: torch.Tensor  # (T, N) float64
    graphs: List[Graph]  # length 1 (fixed) or T (time-varying)
    raw_counts: bool  # values are counts (True) or a standardized series (False)
    source: str
    layout: str = "FX"
    pyg_lags: int = 4
    pyg_scaling: str = "none"
    node_names: Tuple[str, ...] = ()
    step_unit: str = "step"
    time_axis: Optional[TimeAxis] = field(default=None, compare=False, repr=False)

    def node_name(self, node: int) -> str:
        """The name of node ``node``: the file's, else its index as text."""
        return self.node_names[node] if self.node_names else str(node)

    @property
    def num_steps(self) -> int:
        return int(self.values.shape[0])

    @property
    def num_nodes(self) -> int:
        return int(self.values.shape[1])

    @property
    def time_varying(self) -> bool:
        return len(self.graphs) > 1

    def graph_at(self, step: int) -> Graph:
        """The graph in force at ``step`` (the fixed graph for a static series)."""
        return self.graphs[step if self.time_varying else 0]


def _outside(path: Path, node: int, nodes: int, where: str) -> DatasetError:
    return dataset_error(
        path,
        f"{where}: an edge names node {shown_value(node)} but the series has {nodes} nodes (0…{nodes - 1})",
    )


def _integer_ids(path: Path, pairs, where: str, nodes: int) -> np.ndarray:
    """``(E, 2)`` int64 from a list of ``[i, j]`` pairs; floats, booleans and strings are refused, never
    rounded, and ids outside ``[0, nodes)`` are refused before any conversion (``10**29`` does not fit an
    int64)."""
    if not isinstance(pairs, list) or any(
        not isinstance(pair, (list, tuple)) or len(pair) != 2 for pair in pairs
    ):
        raise dataset_error(path, f"{where}: edges must be a list of [i, j] pairs")
    flat = [node for pair in pairs for node in pair]
    bad = next((node for node in flat if isinstance(node, bool) or not isinstance(node, int)), None)
    if bad is not None:
        raise dataset_error(path, f"{where}: node ids must be integers, found {shown_value(bad)}")
    outside = next((node for node in flat if not 0 <= node < nodes), None)
    if outside is not None:
        raise _outside(path, outside, nodes, where)
    return np.asarray(flat, dtype=np.int64).reshape(-1, 2)


def _too_large(rows) -> Optional[Tuple[int, int]]:
    """``(row, column)`` of the first integer of a table beyond float64's range, or ``None``."""
    for step, row in enumerate(rows):
        for node, value in enumerate(row if isinstance(row, list) else [row]):
            if isinstance(value, int) and abs(value) >= 2**1024:
                return step, node
    return None


def _edges(path: Path, pairs, weights, nodes: int, where: str) -> Graph:
    index = pairs if isinstance(pairs, np.ndarray) else _integer_ids(path, pairs, where, nodes)
    if index.size and (index.min() < 0 or index.max() >= nodes):
        bad = int(index.max() if index.max() >= nodes else index.min())
        raise _outside(path, bad, nodes, where)
    if weights is None:
        weight = np.ones(len(index))
    else:
        if isinstance(weights, list) and any(isinstance(w, bool) for w in weights):
            raise dataset_error(path, f"{where}: edge weights must be numbers, found a boolean")
        try:
            weight = np.asarray(weights, dtype=np.float64).reshape(-1)
        except OverflowError:
            found = _too_large([weights]) if isinstance(weights, list) else None
            if found is None:
                raise dataset_error(
                    path, f"{where}: edge weights must be numbers within float64's range"
                ) from None
            raise dataset_error(
                path,
                f"{where}: the weight of edge {found[1]} is {shown_value(weights[found[1]])}, "
                "too large for a float64",
            ) from None
        except (TypeError, ValueError):
            raise dataset_error(path, f"{where}: edge weights must be numbers") from None
        if weight.shape != (len(index),):
            raise dataset_error(path, f"{where}: {len(weight)} edge weights for {len(index)} edges")
        if not np.isfinite(weight).all() or (weight < 0).any():
            raise dataset_error(path, f"{where}: edge weights must be finite and non-negative")
    return torch.from_numpy(index.T.copy()), torch.from_numpy(weight)


def _series(path: Path, rows, key: str, *, counts: Union[bool, str] = False) -> torch.Tensor:
    """A ``(T, N)`` float64 table; ``counts=True`` refuses negative values, ``counts="if integers"`` refuses
    them when every value is an integer (a count series with a wrong entry, not a standardized one)."""
    if not isinstance(rows, list) or not rows or not all(isinstance(row, list) for row in rows):
        raise dataset_error(path, f"'{key}' must be a T × N table of numbers (a list of rows)")
    lengths = {len(row) for row in rows}
    if len(lengths) > 1:
        first = len(rows[0])
        ragged = next(index for index, row in enumerate(rows) if len(row) != first)
        raise dataset_error(
            path, f"'{key}' is ragged: step 0 has {first} values, step {ragged} has {len(rows[ragged])}"
        )
    check_allocation(len(rows) * max(lengths), 8, f"the series '{key}'", path)
    if any(isinstance(value, bool) for row in rows for value in row):
        raise dataset_error(path, f"'{key}' holds a boolean; the series must be numbers")
    try:
        values = np.asarray(rows, dtype=np.float64)
    except OverflowError:
        found = _too_large(rows)
        if found is None:
            raise dataset_error(
                path, f"'{key}' must be a T × N table of numbers within float64's range"
            ) from None
        step, node = found
        raise dataset_error(
            path,
            f"'{key}' holds the value {shown_value(rows[step][node])} at step {step}, node "
            f"{node}, too large for a float64",
        ) from None
    except (TypeError, ValueError):
        raise dataset_error(path, f"'{key}' must be a T × N table of numbers") from None
    if values.ndim != 2 or min(values.shape) < 1:
        raise dataset_error(path, f"'{key}' must be a T × N table, got shape {values.shape}")
    if not np.isfinite(values).all():
        bad = np.argwhere(~np.isfinite(values))[0]
        raise dataset_error(path, f"'{key}' holds a non-finite value at step {bad[0]}, node {bad[1]}")
    if counts == "if integers":
        counts = bool(np.all(np.mod(values, 1) == 0))
    if counts and (values < 0).any():
        bad = np.argwhere(values < 0)[0]
        raise dataset_error(
            path,
            f"'{key}' holds counts, but the value at step {bad[0]}, node {bad[1]} is "
            f"{values[bad[0], bad[1]]:g}",
        )
    return torch.from_numpy(values)


def _are_counts(values: torch.Tensor) -> bool:
    return bool(np.all(np.mod(values.numpy(), 1) == 0) and values.min() >= 0)


def _one_key(path: Path, content: Dict[str, Any], keys: Tuple[str, ...], where: str = ""):
    """The value of whichever of ``keys`` (names of one thing) ``content`` holds, ``None`` if none; two
    refused."""
    present = [key for key in keys if key in content]
    if len(present) > 1:
        raise dataset_error(
            path,
            f"{where}{' and '.join(repr(k) for k in present)} both give the same thing "
            f"(the edge weights); keep one",
        )
    return content[present[0]] if present else None


#: keys that name the edge weights in the layouts of :data:`LAYOUTS`
WEIGHT_KEYS = ("edge_weight", "weights")


def _require(path: Path, content: Dict[str, Any], key: str, kind, what: str):
    if key not in content:
        raise dataset_error(path, f"missing key '{key}' ({what})")
    if not isinstance(content[key], kind):
        raise dataset_error(path, f"'{key}' must be {what}")
    return content[key]


# ----------------------------------------------------------------------------------------
# one reader per layout: (path, content) -> (values, graphs, raw_counts, pyg_lags, pyg_scaling)


def _read_edge_mapping(path: Path, content: Dict[str, Any]) -> LayoutReading:
    values = _series(path, content["y"], "y", counts="if integers")
    mapping = _require(path, content, "edge_mapping", dict, "an object with 'edge_index' and 'edge_weight'")
    if not {"edge_index", "edge_weight"} <= set(mapping) or not all(
        isinstance(mapping[k], dict) for k in ("edge_index", "edge_weight")
    ):
        raise dataset_error(path, "'edge_mapping' needs 'edge_index' and 'edge_weight', one entry per step")
    graphs = []
    for step in range(values.shape[0]):
        key = str(step)
        if key not in mapping["edge_index"] or key not in mapping["edge_weight"]:
            raise dataset_error(
                path,
                f"'edge_mapping' has no graph for step {step} (keys '0'…'{values.shape[0] - 1}' expected)",
            )
        graphs.append(
            _edges(
                path,
                mapping["edge_index"][key],
                mapping["edge_weight"][key],
                values.shape[1],
                f"graph of step {step}",
            )
        )
    return values, graphs, _are_counts(values), 8, "standardize+eps"


def _static_reader(
    series_key: str, lags: int, scaling: str
) -> Callable[[Path, Dict[str, Any]], LayoutReading]:
    def read(path: Path, content: Dict[str, Any]) -> LayoutReading:
        values = _series(path, content[series_key], series_key)
        weights = _one_key(path, content, WEIGHT_KEYS)
        graphs = [_edges(path, content["edges"], weights, values.shape[1], "'edges'")]
        return values, graphs, _are_counts(values), lags, scaling

    return read


def _read_snapshots(path: Path, content: Dict[str, Any]) -> LayoutReading:
    steps = content["time_periods"]
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 3:
        raise dataset_error(
            path, f"'time_periods' must be an integer of at least 3, got {shown_value(steps)}"
        )
    if steps > len(content):
        raise dataset_error(
            path,
            f"'time_periods' is {shown_value(steps)} but the file holds {len(content)} keys, "
            "fewer than one snapshot per step",
        )
    snapshots = []
    for step in range(steps):
        snapshot = content.get(str(step))
        if not isinstance(snapshot, dict) or "y" not in snapshot:
            raise dataset_error(path, f"no snapshot '{step}' with 'y' ('time_periods' is {steps})")
        snapshots.append(snapshot)
    per_step_graphs = "edges" in snapshots[0]
    counts = per_step_graphs  # Twitter tennis: node degrees
    values = _series(path, [snapshot["y"] for snapshot in snapshots], "y (of the snapshots)", counts=counts)
    nodes = values.shape[1]
    if per_step_graphs:
        graphs = []
        for step, snapshot in enumerate(snapshots):
            if "edges" not in snapshot:
                raise dataset_error(path, f"snapshot '{step}' has no 'edges' (snapshot '0' has)")
            weights = _one_key(path, snapshot, WEIGHT_KEYS, f"snapshot '{step}': ")
            graphs.append(_edges(path, snapshot["edges"], weights, nodes, f"snapshot '{step}'"))
        return values, graphs, True, 4, "log1p"
    if "edges" not in content:
        raise dataset_error(path, "no 'edges': give them at the top level or in every snapshot")
    weights = _one_key(path, content, WEIGHT_KEYS)
    return values, [_edges(path, content["edges"], weights, nodes, "'edges'")], False, 8, "standardize"


def _read_node_link(path: Path, content: Dict[str, Any]) -> LayoutReading:
    nodes = _require(path, content, "nodes", list, "a list of node objects")
    links = _require(path, content, "links", list, "a list of link objects")
    check_allocation(len(nodes) + len(links), 64, "the node-link graph", path)
    ids, rows = {}, []
    for position, node in enumerate(nodes):
        if not isinstance(node, dict):
            raise dataset_error(path, f"node {position} is not an object")
        nested = node["X"].get("y") if isinstance(node.get("X"), dict) else None
        if "y" in node and nested is not None and nested != node["y"]:
            raise dataset_error(
                path, f"node {position}: 'y' and 'X': {{'y': …}} give two different series; keep one"
            )
        series = node.get("y", nested)
        if series is None:
            raise dataset_error(path, f"node {position} has no series 'y' (nor 'X': {{'y': …}})")
        key = node.get("id", position)
        if isinstance(key, (list, dict)) or key in ids:
            raise dataset_error(
                path, f"node {position}: id {key!r} is {'repeated' if key in ids else 'not a name'}"
            )
        ids[key] = position
        rows.append(series)
    lengths = {len(row) if isinstance(row, list) else -1 for row in rows}
    if len(lengths) > 1 or -1 in lengths:
        raise dataset_error(path, "the nodes' series 'y' must be lists of one length (a series per node)")
    values = _series(path, [list(step) for step in zip(*rows)], "y (of the nodes)")
    pairs, weights = [], []
    for position, link in enumerate(links):
        if not isinstance(link, dict) or "source" not in link or "target" not in link:
            raise dataset_error(path, f"link {position} needs 'source' and 'target'")
        for end in ("source", "target"):
            if isinstance(link[end], (list, dict)) or link[end] not in ids or isinstance(link[end], bool):
                raise dataset_error(path, f"link {position}: {end} {link[end]!r} is not the id of a node")
        pairs.append((ids[link["source"]], ids[link["target"]]))
        weights.append(link.get("weight", 1.0))
    index = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    graphs = [_edges(path, index, weights, values.shape[1], "'links'")]
    return values, graphs, _are_counts(values), 4, "standardize"


#: what a layout's reader returns: ``(values (T, N) float64, graphs, raw counts?, PyG Temporal's default lags,
#: its scaling)``
LayoutReading = Tuple[torch.Tensor, List[Graph], bool, int, str]


@dataclass(frozen=True)
class TemporalLayout:
    """A JSON layout of graph time series, read by :func:`load_temporal` (``pdenets list temporal-layouts``).

    Args:
        name: the layout's name.
        keys: the top-level keys that identify it (all present); layouts are tried in registration order.
        read: ``(path, content) → (values, graphs, raw, lags, scaling)`` (:data:`LayoutReading`), every
            problem a :class:`~pdenets.data.DatasetError` naming the file.
        description: one line: which public datasets come in it.
    """

    name: str
    keys: Tuple[str, ...]
    read: Callable[[Path, Dict[str, Any]], LayoutReading]
    description: str


#: The temporal layout registry, name → :class:`TemporalLayout`: this module's and the
#: ``pdenets.temporal_layouts`` entry points of other packages.
LAYOUTS: Registry[TemporalLayout] = Registry(
    "temporal-layouts", kind="temporal layout", package=__name__, describe=lambda entry: entry.description
)


def register_layout(entry: TemporalLayout) -> TemporalLayout:
    """Make a JSON layout known to :func:`load_temporal` (and so to ``pdenets run coin-forecast``)."""
    return LAYOUTS.register(entry.name, entry, module=getattr(entry.read, "__module__", None))


for _layout in (
    TemporalLayout(
        "edge_mapping",
        ("y", "edge_mapping"),
        _read_edge_mapping,
        "y (T x N) and a graph per step in edge_mapping (England COVID)",
    ),
    TemporalLayout(
        "FX", ("FX", "edges"), _static_reader("FX", 4, "none"), "FX (T x N), edges, weights (chickenpox)"
    ),
    TemporalLayout(
        "X", ("X", "edges"), _static_reader("X", 4, "none"), "X (T x N), edges, weights (PedalMe London)"
    ),
    TemporalLayout(
        "block",
        ("block", "edges"),
        _static_reader("block", 8, "standardize+eps"),
        "block (T x N), edges, weights (Windmill output)",
    ),
    TemporalLayout(
        "snapshots",
        ("time_periods", "0"),
        _read_snapshots,
        "one snapshot per step, graphs at the top or per step (WikiVital mathematics, Twitter tennis)",
    ),
    TemporalLayout(
        "node-link",
        ("nodes", "links"),
        _read_node_link,
        "networkx node-link JSON with a series per node (Montevideo bus)",
    ),
):
    register_layout(_layout)


def _no_duplicate_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    seen: Dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise ValueError(f"duplicate key {key!r} in one object")
        seen[key] = value
    return seen


def _read_json(path: Path):
    text = read_text_file(path, "a JSON document")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as error:
        raise dataset_error(path, f"not valid JSON ({error})") from None
    except ValueError as error:
        raise dataset_error(path, f"not usable JSON: {error}") from None
    except RecursionError:
        raise dataset_error(path, "not usable JSON: nested too deeply") from None


#: the names of a series.csv's time column
_LABEL_COLUMNS = set(TIME_COLUMNS + STEP_COLUMNS)


#: the columns of a CSV folder's edges.csv, in order (weight optional)
EDGE_COLUMNS = ("source", "target", "weight")


def _edge_header(path: Path, header: List[str]) -> bool:
    """Whether an edges.csv header (``source,target[,weight]``) has the weight column; other headers are
    refused."""
    names = [name.strip().lower() for name in header]
    for position, name in enumerate(names):
        if position >= len(EDGE_COLUMNS) or name != EDGE_COLUMNS[position]:
            hint = nearest_hint(name, EDGE_COLUMNS)
            raise dataset_error(
                path,
                f"unknown column {header[position].strip()!r}{hint} (column {position + 1}); the "
                "header must be source,target[,weight]",
            )
    if len(names) < 2:
        raise dataset_error(path, "the header must be source,target[,weight]")
    return len(names) == 3


def _read_csv_folder(folder: Path):
    series_path, edges_path = folder / "series.csv", folder / "edges.csv"
    for needed in (series_path, edges_path):
        regular_file(
            needed,
            DatasetNotFoundError(
                f"missing {needed}: a CSV series is a folder with series.csv "
                "(steps × nodes) and edges.csv (source,target[,weight])"
            ),
        )
    rows = read_csv_table(series_path)
    if len(rows) < 2:
        raise dataset_error(series_path, "needs a header row naming the nodes and at least one row of values")
    header = [name.strip() for name in rows[0][1]]
    first_cell = rows[1][1][0] if rows[1][1] else ""
    skip = 1 if header and (header[0].lower() in _LABEL_COLUMNS or looks_like_time(first_cell)) else 0
    names = header[skip:]
    if not names or any(not name for name in names) or len(set(names)) != len(names):
        raise dataset_error(series_path, "the header must name every node once (no empty or repeated names)")
    table = []
    for line, row in rows[1:]:
        if len(row) != len(header):
            raise dataset_error(series_path, f"line {line} has {len(row)} fields, the header {len(header)}")
        row_values = []
        for name, cell in zip(names, row[skip:]):
            try:
                row_values.append(parse_number(cell, finite=False))  # non-finite values are named by _series
            except ValueError as error:
                raise dataset_error(series_path, f"line {line}, column {name!r}: {error}") from None
        table.append(row_values)
    values = _series(series_path, table, "series.csv")
    position = {name: index for index, name in enumerate(names)}
    edge_rows = read_csv_table(edges_path)
    if not edge_rows:
        raise dataset_error(edges_path, "the header must be source,target[,weight]")
    edge_header = edge_rows[0][1]
    weighted = _edge_header(edges_path, edge_header)
    pairs, weights = [], []
    for line, row in edge_rows[1:]:
        if len(row) != len(edge_header):
            raise dataset_error(
                edges_path, f"line {line} has {len(row)} fields, the header {len(edge_header)}"
            )
        ends = [row[0].strip(), row[1].strip()]
        for end in ends:
            if end not in position:
                raise dataset_error(
                    edges_path,
                    f"line {line}: node {end!r} is not a column of series.csv{nearest_hint(end, names)}",
                )
        pairs.append((position[ends[0]], position[ends[1]]))
        if weighted:
            try:
                weights.append(parse_number(row[2]))
            except ValueError as error:
                raise dataset_error(edges_path, f"line {line}, weight: {error}") from None
    index = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    graphs = [_edges(edges_path, index, weights if weighted else None, values.shape[1], "edges.csv")]
    axis = (
        read_time_column(series_path, header[0], [(line, row[0]) for line, row in rows[1:]]) if skip else None
    )
    return (values, graphs, _are_counts(values), 4, "none"), tuple(names), axis


def load_temporal(name: Union[str, Path], data_dir: Optional[Union[str, Path]] = None) -> TemporalGraphSeries:
    """``england_covid``, ``chickenpox`` (from the data directory), a JSON file in any layout of
    :data:`LAYOUTS`, or a CSV folder (``series.csv`` + ``edges.csv``, or the path of its ``series.csv``).

    Args:
        name: a dataset name of :data:`TEMPORAL_DATASETS`, a ``.json`` file, a CSV folder or its
            ``series.csv``.
        data_dir: where the named datasets live (default: ``$PDENETS_DATA``, else ``~/.cache/pdenets``).

    Returns:
        The series with its graph(s); bad files raise :class:`DatasetError` naming the file and the problem.

    Examples:
        >>> series = load_temporal("chickenpox")          # doctest: +SKIP
        >>> series.values.shape, series.time_varying       # doctest: +SKIP
        (torch.Size([521, 20]), False)
    """
    text = str(name)
    if text in TEMPORAL_DATASETS:
        path = resolve_data_dir(data_dir) / TEMPORAL_DATASETS[text]
        label = text
    else:
        path = Path(text).expanduser()
        if path.suffix.lower() == ".csv":
            path = path.parent
        label = path.stem if path.suffix.lower() == ".json" else path.name
        if path.suffix.lower() != ".json" and not path.is_dir():
            if path.exists():
                raise DatasetError(
                    f"unknown temporal dataset {text!r}: give england_covid, chickenpox, a .json file "
                    "in a PyTorch Geometric Temporal layout or a folder with series.csv and edges.csv"
                )
    layout: Optional[str]
    names: Tuple[str, ...] = ()
    unit = TEMPORAL_FACTS[text][0] if text in TEMPORAL_FACTS else "step"
    axis: Optional[TimeAxis] = None
    if path.is_dir():
        (values, graphs, raw, lags, scaling), names, axis = _read_csv_folder(path)
        unit = axis.unit if axis is not None else unit
        layout = "csv"
    else:
        regular_file(
            path,
            DatasetNotFoundError(
                f"missing dataset file {path}. Set the data directory with --data-dir or $PDENETS_DATA (the "
                "temporal/ folder: github.com/benedekrozemberczki/pytorch_geometric_temporal, dataset/). "
                "pdenets never downloads data."
            ),
        )
        content = _read_json(path)
        if not isinstance(content, dict):
            raise dataset_error(path, "expected a JSON object in one of the layouts " + ", ".join(LAYOUTS))
        layout = next(
            (name for name, entry in LAYOUTS.items() if all(key in content for key in entry.keys)), None
        )
        if layout is None:
            expected = "; ".join(
                f"{name}: {' + '.join(repr(k) for k in entry.keys)}" for name, entry in LAYOUTS.items()
            )
            raise dataset_error(
                path, f"no known layout: found keys {sorted(content)[:8]}, expected one of {expected}"
            )
        values, graphs, raw, lags, scaling = LAYOUTS[layout].read(path, content)
    if values.shape[0] < 3:
        raise dataset_error(path, f"a series of {values.shape[0]} steps is too short to forecast")
    return TemporalGraphSeries(
        label, values, graphs, raw, str(path), layout, lags, scaling, names, unit, time_axis=axis
    )


def step_unit(column: str, cells: List[str]) -> str:
    """What one row of a series is, from its time column: the interval of its dates or times (``"5 minutes"``,
    ``"day"``, ``"week"``), or the column's name for step numbers one apart, else ``"step"``.

    Raises:
        DatasetError: cells that :func:`~pdenets.data.time_column.read_time_column` refuses.

    Examples:
        >>> step_unit("time", ["2026-03-02 00:00", "2026-03-02 00:05", "2026-03-02 00:10"])
        '5 minutes'
        >>> step_unit("date", ["2020-03-01", "2020-03-02"]), step_unit("week", ["1", "2"])
        ('day', 'week')
        >>> step_unit("t", ["1", "2"])
        'step'
    """
    return read_time_column("the time column", column, list(enumerate(cells, start=2))).unit


@dataclass(frozen=True)
class ForecastWindows:
    """Forecast origins ``t``: inputs ``values[t − L : t]`` per node, targets ``values[t + h − 1]``, ``h =
    1…H``.

    ``targets`` is NaN where ``t + h − 1`` lies beyond the series; ``target_steps[s, h − 1] = t + h − 1``.
    """

    inputs: torch.Tensor  # (S, N, L)
    targets: torch.Tensor  # (S, N, H)
    origins: torch.Tensor  # (S,) long: t
    target_steps: torch.Tensor  # (S, H) long

    def __len__(self) -> int:
        return int(self.origins.numel())


def forecast_windows(values: torch.Tensor, lags: int, horizons: int) -> ForecastWindows:
    """Every origin ``t = L … T − 1`` of a ``(T, N)`` series with ``L = lags`` past values and ``H =
    horizons``.

    Examples:
        >>> import torch
        >>> windows = forecast_windows(torch.arange(6.).unsqueeze(1), lags=2, horizons=2)
        >>> windows.inputs[0, 0].tolist(), windows.targets[0, 0].tolist(), windows.targets[-1, 0].tolist()
        ([0.0, 1.0], [2.0, 3.0], [5.0, nan])
    """
    if values.dim() != 2:
        raise ValueError(f"values must be a (T, N) series, got shape {tuple(values.shape)}")
    steps = values.shape[0]
    if lags < 1 or horizons < 1:
        raise ValueError(f"lags and horizons must be positive, got {lags} and {horizons}")
    if lags >= steps:
        raise ValueError(f"a window of {lags} lags needs more than {lags} steps; the series has {steps}")
    device = values.device
    origins = torch.arange(lags, steps, device=device)
    inputs = values.unfold(0, lags, 1)[
        : steps - lags
    ].contiguous()  # (S, N, L): window s is values[s : s + L]
    target_steps = origins[:, None] + torch.arange(horizons, device=device)[None, :]
    nan = torch.full((horizons, values.shape[1]), math.nan, dtype=values.dtype, device=device)
    padded = torch.cat([values, nan])
    targets = padded[target_steps].permute(0, 2, 1)
    return ForecastWindows(inputs, targets.contiguous(), origins, target_steps)
