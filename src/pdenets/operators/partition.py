"""Splitting a graph's nodes into parts, one per process, and saving each part's rows.

A graph too large for one machine is diffused by ``K`` processes, each holding the rows of ``W`` (and the
features) of its part (:class:`~pdenets.operators.partitioned.PartitionedDiffusion`). The parts are made
contiguous: the nodes are renumbered so that part ``k`` is the range ``offsets[k] : offsets[k + 1]`` of the
new numbering (``order[new] = old``). Two partitioners:

* ``"metis"``: METIS's multilevel k-way partition (through ``pymetis``): few edges between parts, so
  few halo rows to exchange per step. Inside each part the nodes follow reverse Cuthill–McKee where that
  pays (:func:`~pdenets.operators.locality.locality_order`: graphs of 262,144 nodes or more), so that a
  process's own rows are near each other in memory too;
* ``"contiguous"``: the nodes in their given order cut into ``K`` equal ranges: free, and as good as the
  numbering (a graph numbered by crawl order or by a previous METIS run); on a random graph nearly every
  node becomes somebody's halo.

:func:`save_partition` writes one file per part (its rows of ``W`` with their new column ids, and the
features and labels of its nodes where given), the order, and ``partition.json``; a process loads only its
own part (:func:`load_part`), so no process ever holds the whole graph.

**A partition cannot lie.** The files hold plain arrays only (``.npy`` / uncompressed ``.npz``, read with
``allow_pickle=False``, their declared sizes checked against the memory budget before anything is
allocated). ``partition.json`` is the manifest: ``K``, ``N``, the stored entries ``nnz``, the partitioner
and its seed, the offsets, each part's first node, rows and entries, and every file's size and SHA-256.
Every loader checks the manifest (offsets tiling ``0 … N``, parts agreeing with them), each file it reads
against its size and hash (a part copied over another, or of another partition, is refused), the order for
being a permutation of ``0 … N−1``, and each part's arrays for their shapes, ranges and order. Every
failure is one line naming the file (:class:`PartitionError`).

Examples:
    >>> import torch
    >>> ring = torch.roll(torch.eye(6), 1, 0); ring = (ring + ring.T).to_sparse()
    >>> partition = partition_graph(ring, 2, method="contiguous")
    >>> partition.offsets.tolist(), partition.part_of(torch.tensor([0, 5])).tolist()
    ([0, 3, 6], [0, 1])
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple, Union

import numpy as np
import torch

from .._checks import check_choice, check_features, check_labels, check_positive_int
from .._io import file_sha256
from .._limits import MEMORY_BUDGET_ENV_VAR, format_bytes, memory_budget, npy_header
from .graph import GraphLike, as_weight_matrix
from .locality import locality_order

__all__ = [
    "GraphPartition",
    "partition_graph",
    "save_partition",
    "load_part",
    "load_partition",
    "PartFile",
    "PartitionError",
    "PARTITIONERS",
]

PARTITIONERS = ("metis", "contiguous")
_FORMAT = "pdenets-partition-3"
#: the formats of partitions written by earlier versions, refused by name: what they lack
_OLD_FORMATS = {
    "pdenets-partition-1": "pickled part files, no hashes",
    "pdenets-partition-2": "no feature width or class count to check the parts against",
}
#: the largest manifest read (a manifest of a million parts is under this)
_MANIFEST_BYTES = 64 * 2**20
#: how to get METIS
METIS_EXTRA = "pip install 'pdenets[graphs]' (pymetis)"


class PartitionError(ValueError):
    """A saved partition that is damaged, of another graph, or not what its manifest says: one line naming
    the file."""


@dataclass(frozen=True)
class GraphPartition:
    """``K`` contiguous parts of a renumbered graph.

    Args:
        order: ``(N,)`` int64, ``order[new] = old``: the node of the given numbering at each new position.
        offsets: ``(K + 1,)`` int64, part ``k`` holds the new ids ``offsets[k] : offsets[k + 1]``.
        method: the partitioner that made it.
        cut_fraction: the fraction of the stored off-diagonal entries of ``W`` between different parts.
        seed: the partitioner's random seed (METIS's; the contiguous cut draws nothing).

    Examples:
        >>> import torch
        >>> partition = GraphPartition(torch.tensor([2, 0, 1]), torch.tensor([0, 1, 3]), "contiguous", 0.5)
        >>> partition.num_parts, partition.nodes(1).tolist(), partition.new_ids().tolist()
        (2, [0, 1], [1, 2, 0])
    """

    order: torch.Tensor
    offsets: torch.Tensor
    method: str
    cut_fraction: float
    seed: int = 0

    @property
    def num_parts(self) -> int:
        return int(self.offsets.numel() - 1)

    @property
    def num_nodes(self) -> int:
        return int(self.order.numel())

    def rows(self, part: int) -> Tuple[int, int]:
        """The new ids of part ``part``: ``(first, end)``."""
        return int(self.offsets[part]), int(self.offsets[part + 1])

    def nodes(self, part: int) -> torch.Tensor:
        """The given (old) ids of the nodes of part ``part``, in their new order."""
        first, end = self.rows(part)
        return self.order[first:end]

    def new_ids(self) -> torch.Tensor:
        """``(N,)``: the new id of every old node (the inverse of :attr:`order`)."""
        inverse = torch.empty_like(self.order)
        inverse[self.order] = torch.arange(self.num_nodes, dtype=self.order.dtype)
        return inverse

    def part_of(self, old_ids: torch.Tensor) -> torch.Tensor:
        """The part of each of the given (old) node ids."""
        return torch.searchsorted(self.offsets, self.new_ids()[old_ids], right=True) - 1


def scipy_graph(weights: GraphLike, num_nodes: Optional[int]):
    """``W`` (any graph form :func:`~pdenets.operators.as_weight_matrix` reads) as a SciPy CSR matrix."""
    import scipy.sparse as sp

    matrix = as_weight_matrix(weights, num_nodes)
    if matrix.layout == torch.strided:
        return sp.csr_matrix(matrix.detach().numpy())
    matrix = (
        matrix.detach().coalesce() if matrix.layout == torch.sparse_coo else matrix.detach().to_sparse_coo()
    )
    rows, cols = matrix.indices().numpy()
    return sp.csr_matrix((matrix.values().numpy(), (rows, cols)), shape=tuple(matrix.shape))


def partition_graph(
    weights: GraphLike,
    num_parts: int,
    *,
    method: str = "metis",
    num_nodes: Optional[int] = None,
    seed: int = 0,
) -> GraphPartition:
    """Split the nodes of ``W`` into ``num_parts`` contiguous parts of a new numbering.

    Args:
        weights: ``(N, N)`` weights ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)`` pair, scipy).
        num_parts: ``K ≥ 1``, at most ``N``.
        method: ``"metis"`` (needs ``pymetis``) or ``"contiguous"`` (see the module) (default: ``"metis"``).
        num_nodes: ``N`` when ``weights`` is an edge list (default: ``None``, inferred).
        seed: METIS's random seed (default: ``0``).

    Returns:
        The :class:`GraphPartition`; every part holds at least one node.

    Raises:
        ValueError: ``K`` is not in ``[1, N]`` or the method is unknown.
        ImportError: ``method="metis"`` without ``pymetis`` (``pip install pymetis``), named.

    Examples:
        >>> import torch
        >>> path = torch.diag(torch.ones(3), 1); path = path + path.T   # 0 - 1 - 2 - 3
        >>> partition = partition_graph(path, 2, method="contiguous")
        >>> partition.offsets.tolist(), partition.cut_fraction          # one edge of three is cut
        ([0, 2, 4], 0.3333333333333333)
    """
    method = check_choice(method, "method", PARTITIONERS)
    graph = scipy_graph(weights, num_nodes)
    size = graph.shape[0]
    num_parts = check_positive_int(num_parts, "num_parts")
    if num_parts > size:
        raise ValueError(
            f"cannot split a graph of {size} nodes into {num_parts} parts (at most one part per node)"
        )
    if method == "contiguous" or num_parts == 1:
        assignment = (np.arange(size, dtype=np.int64) * num_parts) // size
    else:
        try:
            import pymetis
        except ImportError as error:
            raise ImportError(
                f'method="metis" needs METIS: {METIS_EXTRA}; or use method="contiguous"'
            ) from error
        symmetric = (graph + graph.T).tocsr()
        symmetric.setdiag(0)
        symmetric.eliminate_zeros()
        options = pymetis.Options(seed=seed)
        if hasattr(pymetis, "CSRAdjacency"):
            adjacency = pymetis.CSRAdjacency(symmetric.indptr, symmetric.indices)
            _, membership = pymetis.part_graph(num_parts, adjacency=adjacency, options=options)
        else:  # pymetis before 2025.2
            _, membership = pymetis.part_graph(
                num_parts, xadj=symmetric.indptr, adjncy=symmetric.indices, options=options
            )
        assignment = np.asarray(membership, dtype=np.int64)
        if np.bincount(assignment, minlength=num_parts).min() == 0:  # METIS left a part empty: cut evenly
            assignment = (np.arange(size, dtype=np.int64) * num_parts) // size
    within = locality_order(graph.tocsr(), "auto") if num_parts > 1 and method == "metis" else None
    if within is None:
        order = np.argsort(assignment, kind="stable")
    else:  # each part's nodes in RCM order, so that a process's own rows are near each other too
        order = within[np.argsort(assignment[within], kind="stable")]
    offsets = np.concatenate([[0], np.cumsum(np.bincount(assignment, minlength=num_parts))])
    coo = graph.tocoo()
    off_diagonal = coo.row != coo.col
    cut = (
        float((assignment[coo.row] != assignment[coo.col])[off_diagonal].mean())
        if off_diagonal.any()
        else 0.0
    )
    return GraphPartition(
        torch.from_numpy(order), torch.from_numpy(offsets.astype(np.int64)), method, cut, int(seed)
    )


@dataclass(frozen=True)
class PartFile:
    """One part as stored by :func:`save_partition`.

    Args:
        part: its number ``k``.
        num_parts: ``K``.
        num_nodes: ``N`` of the whole graph.
        first: the new id of its first node (its rows are ``first : first + rows``).
        weights: its rows of ``W`` in the new numbering, a ``(rows, N)`` sparse CSR tensor.
        nodes: the given (old) ids of its nodes.
        features: their features ``(rows, F)``, where saved.
        labels: their labels ``(rows,)``, where saved.

    Examples:
        >>> import tempfile, torch
        >>> ring = torch.roll(torch.eye(4), 1, 0); ring = ring + ring.T
        >>> parts = partition_graph(ring, 2, method="contiguous")
        >>> folder = save_partition(tempfile.mkdtemp() + "/p", parts, ring)
        >>> part = load_part(folder, 1)
        >>> part.first, part.weights.to_dense().tolist()
        (2, [[0.0, 1.0, 0.0, 1.0], [1.0, 0.0, 1.0, 0.0]])
    """

    part: int
    num_parts: int
    num_nodes: int
    first: int
    weights: torch.Tensor
    nodes: torch.Tensor
    features: Optional[torch.Tensor] = None
    labels: Optional[torch.Tensor] = None


def save_partition(
    directory: Union[str, os.PathLike],
    partition: GraphPartition,
    weights: GraphLike,
    *,
    features: Optional[torch.Tensor] = None,
    labels: Optional[torch.Tensor] = None,
) -> Path:
    """Write ``order.npy``, one ``part-k.npz`` per part and the manifest ``partition.json`` into
    ``directory`` (a new or empty folder).

    Args:
        directory: where to write; an existing folder must be empty (nothing of a user's is overwritten).
        partition: from :func:`partition_graph` on ``weights``.
        weights: the ``(N, N)`` weights ``W``.
        features: ``(N, F)`` node features (dense or sparse), saved with each part (default: ``None``).
        labels: ``(N,)`` labels, saved with each part (default: ``None``).

    Returns:
        The folder.

    Raises:
        FileExistsError: ``directory`` exists and is not empty.
        ValueError: sizes that do not match the partition.

    Examples:
        >>> import tempfile, torch
        >>> path = torch.diag(torch.ones(3), 1); path = path + path.T
        >>> parts = partition_graph(path, 2, method="contiguous")
        >>> folder = save_partition(tempfile.mkdtemp() + "/p", parts, path, labels=torch.tensor([0, 0, 1, 1]))
        >>> sorted(name.name for name in folder.iterdir())
        ['order.npy', 'part-0.npz', 'part-1.npz', 'partition.json']
    """
    graph = scipy_graph(weights, partition.num_nodes)
    if graph.shape[0] != partition.num_nodes:
        raise ValueError(
            f"the partition is of {partition.num_nodes} nodes but the graph has {graph.shape[0]}"
        )
    for name, tensor in (("features", features), ("labels", labels)):
        if tensor is not None and tensor.shape[0] != partition.num_nodes:
            raise ValueError(
                f"{name} have {tensor.shape[0]} rows but the graph has {partition.num_nodes} nodes"
            )
    # what load_part would refuse is refused here, before anything is written
    if labels is not None:
        labels = check_labels(labels, "labels", allow_unlabelled=True)
    if features is not None:
        check_features(features.to_dense() if features.layout != torch.strided else features, "features")
    folder = Path(directory)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(
            f"{folder} exists and is not an empty folder: give a new folder for the partition"
        )
    folder.mkdir(parents=True, exist_ok=True)
    order = partition.order.numpy().astype(np.int64)
    renumbered = graph[order][:, order].tocsr()
    renumbered.sort_indices()
    dense_features = None
    if features is not None:
        dense_features = features.to_dense() if features.layout != torch.strided else features
    files: Dict[str, Dict[str, Any]] = {}
    parts: List[Dict[str, int]] = []
    for part in range(partition.num_parts):
        first, end = partition.rows(part)
        rows = renumbered[first:end]
        nodes = partition.order[first:end]
        arrays = {
            "indptr": rows.indptr.astype(np.int64),
            "indices": rows.indices.astype(np.int64),
            "values": rows.data,
            "nodes": nodes.numpy().astype(np.int64),
        }
        if dense_features is not None:
            arrays["features"] = dense_features[nodes].numpy()
        if labels is not None:
            arrays["labels"] = labels[nodes].numpy().astype(np.int64)
        name = f"part-{part}.npz"
        with open(folder / name, "wb") as handle:
            np.savez(handle, **arrays)
        files[name] = _file_facts(folder / name)
        parts.append({"first": first, "rows": end - first, "nnz": int(rows.nnz)})
    np.save(folder / "order.npy", order, allow_pickle=False)
    files["order.npy"] = _file_facts(folder / "order.npy")
    manifest = {
        "format": _FORMAT,
        "num_parts": partition.num_parts,
        "num_nodes": partition.num_nodes,
        "nnz": int(renumbered.nnz),
        "method": partition.method,
        "seed": int(partition.seed),
        "cut_fraction": partition.cut_fraction,
        "offsets": partition.offsets.tolist(),
        "parts": parts,
        "features": dense_features is not None,
        "num_features": int(dense_features.shape[1]) if dense_features is not None else None,
        "labels": labels is not None,
        "num_classes": (int(labels.max()) + 1 if labels.numel() else 0) if labels is not None else None,
        "files": files,
    }
    (folder / "partition.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return folder


def _file_facts(path: Path) -> Dict[str, Any]:
    """A file's size and SHA-256, as the manifest records them."""
    return {"bytes": path.stat().st_size, "sha256": _sha256(path)}


_sha256 = file_sha256


def _is_count(value: Any, minimum: int = 0) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def _manifest(directory: Union[str, os.PathLike]) -> Dict[str, Any]:
    """``partition.json`` of ``directory``, every field checked: its counts, the offsets tiling ``0 … N``, the
    parts agreeing with them, and the files it lists (names, sizes, hashes)."""
    folder = Path(directory)
    path = folder / "partition.json"
    if not path.is_file():
        raise FileNotFoundError(
            f"{folder} holds no partition.json: write one with pdenets.operators.save_partition "
            "(or `pdenets partition`)"
        )

    def refuse(problem: str) -> PartitionError:
        return PartitionError(f"{path}: {problem}")

    if path.stat().st_size > _MANIFEST_BYTES:
        raise refuse(f"{path.stat().st_size:,} bytes, more than a partition manifest holds")
    try:
        facts = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as error:
        raise refuse(f"not JSON ({str(error).splitlines()[0][:120]})") from None
    if not isinstance(facts, dict):
        raise refuse("not a pdenets partition manifest (a JSON object)")
    if facts.get("format") in _OLD_FORMATS:
        raise refuse(
            f"written by an earlier pdenets ({facts['format']}: {_OLD_FORMATS[facts['format']]}); write the "
            "partition again with `pdenets partition` or save_partition"
        )
    if facts.get("format") != _FORMAT:
        raise refuse(f"not a pdenets partition (format {_FORMAT})")
    for name in ("num_parts", "num_nodes"):
        if not _is_count(facts.get(name), 1):
            raise refuse(f"{name} must be a whole number >= 1, got {facts.get(name)!r}")
    if not _is_count(facts.get("nnz")):
        raise refuse(f"nnz must be a whole number >= 0, got {facts.get('nnz')!r}")
    if not _is_count(facts.get("seed")) or not isinstance(facts.get("method"), str):
        raise refuse("the partitioner (method) and its seed are missing or malformed")
    count, total = facts["num_parts"], facts["num_nodes"]
    _check_bytes(path, "the order of its nodes", 8 * total)
    offsets = facts.get("offsets")
    if (
        not isinstance(offsets, list)
        or len(offsets) != count + 1
        or not all(_is_count(value) for value in offsets)
    ):
        raise refuse(f"offsets must be {count + 1} whole numbers (num_parts + 1)")
    if offsets[0] != 0 or offsets[-1] != total or any(b <= a for a, b in zip(offsets, offsets[1:])):
        raise refuse(
            f"the offsets must tile 0…{total} in increasing parts of at least one node (no overlap, no gap); "
            f"got {offsets[:4]}{'…' if len(offsets) > 4 else ''} ending at {offsets[-1]}"
        )
    parts = facts.get("parts")
    if not isinstance(parts, list) or len(parts) != count:
        raise refuse(f"parts must list {count} parts")
    for index, part in enumerate(parts):
        expected = {"first": offsets[index], "rows": offsets[index + 1] - offsets[index]}
        if not isinstance(part, dict) or any(part.get(key) != value for key, value in expected.items()):
            raise refuse(f"part {index} must start at node {expected['first']} with {expected['rows']} rows")
        if not _is_count(part.get("nnz")):
            raise refuse(f"part {index}: nnz must be a whole number >= 0")
    if sum(part["nnz"] for part in parts) != facts["nnz"]:
        raise refuse(f"the parts hold {sum(part['nnz'] for part in parts)} entries, not nnz = {facts['nnz']}")
    for flag, key in (("features", "num_features"), ("labels", "num_classes")):
        if not isinstance(facts.get(flag), bool):
            raise refuse(f"{flag} must be true or false")
        if facts[flag] and not _is_count(facts.get(key)):
            raise refuse(f"{key} must be a whole number >= 0 when {flag} are saved, got {facts.get(key)!r}")
    files = facts.get("files")
    names = {"order.npy", *(f"part-{k}.npz" for k in range(count))}
    if not isinstance(files, dict) or set(files) != names:
        raise refuse(
            "files must list order.npy and part-0.npz … part-(K-1).npz, each with its bytes and sha256"
        )
    for name, entry in files.items():
        if (
            not isinstance(entry, dict)
            or not _is_count(entry.get("bytes"))
            or not isinstance(entry.get("sha256"), str)
            or not re.fullmatch(r"[0-9a-f]{64}", entry["sha256"])
        ):
            raise refuse(f"files.{name} must hold bytes (a whole number) and sha256 (64 hex digits)")
    return facts


def _verified(folder: Path, name: str, facts: Dict[str, Any]) -> Path:
    """The path of ``name`` after checking it is the file the manifest lists: its size and SHA-256."""
    path = folder / name
    entry = facts["files"][name]
    if not path.is_file():
        raise PartitionError(f"{path}: missing (partition.json lists it)")
    size = path.stat().st_size
    if size != entry["bytes"]:
        raise PartitionError(
            f"{path}: {size:,} bytes where partition.json records {entry['bytes']:,}: a damaged file, or one "
            "of another partition"
        )
    if _sha256(path) != entry["sha256"]:
        raise PartitionError(
            f"{path}: its SHA-256 differs from partition.json's: a changed file, or one of another part or "
            "partition"
        )
    return path


def _check_bytes(path: Path, what: str, needed: int) -> None:
    """Refuse reading ``needed`` bytes for ``what`` from ``path`` above the memory budget."""
    budget = memory_budget()
    if needed > budget:
        raise PartitionError(
            f"{path}: {what} would need {format_bytes(needed)}, more than the memory budget "
            f"{format_bytes(budget)}; if the partition is genuine, raise ${MEMORY_BUDGET_ENV_VAR} (e.g. 32G)"
        )


def _part_arrays(path: Path) -> Dict[str, np.ndarray]:
    """The arrays of a part file (an uncompressed ``.npz``): every member a plain numeric array, the sizes its
    headers declare checked against the member and the memory budget before anything is read."""
    import zipfile

    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError) as error:
        raise PartitionError(f"{path}: not a .npz archive ({str(error).splitlines()[0][:100]})") from None
    with archive:
        members, needed = {}, 0
        for info in archive.infolist():
            name = info.filename[:-4]
            if not info.filename.endswith(".npy") or not name.isidentifier():
                raise PartitionError(f"{path}: holds {info.filename[:60]!r}, not a plain array")
            if info.compress_type != zipfile.ZIP_STORED:
                raise PartitionError(
                    f"{path}: {name} is compressed; a part file stores its arrays as they are"
                )
            try:
                with archive.open(info) as stream:
                    shape, dtype = npy_header(stream)
            except (ValueError, OSError, zipfile.BadZipFile, SyntaxError) as error:
                raise PartitionError(f"{path}: {name} is not a .npy array ({str(error)[:100]})") from None
            if dtype.hasobject or dtype.kind not in "biuf":
                raise PartitionError(
                    f"{path}: {name} holds {dtype} (pickled Python objects are never read); a part file "
                    "holds plain numeric arrays"
                )
            size = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if size > info.file_size:
                raise PartitionError(
                    f"{path}: {name} declares {format_bytes(size)} but holds {info.file_size:,} bytes"
                )
            members[name], needed = info, needed + size
        _check_bytes(path, "its arrays", needed)
        arrays = {}
        for name, info in members.items():
            with archive.open(info) as stream:
                arrays[name] = np.lib.format.read_array(stream, allow_pickle=False)
    return arrays


def _order(folder: Path, facts: Dict[str, Any]) -> np.ndarray:
    """``order.npy``, checked: the file the manifest lists, the int64 ``(N,)`` permutation of ``0 … N−1``."""
    path = _verified(folder, "order.npy", facts)
    total = facts["num_nodes"]
    try:
        with open(path, "rb") as handle:
            shape, dtype = npy_header(handle)
    except ValueError as error:
        raise PartitionError(f"{path}: not a .npy array ({str(error).splitlines()[0][:100]})") from None
    if shape != (total,) or dtype != np.dtype(np.int64):
        raise PartitionError(f"{path}: holds {dtype} {shape}, not the int64 ({total},) order")
    order = np.load(path, allow_pickle=False)
    counts = np.bincount(order[(order >= 0) & (order < total)], minlength=total)
    if order.min() < 0 or order.max() >= total or not bool((counts == 1).all()):
        repeated = np.flatnonzero(counts > 1)
        absent = np.flatnonzero(counts == 0)
        detail = (
            f"node {int(repeated[0])} appears {int(counts[repeated[0]])} times"
            if repeated.size
            else "ids out of range"
        ) + (f", node {int(absent[0])} never" if absent.size else "")
        raise PartitionError(f"{path}: the order is not a permutation of 0…{total - 1} ({detail})")
    return order


def load_partition(directory: Union[str, os.PathLike]) -> GraphPartition:
    """The :class:`GraphPartition` saved in ``directory`` by :func:`save_partition` (its order and offsets
    only), checked (see the module).

    Args:
        directory: the folder :func:`save_partition` wrote.

    Returns:
        The partition.

    Raises:
        FileNotFoundError: no partition there, named.
        PartitionError: a manifest or an order that is damaged or disagrees (one line naming the file).

    Examples:
        >>> import tempfile, torch
        >>> path = torch.diag(torch.ones(3), 1); path = path + path.T
        >>> parts = partition_graph(path, 2, method="contiguous")
        >>> folder = save_partition(tempfile.mkdtemp() + "/p", parts, path)
        >>> load_partition(folder).offsets.tolist()
        [0, 2, 4]
    """
    folder = Path(directory)
    facts = _manifest(folder)
    order = _order(folder, facts)
    return GraphPartition(
        torch.from_numpy(order),
        torch.tensor(facts["offsets"], dtype=torch.int64),
        facts["method"],
        float(facts.get("cut_fraction", 0.0)),
        facts["seed"],
    )


def load_part(directory: Union[str, os.PathLike], part: int) -> PartFile:
    """Read part ``part`` of a partition written by :func:`save_partition`, checked (see the module).

    Args:
        directory: the folder :func:`save_partition` wrote.
        part: the part's number ``k`` (a process reads its rank's).

    Returns:
        The :class:`PartFile`: its rows of ``W`` (columns in the new numbering), nodes, features, labels.

    Raises:
        FileNotFoundError: no partition there, named.
        ValueError: ``part`` is out of range.
        PartitionError: a manifest or part file that is damaged, of another part or partition, or not what
            the manifest says (one line naming the file).

    Examples:
        >>> import tempfile, torch
        >>> path = torch.diag(torch.ones(3), 1); path = path + path.T
        >>> parts = partition_graph(path, 2, method="contiguous")
        >>> folder = save_partition(tempfile.mkdtemp() + "/p", parts, path)
        >>> load_part(folder, 0).weights.shape
        torch.Size([2, 4])
    """
    folder = Path(directory)
    facts = _manifest(folder)
    if isinstance(part, bool) or not isinstance(part, int) or not 0 <= part < facts["num_parts"]:
        raise ValueError(
            f"part {part} does not exist: the partition in {folder} has {facts['num_parts']} parts"
        )
    path = _verified(folder, f"part-{part}.npz", facts)
    arrays = _part_arrays(path)
    total = facts["num_nodes"]
    first, rows, nnz = (facts["parts"][part][key] for key in ("first", "rows", "nnz"))
    expected = {"indptr": (rows + 1,), "indices": (nnz,), "values": (nnz,), "nodes": (rows,)}
    if facts.get("labels"):
        expected["labels"] = (rows,)
    for name, shape in expected.items():
        if name not in arrays:
            raise PartitionError(f"{path}: holds no {name} array")
        if arrays[name].shape != shape:
            raise PartitionError(f"{path}: {name} has shape {arrays[name].shape}, not {shape}")
    for name in ("indptr", "indices", "nodes"):
        if arrays[name].dtype.kind not in "iu":
            raise PartitionError(f"{path}: {name} holds {arrays[name].dtype}, not integers")
    if arrays["values"].dtype.kind != "f":
        raise PartitionError(f"{path}: values hold {arrays['values'].dtype}, not floating-point weights")
    indptr, indices, nodes = (arrays[name].astype(np.int64) for name in ("indptr", "indices", "nodes"))
    if indptr[0] != 0 or indptr[-1] != nnz or bool((np.diff(indptr) < 0).any()):
        raise PartitionError(f"{path}: indptr must rise from 0 to nnz = {nnz}")
    if nnz and (indices.min() < 0 or indices.max() >= total):
        raise PartitionError(f"{path}: a column id lies outside 0…{total - 1}")
    if rows and (nodes.min() < 0 or nodes.max() >= total or np.unique(nodes).size != rows):
        raise PartitionError(f"{path}: its nodes must be {rows} distinct ids in 0…{total - 1}")
    values = arrays["values"]
    if not bool(np.isfinite(values).all()):
        raise PartitionError(f"{path}: values hold NaN/inf weights")
    if bool((values < 0).any()):
        raise PartitionError(f"{path}: values hold negative weights; diffusion weights are >= 0")
    order = _order(folder, facts)
    if not np.array_equal(nodes, order[first : first + rows]):
        raise PartitionError(
            f"{path}: its nodes are not order.npy[{first}:{first + rows}] (a part of another partition, or "
            "an order of another)"
        )
    labels = None
    if facts.get("labels"):
        classes = facts["num_classes"]
        if arrays["labels"].dtype.kind not in "iu":
            raise PartitionError(f"{path}: labels hold {arrays['labels'].dtype}, not integer class ids")
        labels = arrays["labels"].astype(np.int64)
        if rows and (labels.min() < -1 or labels.max() >= classes):
            raise PartitionError(
                f"{path}: labels must be class ids in 0…{classes - 1} (-1: unlabelled), as partition.json "
                "says"
            )
    features = None
    if facts.get("features"):
        width = facts["num_features"]
        if "features" not in arrays or arrays["features"].shape != (rows, width):
            found = arrays["features"].shape if "features" in arrays else None
            raise PartitionError(f"{path}: features must be a ({rows}, {width}) array, got shape {found}")
        if arrays["features"].dtype.kind == "f" and not bool(np.isfinite(arrays["features"]).all()):
            raise PartitionError(f"{path}: features hold NaN/inf values")
        features = torch.from_numpy(arrays["features"])
    weights = torch.sparse_csr_tensor(
        torch.from_numpy(indptr),
        torch.from_numpy(indices),
        torch.from_numpy(arrays["values"]),
        (rows, total),
        check_invariants=True,
    )
    return PartFile(
        part,
        facts["num_parts"],
        total,
        first,
        weights,
        torch.from_numpy(nodes),
        features,
        torch.from_numpy(labels) if labels is not None else None,
    )
