"""Splitting a graph's nodes into parts, one per process, and saving each part's rows.

A graph too large for one machine is diffused by ``K`` processes, each holding the rows of ``W`` (and the
features) of its part (:class:`~pdenets.operators.partitioned.PartitionedDiffusion`). The parts are made
contiguous: the nodes are renumbered so that part ``k`` is the range ``offsets[k] : offsets[k + 1]`` of the
new numbering (``order[new] = old``). Two partitioners:

* ``"metis"``: METIS's multilevel k-way partition (through ``pymetis``): few edges between parts, so
  few halo rows to exchange per step;
* ``"contiguous"``: the nodes in their given order cut into ``K`` equal ranges: free, and as good as the
  numbering (a graph numbered by crawl order or by a previous METIS run); on a random graph nearly every
  node becomes somebody's halo.

:func:`save_partition` writes one file per part (its rows of ``W`` with their new column ids, and the
features and labels of its nodes where given) and a small ``partition.json``; a process loads only its own
part (:func:`load_part`), so no process ever holds the whole graph.

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
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Tuple, Union

import numpy as np
import torch

from .._checks import check_choice, check_positive_int
from .graph import GraphLike, as_weight_matrix

__all__ = [
    "GraphPartition",
    "partition_graph",
    "save_partition",
    "load_part",
    "load_partition",
    "PartFile",
    "PARTITIONERS",
]

PARTITIONERS = ("metis", "contiguous")
_FORMAT = "pdenets-partition-1"


@dataclass(frozen=True)
class GraphPartition:
    """``K`` contiguous parts of a renumbered graph.

    Args:
        order: ``(N,)`` int64, ``order[new] = old``: the node of the given numbering at each new position.
        offsets: ``(K + 1,)`` int64, part ``k`` holds the new ids ``offsets[k] : offsets[k + 1]``.
        method: the partitioner that made it.
        cut_fraction: the fraction of the stored off-diagonal entries of ``W`` between different parts.

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
                'method="metis" needs pymetis (pip install pymetis); or use method="contiguous"'
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
    order = np.argsort(assignment, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(np.bincount(assignment, minlength=num_parts))])
    coo = graph.tocoo()
    off_diagonal = coo.row != coo.col
    cut = (
        float((assignment[coo.row] != assignment[coo.col])[off_diagonal].mean())
        if off_diagonal.any()
        else 0.0
    )
    return GraphPartition(torch.from_numpy(order), torch.from_numpy(offsets.astype(np.int64)), method, cut)


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
    """Write ``partition.json`` and one ``part-k.pt`` per part into ``directory`` (a new or empty folder).

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
        ['order.pt', 'part-0.pt', 'part-1.pt', 'partition.json']
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
    folder = Path(directory)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise FileExistsError(
            f"{folder} exists and is not an empty folder: give a new folder for the partition"
        )
    folder.mkdir(parents=True, exist_ok=True)
    order = partition.order.numpy()
    renumbered = graph[order][:, order].tocsr()
    renumbered.sort_indices()
    dense_features = None
    if features is not None:
        dense_features = features.to_dense() if features.layout != torch.strided else features
    for part in range(partition.num_parts):
        first, end = partition.rows(part)
        rows = renumbered[first:end]
        nodes = partition.order[first:end]
        torch.save(
            {
                "format": _FORMAT,
                "part": part,
                "num_parts": partition.num_parts,
                "num_nodes": partition.num_nodes,
                "first": first,
                "indptr": torch.from_numpy(rows.indptr.astype(np.int64)),
                "indices": torch.from_numpy(rows.indices.astype(np.int64)),
                "values": torch.from_numpy(rows.data),
                "nodes": nodes.clone(),
                "features": None if dense_features is None else dense_features[nodes].clone(),
                "labels": None if labels is None else labels[nodes].clone(),
            },
            folder / f"part-{part}.pt",
        )
    torch.save(partition.order.clone(), folder / "order.pt")
    (folder / "partition.json").write_text(
        json.dumps(
            {
                "format": _FORMAT,
                "num_parts": partition.num_parts,
                "num_nodes": partition.num_nodes,
                "offsets": partition.offsets.tolist(),
                "method": partition.method,
                "cut_fraction": partition.cut_fraction,
            },
            indent=2,
        )
        + "\n",
        encoding="utf-8",
    )
    return folder


def _manifest(directory: Union[str, os.PathLike]) -> dict:
    folder = Path(directory)
    manifest = folder / "partition.json"
    if not manifest.is_file():
        raise FileNotFoundError(
            f"{folder} holds no partition.json: write one with pdenets.operators.save_partition "
            "(or `pdenets partition`)"
        )
    facts = json.loads(manifest.read_text(encoding="utf-8"))
    if not isinstance(facts, dict) or facts.get("format") != _FORMAT:
        raise ValueError(f"{manifest} is not a pdenets partition (format {_FORMAT})")
    return facts


def load_partition(directory: Union[str, os.PathLike]) -> GraphPartition:
    """The :class:`GraphPartition` saved in ``directory`` by :func:`save_partition` (its order and offsets
    only).

    Args:
        directory: the folder :func:`save_partition` wrote.

    Returns:
        The partition.

    Raises:
        FileNotFoundError: no partition there, named.
        ValueError: the folder is not a pdenets partition, or its files disagree.

    Examples:
        >>> import tempfile, torch
        >>> path = torch.diag(torch.ones(3), 1); path = path + path.T
        >>> parts = partition_graph(path, 2, method="contiguous")
        >>> folder = save_partition(tempfile.mkdtemp() + "/p", parts, path)
        >>> load_partition(folder).offsets.tolist()
        [0, 2, 4]
    """
    facts = _manifest(directory)
    order = torch.load(Path(directory) / "order.pt", weights_only=True)
    offsets = torch.tensor(facts["offsets"], dtype=torch.int64)
    if order.numel() != facts["num_nodes"] or int(offsets[-1]) != facts["num_nodes"]:
        raise ValueError(
            f"the partition in {directory} is inconsistent: order of {order.numel()} nodes, "
            f"{facts['num_nodes']} declared"
        )
    return GraphPartition(order, offsets, str(facts["method"]), float(facts["cut_fraction"]))


def load_part(directory: Union[str, os.PathLike], part: int) -> PartFile:
    """Read part ``part`` of a partition written by :func:`save_partition`.

    Args:
        directory: the folder :func:`save_partition` wrote.
        part: the part's number ``k`` (a process reads its rank's).

    Returns:
        The :class:`PartFile`: its rows of ``W`` (columns in the new numbering), nodes, features, labels.

    Raises:
        FileNotFoundError: no partition there, named.
        ValueError: the folder is not a pdenets partition, or ``part`` is out of range.

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
    if not 0 <= part < facts["num_parts"]:
        raise ValueError(
            f"part {part} does not exist: the partition in {folder} has {facts['num_parts']} parts"
        )
    stored = torch.load(folder / f"part-{part}.pt", weights_only=True)
    rows = stored["indptr"].numel() - 1
    weights = torch.sparse_csr_tensor(
        stored["indptr"],
        stored["indices"],
        stored["values"],
        (rows, stored["num_nodes"]),
        check_invariants=True,
    )
    return PartFile(
        part,
        stored["num_parts"],
        stored["num_nodes"],
        stored["first"],
        weights,
        stored["nodes"],
        stored["features"],
        stored["labels"],
    )
