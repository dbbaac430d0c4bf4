r"""One graph per slice of an ``(S, N, C)`` tensor, stored once per distinct graph.

Forecasting windows come as ``(S, N, C)``: ``S`` forecast origins, ``N`` regions, ``C``
features. Every origin has the graph of its day; a static graph is the same for all of them,
a daily graph (mobility) repeats for every origin that starts on that day. Batching them as
one block-diagonal matrix of ``S·N`` nodes (PyTorch Geometric's disjoint union) stores ``S``
copies of the graph, and message passing layers then re-normalize those copies on every call.

:class:`SliceGraphs` keeps the ``G`` distinct graphs (``G = 1`` for a static graph) and the
graph id of each slice. :meth:`SliceGraphs.propagate` computes ``Y[s] = M_{g(s)} X[s]``:

* all slices on one graph: one sparse product ``M (N × N)`` with ``X`` laid out as
  ``(N, S·C)`` — the graph is read once, whatever ``S``;
* several graphs: one product with the block-diagonal matrix of the slices' graphs, built by
  index arithmetic (no Python loop over slices) and kept for the next call.

Normalizations (:meth:`SliceGraphs.normalized`) run once per distinct graph and are shared by
every subset (:meth:`SliceGraphs.subset`, e.g. a mini-batch of origins).

Examples:
    >>> import torch
    >>> ring = torch.tensor([[0., 1, 1], [1, 0, 1], [1, 1, 0]]) / 2
    >>> graphs = SliceGraphs([ring, 2 * ring], num_nodes=3, ids=torch.tensor([0, 0, 1]))
    >>> x = torch.ones(3, 3, 2)
    >>> graphs.propagate(x)[:, 0, 0]          # rows of ring sum to 1, of 2·ring to 2
    tensor([1., 1., 2.])
    >>> graphs.subset(torch.tensor([2])).propagate(x[2:]).shape
    torch.Size([1, 3, 2])
"""

from __future__ import annotations

from typing import Callable, Dict, List, Optional, Sequence, Tuple

import torch

from .._checks import check_positive, check_positive_int
from .graph import GraphLike, as_weight_matrix, is_dense, remove_self_loops, row_sums, symmetric_normalize
from .laplacian import _bound_of_checked
from .sparse import SparseMatrix

__all__ = ["SliceGraphs", "gcn_propagation_matrix", "chebyshev_propagation_matrix"]


class _Shared:
    """The distinct graphs (coalesced COO) and their normalized versions, shared by subsets."""

    def __init__(self, graphs: List[torch.Tensor]):
        self.graphs = graphs
        self.derived: Dict[str, "_Shared"] = {}
        self.matrices: Dict[int, SparseMatrix] = {}
        self.degrees: Optional[torch.Tensor] = None
        self.bounds: Optional[torch.Tensor] = None
        self._edges: Optional[Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]] = None

    def matrix(self, index: int) -> SparseMatrix:
        if index not in self.matrices:
            self.matrices[index] = SparseMatrix(self.graphs[index])
        return self.matrices[index]

    def edges(self) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """All graphs' entries concatenated: rows, cols, values and each graph's offset (``G + 1``)."""
        if self._edges is None:
            counts = torch.tensor([int(g._nnz()) for g in self.graphs])
            offsets = torch.zeros(len(self.graphs) + 1, dtype=torch.long)
            offsets[1:] = counts.cumsum(0)
            indices = torch.cat([g.indices() for g in self.graphs], 1)
            values = torch.cat([g.values() for g in self.graphs])
            self._edges = (indices[0], indices[1], values, offsets)
        return self._edges

    def row_sums(self) -> torch.Tensor:
        """``(G, N)`` row sums of every graph."""
        if self.degrees is None:
            self.degrees = torch.stack([row_sums(graph) for graph in self.graphs])
        return self.degrees

    def stability_bounds(self) -> torch.Tensor:
        """``(G,)`` Gershgorin bounds of every graph (float64; ``inf`` for a graph without edges)."""
        if self.bounds is None:
            self.bounds = torch.tensor(
                [_bound_of_checked(graph) for graph in self.graphs], dtype=torch.float64
            )
        return self.bounds


class SliceGraphs:
    r"""``S`` slices over ``N`` nodes, slice ``s`` on graph ``ids[s]`` of ``G`` distinct graphs.

    ``Y[s] = M_{g(s)} X[s]``,  ``s = 1, …, S``,

    where ``X`` is an ``(S, N, C)`` tensor (``S`` slices, e.g. forecast origins, of ``N`` nodes
    with ``C`` features), ``M_1, …, M_G`` the distinct ``(N, N)`` graphs and ``g(s) = ids[s]`` the
    graph of slice ``s`` (:meth:`propagate`). Each distinct graph is stored once, whatever ``S``.

    Args:
        graphs: the distinct graphs, each in any form of :func:`~pdenets.operators.as_weight_matrix`;
            or, with ``ids=None``, one graph per slice (repeated objects are stored once).
        num_nodes: ``N``.
        ids: ``(S,)`` graph index of every slice (default: ``arange(len(graphs))`` after merging
            repeated objects).
        dtype: floating dtype of the stored weights; products cast to the input's dtype
            (default: ``torch.float64``).
        _shared: internal; the storage of another collection whose graphs and normalizations this
            one shares (used by :meth:`subset` and :meth:`normalized`; ``graphs`` is then ignored)
            (default: ``None``).

    Raises:
        ValueError: no graphs, a graph that is not ``N × N`` or has invalid weights, or ``ids``
            outside ``0 … G − 1``.

    Shapes: :meth:`propagate` takes and returns ``(S, N, C)``.

    Examples:
        >>> import torch
        >>> ring = torch.tensor([[0., 1, 1], [1, 0, 1], [1, 1, 0]]) / 2
        >>> graphs = SliceGraphs([ring, 2 * ring], num_nodes=3, ids=torch.tensor([0, 0, 1]))
        >>> graphs
        SliceGraphs(slices=3, nodes=3, distinct graphs=2)
        >>> graphs.propagate(torch.ones(3, 3, 2))[:, 0, 0]   # rows of ring sum to 1, of 2·ring to 2
        tensor([1., 1., 2.])
    """

    def __init__(
        self,
        graphs: Sequence[GraphLike],
        num_nodes: int,
        *,
        ids: Optional[torch.Tensor] = None,
        dtype: torch.dtype = torch.float64,
        _shared: Optional[_Shared] = None,
    ):
        self.num_nodes = check_positive_int(num_nodes, "num_nodes")
        if _shared is None:
            if len(graphs) == 0:
                raise ValueError("SliceGraphs needs at least one graph")
            if ids is None:
                position: Dict[int, int] = {}
                distinct: List[GraphLike] = []
                assigned: List[int] = []
                for graph in graphs:
                    if id(graph) not in position:
                        position[id(graph)] = len(distinct)
                        distinct.append(graph)
                    assigned.append(position[id(graph)])
                graphs, ids = distinct, torch.tensor(assigned)
            matrices = []
            for index, graph in enumerate(graphs):
                try:
                    matrix = as_weight_matrix(graph, self.num_nodes, dtype=dtype)
                except (ValueError, TypeError) as error:
                    raise type(error)(f"graph {index}: {error}") from None
                matrices.append((matrix.to_sparse() if is_dense(matrix) else matrix).coalesce())
            _shared = _Shared(matrices)
        ids = torch.as_tensor(ids)
        if ids.dim() != 1 or ids.dtype not in (torch.int32, torch.int64) or ids.numel() == 0:
            raise ValueError(
                f"ids must be a non-empty 1-D integer tensor, got {tuple(ids.shape)} {ids.dtype}"
            )
        if int(ids.min()) < 0 or int(ids.max()) >= len(_shared.graphs):
            raise ValueError(
                f"ids must lie in 0…{len(_shared.graphs) - 1} (one per distinct graph), got "
                f"{int(ids.min())}…{int(ids.max())}"
            )
        self.ids = (
            ids.long().cpu()
        )  # host metadata: which graph each slice is on (the graphs stay where they are)
        self._shared = _shared
        self._block: Optional[SparseMatrix] = None
        self._views: Dict[str, "SliceGraphs"] = {}

    @property
    def num_slices(self) -> int:
        return int(self.ids.numel())

    @property
    def num_graphs(self) -> int:
        """``G``, the distinct graphs (of the whole collection, not only this subset's)."""
        return len(self._shared.graphs)

    @property
    def graphs(self) -> List[torch.Tensor]:
        """The distinct graphs as coalesced sparse COO tensors."""
        return self._shared.graphs

    def __len__(self) -> int:
        return self.num_slices

    def graph(self, slice_index: int) -> torch.Tensor:
        """The graph of one slice (sparse COO)."""
        return self._shared.graphs[int(self.ids[slice_index])]

    def subset(self, slices: torch.Tensor) -> "SliceGraphs":
        """The slices ``slices`` (indices into this collection), sharing graphs and normalizations."""
        return SliceGraphs(
            (),
            self.num_nodes,
            ids=self.ids[torch.as_tensor(slices, dtype=torch.long).cpu()],
            _shared=self._shared,
        )

    def normalized(self, name: str, function: Callable[[torch.Tensor], torch.Tensor]) -> "SliceGraphs":
        """The same slices on ``function(graph)`` for every distinct graph, computed once under ``name``."""
        if name not in self._views:
            if name not in self._shared.derived:
                self._shared.derived[name] = _Shared(
                    [function(graph).coalesce() for graph in self._shared.graphs]
                )
            self._views[name] = SliceGraphs(
                (), self.num_nodes, ids=self.ids, _shared=self._shared.derived[name]
            )
        return self._views[name]

    def row_sums(self) -> torch.Tensor:
        """``(S, N)``: the row sums of each slice's graph (the degrees of the Laplacian ``Λ − W``)."""
        return self._shared.row_sums()[self.ids]

    def stability_bounds(self) -> torch.Tensor:
        """``(G,)``: the Gershgorin bound ``1/max_i Σ_{j≠i} w_ij`` of explicit diffusion on every distinct
        graph (:func:`~pdenets.operators.stability_bound`; ``inf`` without edges), computed once and shared
        by subsets; index it with :attr:`ids` for the slices' bounds."""
        return self._shared.stability_bounds()

    def laplacian(self, x: torch.Tensor, *, normalized: bool = False) -> torch.Tensor:
        """``L_{g(s)} X[s]`` for ``x (S, N, C)``: ``(Λ − W) X``, or ``(I − Λ^{-1/2} W Λ^{-1/2}) X`` when
        ``normalized``; an explicit diffusion step is ``x − γ · laplacian(x)``."""
        if normalized:
            return x - self.normalized("symmetric", symmetric_normalize).propagate(x)
        return self.row_sums().to(device=x.device, dtype=x.dtype).unsqueeze(-1) * x - self.propagate(x)

    def block_diagonal(self) -> SparseMatrix:
        """The ``S·N × S·N`` block-diagonal matrix of the slices' graphs (built once, by index arithmetic)."""
        if self._block is None:
            rows, cols, values, offsets = self._shared.edges()
            # the index arithmetic on the host (ids and offsets are host metadata), the entries where they are
            starts, counts = offsets[self.ids], offsets[self.ids + 1] - offsets[self.ids]
            total = int(counts.sum())
            slot = torch.repeat_interleave(torch.arange(self.num_slices), counts)
            first = torch.repeat_interleave(starts - (counts.cumsum(0) - counts), counts)
            entry = (first + torch.arange(total)).to(rows.device)
            shift = (slot * self.num_nodes).to(rows.device)
            size = self.num_slices * self.num_nodes
            # each graph's entries are sorted and the blocks follow the slices: already coalesced
            self._block = SparseMatrix(
                torch.sparse_coo_tensor(
                    torch.stack([rows[entry] + shift, cols[entry] + shift]),
                    values[entry],
                    (size, size),
                    is_coalesced=True,
                )
            )
        return self._block

    def propagate(self, x: torch.Tensor) -> torch.Tensor:
        """``Y[s] = M_{g(s)} X[s]`` for ``x (S, N, C)``; differentiable with respect to ``x``."""
        if x.dim() != 3 or x.shape[0] != self.num_slices or x.shape[1] != self.num_nodes:
            raise ValueError(
                f"expected input of shape ({self.num_slices}, {self.num_nodes}, C) for {self.num_slices} "
                f"slices of {self.num_nodes} nodes, got {tuple(x.shape)}"
            )
        slices, nodes, channels = x.shape
        first = int(self.ids[0])
        if bool((self.ids == first).all()):
            flat = x.permute(1, 0, 2).reshape(nodes, slices * channels)
            out = self._shared.matrix(first).matmul(flat)
            return out.reshape(nodes, slices, channels).permute(1, 0, 2)
        return (
            self.block_diagonal().matmul(x.reshape(slices * nodes, channels)).reshape(slices, nodes, channels)
        )

    def __repr__(self) -> str:
        return (
            f"SliceGraphs(slices={self.num_slices}, nodes={self.num_nodes}, "
            f"distinct graphs={self.num_graphs})"
        )


def gcn_propagation_matrix(weights: torch.Tensor) -> torch.Tensor:
    r"""The propagation matrix of PyTorch Geometric's ``GCNConv``.

    ``P = D^{-1/2} (Wᵀ + I') D^{-1/2}``,  ``D = diag(Σ_j (W + I')_{ji})``,

    as in "Semi-Supervised Classification with Graph Convolutional Networks". PyG reads an entry
    ``w_ij`` of ``W`` as a message from ``i`` to ``j`` (so the product is with ``Wᵀ``), adds a unit
    self-loop to every node that has none (``I'``; a self-loop already in ``W`` keeps its weight)
    and normalizes by the in-degrees ``D``.

    Args:
        weights: ``(N, N)`` weights ``W`` as a sparse COO tensor.

    Returns:
        ``P`` as an ``(N, N)`` coalesced sparse COO tensor; ``P X`` equals ``GCNConv``'s propagation of ``X``.

    Examples:
        >>> import torch
        >>> edge = torch.tensor([[0., 1.], [0., 0.]]).to_sparse()   # one edge, from node 0 to node 1
        >>> gcn_propagation_matrix(edge).to_dense().round(decimals=4)
        tensor([[1.0000, 0.0000],
                [0.7071, 0.5000]])
    """
    weights = weights.coalesce()
    nodes = weights.shape[0]
    rows, cols = weights.indices()
    loop = rows == cols
    device = weights.device
    self_weight = torch.ones(nodes, dtype=weights.dtype, device=device).index_put_(
        (rows[loop],), weights.values()[loop]
    )
    rows, cols, values = rows[~loop], cols[~loop], weights.values()[~loop]
    degree = self_weight + torch.zeros(nodes, dtype=weights.dtype, device=device).index_add_(0, cols, values)
    scale = torch.where(degree > 0, degree.clamp_min(1e-300).rsqrt(), torch.zeros_like(degree))
    diagonal = torch.arange(nodes, device=device)
    indices = torch.cat([torch.stack([cols, rows]), torch.stack([diagonal, diagonal])], 1)
    values = torch.cat([scale[cols] * values * scale[rows], scale * self_weight * scale])
    return torch.sparse_coo_tensor(indices, values, (nodes, nodes)).coalesce()


def chebyshev_propagation_matrix(weights: torch.Tensor, lambda_max: float = 2.0) -> torch.Tensor:
    r"""The scaled Laplacian of PyTorch Geometric's ``ChebConv`` (``normalization="sym"``).

    ``L̂ = 2L/λ_max − I``,  ``L = I − D^{-1/2} W D^{-1/2}``,

    with ``W`` the weights (self-loops removed), ``D`` the row sums of ``W`` and ``λ_max`` an
    estimate of the largest eigenvalue of ``L``; ``L̂`` is the argument of the Chebyshev filters of
    "Convolutional Neural Networks on Graphs with Fast Localized Spectral Filtering". It is applied
    as PyG does, to messages from ``i`` to ``j`` along ``w_ij`` (so the product is with the
    transpose). With ``λ_max = 2``: ``L̂ = −D^{-1/2} Wᵀ D^{-1/2}``.

    Args:
        weights: ``(N, N)`` weights ``W`` as a sparse COO tensor.
        lambda_max: ``λ_max``, the largest eigenvalue assumed for ``L`` (default: ``2.0``).

    Returns:
        ``L̂`` (transposed as above) as an ``(N, N)`` coalesced sparse COO tensor.

    Raises:
        ValueError: ``lambda_max`` is not a finite number > 0 (``0`` would divide by zero, a negative one flip
            the sign of ``L̂``).

    Examples:
        >>> import torch
        >>> path = torch.tensor([[0., 1.], [1., 0.]]).to_sparse()
        >>> chebyshev_propagation_matrix(path).to_dense()
        tensor([[ 0., -1.],
                [-1.,  0.]])
    """
    factor = 2.0 / check_positive(lambda_max, "lambda_max")
    weights = remove_self_loops(weights)
    nodes = weights.shape[0]
    degree = row_sums(weights)
    scale = torch.where(degree > 0, degree.clamp_min(1e-300).rsqrt(), torch.zeros_like(degree))
    rows, cols = weights.indices()
    diagonal = torch.arange(nodes, device=weights.device)
    indices = torch.cat([torch.stack([cols, rows]), torch.stack([diagonal, diagonal])], 1)
    values = torch.cat(
        [
            -factor * scale[cols] * weights.values() * scale[rows],
            torch.full((nodes,), factor - 1.0, dtype=weights.dtype, device=weights.device),
        ]
    )
    return torch.sparse_coo_tensor(indices, values, (nodes, nodes)).coalesce()
