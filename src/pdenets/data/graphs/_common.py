"""What the graph formats share: the format registry, array readers, the checks every format's graph passes.

A graph format is a :class:`GraphFormat` registered in :data:`GRAPH_FORMATS` by a module of this package (or a
``pdenets.graph_formats`` plug-in); :func:`~pdenets.data.graphs.load_graph` hands a specification to the first
format, by ``priority``, that accepts it.
"""

from __future__ import annotations

import math
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Dict, Iterable, Optional, Tuple, Union

import numpy as np
import torch

from ..._checks import check_labels
from ..._lazy import LazyModule
from ..._limits import npy_header
from ..._registry import Registry
from ..errors import DatasetError, DatasetNotFoundError
from ..limits import MemoryBudgetError, check_allocation
from ..paths import DATA_ENV_VAR, regular_file

#: scipy.sparse, imported when a graph is read (not when pdenets starts)
sp = LazyModule("scipy.sparse")

if TYPE_CHECKING:  # torch_geometric is imported where a graph is built, not when pdenets starts
    import scipy.sparse
    from torch_geometric.data import Data


def _pyg_data(**values) -> "Data":
    from torch_geometric.data import Data

    return Data(**values)


PLANETOID_NAMES = {"cora": "Cora", "citeseer": "CiteSeer", "pubmed": "PubMed"}
PLANETOID_PARTS = ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")
MISSING_FEATURES = ("identity", "degree")

GRAPH_SOURCES: Dict[str, str] = {
    "planetoid": "https://github.com/kimiyoung/planetoid (raw files also in github.com/tkipf/gcn, gcn/data/)",
    "npz": "https://github.com/shchur/gnn-benchmark (data/npz/); "
    "also github.com/shwangtangjun/Diff-ResNet, graph/data/",
}


@dataclass(frozen=True)
class GraphFormat:
    """A way of giving a graph to :func:`~pdenets.data.graphs.load_graph` (``--dataset`` of the graph tasks).

    Args:
        name: the format's name (``pdenets list graph-formats``).
        description: one line: what the files hold.
        usage: how a user spells such a graph, for the message that lists every form (e.g. ``"a path to a .npz
            file"``).
        accepts: ``spec → bool``: whether this format reads the specification (a name or a path; cheap: it
            reads no file's contents).
        load: ``(spec, data_dir, missing_features) → Data``: the graph (see the package docstring for what the
            ``Data`` holds); every problem a :class:`~pdenets.data.errors.DatasetError` naming the file.
        priority: formats are asked in increasing priority (ties: registration order), so that a more specific
            form wins (a dataset name before a folder of that name).
    """

    name: str
    description: str
    usage: str
    accepts: Callable[[str], bool]
    load: Callable[[str, Optional[Union[str, Path]], str], "Data"]
    priority: int = 50


#: The graph-format registry, name → :class:`GraphFormat`: every module of :mod:`pdenets.data.graphs` and the
#: ``pdenets.graph_formats`` entry points of other packages.
def _format_problem(entry: object) -> Optional[str]:
    """Why ``entry`` cannot be a graph format (``None``: it can)."""
    if not isinstance(entry, GraphFormat):
        return f"must be a GraphFormat, got {type(entry).__name__}"
    if not (callable(entry.accepts) and callable(entry.load)):
        return "accepts and load must be callables"
    if isinstance(entry.priority, bool) or not isinstance(entry.priority, (int, float)):
        return f"priority must be a number, got {entry.priority!r}"
    if not isinstance(entry.usage, str):
        return f"usage must be a string, got {type(entry.usage).__name__}"
    return None


GRAPH_FORMATS: Registry[GraphFormat] = Registry(
    "graph-formats",
    kind="graph format",
    package=__package__,
    describe=lambda entry: entry.description,
    check=_format_problem,
)


def register_graph_format(entry: GraphFormat) -> GraphFormat:
    """Make a graph format known to :func:`~pdenets.data.graphs.load_graph` (and so to every graph task).

    Args:
        entry: the format; its ``load`` is the source of the listing.

    Returns:
        ``entry``.
    """
    return GRAPH_FORMATS.register(entry.name, entry, module=getattr(entry.load, "__module__", None))


def _missing(path: Path, data_dir: Path, source: str, detail: str = "") -> DatasetNotFoundError:
    return DatasetNotFoundError(
        f"missing dataset file {path}{detail}. Searched data directory {data_dir} (set it with --data-dir "
        f"or ${DATA_ENV_VAR}). Get the file from {GRAPH_SOURCES[source]} and place it at that path; pdenets "
        "never downloads data."
    )


# ----------------------------------------------------------------------------------------
# .npz archives: headers first, allocation after


class NpzArrays(Dict[str, np.ndarray]):
    """The numeric arrays of an ``.npz`` file by name; ``skipped_objects`` names the object arrays left
    unread."""

    skipped_objects: Tuple[str, ...] = ()


def object_array_error(path: Path, name: str, advice: str) -> DatasetError:
    """The error for a needed array that the file stores as an object array (never unpickled)."""
    return DatasetError(
        f"{path}: {name} is an object array (pickled Python objects) which is never unpickled; {advice}"
    )


def read_npz_arrays(path: Union[str, Path], *, skip_objects: bool = True) -> NpzArrays:
    """Every numeric array of an ``.npz`` file, sizes checked against the file before anything is allocated.

    Object arrays (pickled Python objects) are skipped without being unpickled; their names are
    recorded in the result's ``skipped_objects``, so that a loader missing one can say why.
    Raises :class:`DatasetError` (naming the file) for a missing, empty, truncated or corrupt
    archive, a path that is not a regular file, a member whose header declares more bytes than
    it holds, or more than the memory budget.
    """
    path = regular_file(path)
    if path.stat().st_size == 0:
        raise DatasetError(f"{path}: the file is empty (0 bytes); expected a NumPy .npz archive")
    arrays = NpzArrays()
    skipped = []
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if info.filename.endswith(".npy")]
            if not members:
                raise DatasetError(f"{path}: the archive holds no .npy arrays; expected a NumPy .npz file")
            declared = 0
            plan = []
            for info in members:
                with archive.open(info) as stream:
                    shape, dtype = npy_header(stream)
                if dtype.hasobject:
                    if skip_objects:
                        skipped.append(info.filename[:-4])
                        continue
                    raise DatasetError(
                        f"{path}: {info.filename[:-4]} is an object array (pickled Python objects); "
                        "it is never unpickled"
                    )
                nbytes = math.prod(shape) * dtype.itemsize
                if nbytes > info.file_size:
                    raise DatasetError(
                        f"{path}: member {info.filename[:-4]} declares shape {shape} of {dtype} "
                        f"({nbytes} bytes) but holds {info.file_size} bytes: the file is damaged"
                    )
                declared += nbytes
                plan.append(info)
            check_allocation(declared, 1, "its arrays", path)
            for info in plan:
                with archive.open(info) as stream:
                    arrays[info.filename[:-4]] = np.lib.format.read_array(stream, allow_pickle=False)
    except (DatasetError, MemoryBudgetError):  # ours, already naming the file or the setting
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, KeyError) as error:
        raise DatasetError(
            f"{path}: not a readable .npz archive (truncated or corrupt: {type(error).__name__}: {error})"
        ) from None
    arrays.skipped_objects = tuple(skipped)
    return arrays


def _csr(
    arrays: Dict[str, np.ndarray], parts: Tuple[str, str, str, str], what: str, path: Path
) -> scipy.sparse.csr_matrix:
    data, indices, indptr, shape_array = (arrays[p] for p in parts)
    shape = tuple(int(s) for s in np.asarray(shape_array).reshape(-1))
    if len(shape) != 2 or min(shape) < 0:
        raise DatasetError(f"{path}: {what} shape {shape} is not (rows, columns)")
    if not (np.issubdtype(indices.dtype, np.integer) and np.issubdtype(indptr.dtype, np.integer)):
        raise DatasetError(f"{path}: {what} indices must be integers, got {indices.dtype} / {indptr.dtype}")
    try:
        matrix = sp.csr_matrix((data, indices, indptr), shape=shape)
        matrix.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as error:
        raise DatasetError(f"{path}: {what} is not a valid CSR matrix ({error})") from None
    return matrix


def _first_layout(keys: Iterable[str], name: str) -> Optional[Tuple[str, str, str, str]]:
    keys = set(keys)
    for parts in (
        (f"{name}_data", f"{name}_indices", f"{name}_indptr", f"{name}_shape"),
        (f"{name}_matrix.data", f"{name}_matrix.indices", f"{name}_matrix.indptr", f"{name}_matrix.shape"),
        (f"{name}.data", f"{name}.indices", f"{name}.indptr", f"{name}.shape"),
    ):
        if set(parts) <= keys:
            return parts
    return None


def _dense_features(matrix, path: Path) -> torch.Tensor:
    rows, cols = matrix.shape
    check_allocation(rows * cols, 4, f"the {rows} x {cols} node features", path)
    dense = matrix.toarray() if sp.issparse(matrix) else np.asarray(matrix)
    if not np.issubdtype(dense.dtype, np.number) or np.issubdtype(dense.dtype, np.complexfloating):
        raise DatasetError(f"{path}: node features must be real numbers, got dtype {dense.dtype}")
    features = dense.astype(np.float32, copy=False)
    bad = int((~np.isfinite(features)).sum())
    if bad:
        raise DatasetError(
            f"{path}: the node features hold {bad} NaN/inf value(s); clean or impute them first"
        )
    return torch.from_numpy(np.ascontiguousarray(features))


def _labels(raw: np.ndarray, num_nodes: int, path: Path) -> torch.Tensor:
    raw = np.asarray(raw)
    if raw.ndim == 2:  # one-hot rows; all-zero rows are unlabelled
        if not np.isfinite(raw).all():
            raise DatasetError(f"{path}: the one-hot labels hold NaN/inf values")
        raw = np.where(raw.sum(1) > 0, raw.argmax(1), -1)
    if raw.ndim != 1:
        raise DatasetError(
            f"{path}: labels must be a vector of class ids or one-hot rows, got shape {raw.shape}"
        )
    if raw.shape[0] != num_nodes:
        raise DatasetError(f"{path}: {raw.shape[0]} labels for {num_nodes} nodes")
    if not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.bool_)):
        if (
            not np.issubdtype(raw.dtype, np.floating)
            or not np.isfinite(raw).all()
            or (raw != np.round(raw)).any()
        ):
            raise DatasetError(
                f"{path}: labels must be integer class ids, got {raw.dtype} values such as {raw[:3].tolist()}"
            )
    try:
        return check_labels(torch.from_numpy(raw.astype(np.int64)), "labels", allow_unlabelled=True)
    except ValueError as error:
        raise DatasetError(f"{path}: {error}") from None


def _edge_index(adjacency: scipy.sparse.spmatrix, path: Path) -> torch.Tensor:
    if adjacency.shape[0] != adjacency.shape[1]:
        raise DatasetError(
            f"{path}: the adjacency matrix is {adjacency.shape[0]} x {adjacency.shape[1]}, not square"
        )
    coo = adjacency.tocoo()
    if coo.data.size and not np.isfinite(coo.data).all():
        raise DatasetError(f"{path}: the adjacency matrix holds NaN/inf entries")
    return torch.from_numpy(np.vstack([coo.row, coo.col]).astype(np.int64))


def _missing_features(edge_index: torch.Tensor, num_nodes: int, rule: str, path: Path) -> torch.Tensor:
    if rule not in MISSING_FEATURES:
        raise ValueError(f"missing_features must be one of {MISSING_FEATURES}, got {rule!r}")
    if rule == "identity":
        check_allocation(
            num_nodes * num_nodes,
            4,
            f"identity features for {num_nodes} nodes (use missing_features='degree')",
            path,
        )
        return torch.eye(num_nodes, dtype=torch.float32, device=edge_index.device)
    degree = torch.zeros(num_nodes, dtype=torch.float32, device=edge_index.device)
    degree.index_add_(0, edge_index[0], torch.ones(edge_index.shape[1], device=edge_index.device))
    return degree[:, None]
