r"""Explicit diffusion on a graph: the pure functions behind :class:`pdenets.nn.DiffusionLayer`.

One explicit Euler step of the graph heat equation ``dX/dt = −L X`` ("Diffusion Mechanism in
Residual Neural Network: Theory and Applications", eq. 7/8):

$$
    X \leftarrow X - \gamma L X = (I - \gamma L) X ,
    \qquad L = \Lambda - W .
$$

:class:`DiffusionOperator` assembles ``A = I − γL`` once — a sparse matrix with the
sparsity of ``W`` plus the diagonal — and applies it ``r`` times with one sparse
matrix–matrix product per step (:class:`~pdenets.operators.sparse.SparseMatrix`: the
backward pass multiplies by a precomputed ``Aᵀ``). Memory is ``O(nnz(W) + N·C)``; no
N×N matrix is formed for sparse ``W``. Dense ``W`` takes a dense path with the same results.

:class:`BatchedDiffusion` is the same operator for ``T`` small dense graphs at once, ``(T, N, N)``
(few-shot episodes: one graph over each task's support and queries), with the same stability
check; it applies ``A^r`` to features or gives rows of ``A^r`` itself, for a network that uses the
same ``r`` steps many times.

:class:`SliceDiffusion` is the operator of an ``(S, N, C)`` tensor whose slice ``s`` lives on its own
graph of a :class:`~pdenets.operators.SliceGraphs` (forecast origins, each on the graph of its day): each
step is ``X_s ← X_s − γ L_{g(s)} X_s``, with each distinct graph read once per step.

The three share the update, the stability check (the Gershgorin bound ``γ ≤ 1/max_i Σ_{j≠i} w_ij``,
else ``γ ≤ 2/λ_max(L)`` for a symmetric ``W``; ``γ ≤ 1`` for the normalized Laplacian) and the
``before_step`` / ``after_step`` hooks of ``apply`` (dropout at each step).
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Optional, Tuple, Union

import numpy as np
import torch

from .._checks import (
    check_choice,
    check_dense,
    check_features,
    check_floating,
    check_num_nodes,
    check_positive,
    check_positive_int,
    check_scalar_entries,
    check_square,
)
from .graph import (
    GraphLike,
    as_weight_matrix,
    check_weight_values,
    is_dense,
    real_floating_weights,
    row_sums,
    symmetric_normalize,
)
from .laplacian import UnstableStepSizeError, _bound_of_checked, _check_step_size_of_checked
from .locality import NODE_ORDERS, locality_order, permuted
from .slice_graphs import SliceGraphs
from .sparse import SparseMatrix, csr_from_scipy

__all__ = [
    "DiffusionOperator",
    "BatchedDiffusion",
    "SliceDiffusion",
    "diffuse",
    "heat_semigroup",
    "LAPLACIANS",
]

#: a function applied to the features before or after every step (e.g. dropout)
StepHook = Optional[Callable[[torch.Tensor], torch.Tensor]]

#: ``"combinatorial"``: ``L = Λ − W``; ``"normalized"``: ``L = I − Λ^{-1/2} W Λ^{-1/2}`` (GCN's graph).
LAPLACIANS = ("combinatorial", "normalized")


def _check_normalized_step_size(step_size: float) -> float:
    """The bound ``1`` of the normalized Laplacian (its eigenvalues lie in ``[0, 2]``); raise beyond it."""
    if step_size > 1.0 + 1e-9:
        raise UnstableStepSizeError(
            f"step_size={step_size:g} exceeds 1, the stability bound of explicit diffusion with the "
            "normalized Laplacian (its eigenvalues reach 2 on bipartite graphs); use step_size <= 1"
        )
    return 1.0


def _check_step_size_of_batch(step_size: float, weights: torch.Tensor, rtol: float = 1e-6) -> float:
    """:func:`~pdenets.operators.check_step_size` of every graph of dense ``(T, N, N)`` weights at once.

    Each graph admits ``γ`` up to its Gershgorin bound ``1/max_i Σ_{j≠i} w_ij``; a symmetric graph beyond it
    up to its spectral bound ``2/λ_max(L)`` (eigenvalues of only the graphs that need them). Returns the
    smallest bound that admitted ``γ`` (``inf`` for graphs without edges), or raises
    :class:`~pdenets.operators.UnstableStepSizeError` naming the first graph that refuses it."""
    weights = weights.detach()
    if weights.shape[0] == 0 or weights.shape[1] == 0:
        return math.inf
    off_diagonal = weights.sum(2) - torch.diagonal(weights, dim1=1, dim2=2)
    largest = off_diagonal.max(1).values.double()
    bounds = torch.where(largest > 0, 1.0 / largest, torch.full_like(largest, math.inf))
    beyond = (step_size > bounds * (1 + rtol)).nonzero().flatten()
    if len(beyond) == 0:
        return float(bounds.min())
    graphs = weights[beyond].double()
    scale = graphs.flatten(1).abs().max(1).values.clamp_min(1e-300)[:, None, None]
    symmetric = ((graphs - graphs.transpose(1, 2)).abs() <= rtol * scale).flatten(1).all(1)
    if not bool(symmetric.all()):
        first = int(beyond[(~symmetric).nonzero()[0, 0]])
        raise UnstableStepSizeError(
            f"step_size={step_size:g} exceeds the stability bound 1/max_i sum_(j!=i) w_ij = "
            f"{float(bounds[first]):.6g} of graph {first} of {weights.shape[0]} (W is not symmetric): "
            "lower it or pass check_stability=False"
        )
    laplacians = torch.diag_embed(graphs.sum(2)) - graphs
    eigenvalues = torch.linalg.eigvalsh(laplacians)[:, -1]
    spectral = torch.where(eigenvalues > 0, 2.0 / eigenvalues, torch.full_like(eigenvalues, math.inf))
    refused = (step_size > spectral * (1 + rtol)).nonzero().flatten()
    if len(refused):
        first = int(refused[0])
        raise UnstableStepSizeError(
            f"step_size={step_size:g} exceeds the stability bound 2/lambda_max(L) = "
            f"{float(spectral[first]):.6g} of graph {int(beyond[first])} of {weights.shape[0]} (Diff-ResNet "
            "paper, Prop. 2): lower it, with more steps for the same total strength"
        )
    bounds[beyond] = spectral
    return float(bounds.min())


def _check_has_nodes(num_nodes: int) -> int:
    """Refuse a graph of no nodes: its diffusion operator would be an empty matrix that no features fit."""
    if num_nodes == 0:
        raise ValueError("the graph has no nodes (N = 0): a diffusion operator needs at least one node")
    return num_nodes


def _rows_in(
    features: torch.Tensor, order: Optional[torch.Tensor], out: Optional[torch.Tensor]
) -> torch.Tensor:
    """``features[order]`` (into ``out`` where given), or ``features`` themselves without an order."""
    if order is None:
        return features
    index = order.to(features.device)
    if out is None:
        return features.index_select(0, index)
    return torch.index_select(features.detach(), 0, index, out=out.detach())


class DiffusionOperator:
    r"""The explicit diffusion operator ``A = I − γL`` of a fixed graph, applied to features of shape ``(N,
    *)``.

    One application of ``A`` is one explicit Euler step of the graph heat equation ``dX/dt = −L X``
    ("Diffusion Mechanism in Residual Neural Network: Theory and Applications", eq. 7):

    ``X ← A X = (I − γL) X``,  ``L = Λ − W``,

    where ``X`` holds the features of the ``N`` nodes (one row per node), ``W`` the non-negative
    weights, ``Λ = diag(Σ_j w_ij)`` the degrees and ``γ`` the step size. ``A`` is assembled once,
    with the sparsity of ``W`` plus the diagonal; :meth:`apply` multiplies by it ``r`` times
    (one sparse product per step, no ``N × N`` dense matrix for sparse ``W``).

    Args:
        weights: ``(N, N)`` non-negative weights ``W`` (dense or sparse tensor,
            ``(edge_index, edge_weight)`` pair or scipy sparse matrix).
        step_size: the step size ``γ > 0``.
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` when
            ``γ`` exceeds :func:`~pdenets.operators.stability_bound` (default: ``True``).
        num_nodes: number of nodes ``N`` when ``weights`` is an edge list
            (default: ``None``, i.e. ``edge_index.max() + 1``).
        laplacian: ``"combinatorial"`` (``L = Λ − W``) or ``"normalized"``
            (``L = I − Λ^{-1/2} W Λ^{-1/2}``, so ``A = (1 − γ) I + γ Λ^{-1/2} W Λ^{-1/2}``; its
            eigenvalues lie in ``[0, 2]`` and ``γ ≤ 1`` is stable. With unit self-loops in
            ``W`` and ``γ = 1`` one step is GCN's propagation ``D̃^{-1/2} (A + I) D̃^{-1/2} X``)
            (default: ``"combinatorial"``).
        node_order: how a sparse ``A`` on the CPU is stored: ``"given"`` (the nodes' own numbers),
            ``"rcm"`` (renumbered by reverse Cuthill–McKee, so that neighbours sit near each other in
            memory) or ``"auto"``: RCM where it pays (:func:`~pdenets.operators.locality.locality_order`:
            graphs of at least 262,144 nodes whose given order has little locality and RCM's much).
            Renumbering is internal: every method takes and returns features in the nodes' own order;
            the steps of :meth:`apply` and the adjoint diffusion run in the stored order between one
            permutation in and one out (dropout masks are drawn in the stored order). (default:
            ``"auto"``)

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds the stability bound.
        ValueError: ``γ ≤ 0``, an unknown ``laplacian`` or ``node_order``, or invalid weights (negative,
            non-square).

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]])
        >>> op = DiffusionOperator(w, step_size=0.25)
        >>> op.apply(torch.tensor([[1.], [-1.]]), num_steps=1)
        tensor([[ 0.5000],
                [-0.5000]])
    """

    #: the id of the first row (a whole graph: 0; one process's rows of a partitioned graph start elsewhere)
    row_offset = 0
    #: the stored order: ``order[i]`` is the node stored as row ``i`` (``None``: the nodes' own order)
    order: Optional[torch.Tensor] = None
    #: the inverse of :attr:`order`: ``position[v]`` is the stored row of node ``v``
    position: Optional[torch.Tensor] = None

    def __init__(
        self,
        weights: GraphLike,
        step_size: float,
        *,
        check_stability: bool = True,
        num_nodes: Optional[int] = None,
        laplacian: str = "combinatorial",
        node_order: str = "auto",
    ):
        self.step_size = check_positive(step_size, "step_size")
        self.laplacian = check_choice(laplacian, "laplacian", LAPLACIANS)
        self.node_order = check_choice(node_order, "node_order", NODE_ORDERS)
        if (
            isinstance(weights, torch.Tensor)
            and weights.layout == torch.sparse_csr
            and weights.device.type == "cpu"
            and self.laplacian == "combinatorial"
            and not weights.requires_grad
            and num_nodes in (None, weights.shape[-1])
            and self._from_csr(weights, check_stability)
        ):
            self._reorder()
            return
        weights = as_weight_matrix(weights, num_nodes)
        self.num_nodes = _check_has_nodes(int(weights.shape[0]))
        if self.laplacian == "normalized":
            weights = symmetric_normalize(weights)
            self.bound = _check_normalized_step_size(self.step_size) if check_stability else 1.0
        else:
            # the graph was checked once above: the bounds reuse it
            self.bound = (
                _check_step_size_of_checked(self.step_size, weights)
                if check_stability
                else _bound_of_checked(weights)
            )
        self._warn_if_edgeless()
        self.dense = is_dense(weights)
        #: whether ``A`` depends on parameters (weights that require grad): then autograd must see the
        #: products
        self.requires_grad = bool(weights.requires_grad)
        degrees = (
            row_sums(weights)
            if self.laplacian == "combinatorial"
            else torch.ones(self.num_nodes, dtype=weights.dtype, device=weights.device)
        )
        diagonal = 1.0 - self.step_size * degrees
        if self.dense:
            matrix = self.step_size * weights + torch.diag(diagonal)
        else:
            index = torch.arange(self.num_nodes, device=weights.device)
            diag_part = torch.sparse_coo_tensor(torch.stack([index, index]), diagonal, weights.shape)
            matrix = (self.step_size * weights + diag_part).coalesce()
        # a sparse A is kept once, as the CSR of its products (no second COO copy)
        self._matrix = matrix if self.dense or self.requires_grad else None
        self.propagation = None if self.dense else SparseMatrix(matrix)
        if self._matrix is None and matrix.device.type == "cpu":
            self._reorder()

    def _reorder(self) -> None:
        """Store ``A`` in :func:`~pdenets.operators.locality.locality_order`'s order, where it finds one."""
        assert self.propagation is not None  # a CPU sparse operator
        if self.node_order == "given" or (self.node_order == "auto" and self.num_nodes < 2):
            return
        view = self.propagation.scipy(self.propagation._parts()[2].dtype)
        order = locality_order(view, self.node_order)
        if order is None:
            return
        stored = permuted(view, order)
        self.propagation = SparseMatrix(csr_from_scipy(stored))
        index_type = torch.int32 if self.num_nodes < 2**31 else torch.int64
        self.order = torch.from_numpy(order).to(index_type)
        position = torch.empty_like(self.order)
        position[self.order.long()] = torch.arange(self.num_nodes, dtype=index_type)
        self.position = position

    def to_stored(self, features: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``features`` (node order, ``(N, *)``) in the stored order (themselves when it is the same);
        ``out``: a spare tensor of their shape to write a reordered copy into (default: a new one)."""
        return _rows_in(features, self.order, out)

    def to_nodes(self, features: torch.Tensor, out: Optional[torch.Tensor] = None) -> torch.Tensor:
        """``features`` in the stored order back in the nodes' own order (themselves when it is the same);
        ``out``: as :meth:`to_stored`'s."""
        return _rows_in(features, self.position, out)

    def _warn_if_edgeless(self) -> None:
        if math.isinf(self.bound) and self.num_nodes > 1:
            warnings.warn(
                f"the graph of {self.num_nodes} nodes has no edges (every weight between distinct nodes "
                "is 0): diffusion leaves the features unchanged",
                RuntimeWarning,
                stacklevel=3,
            )

    def _from_csr(self, weights: torch.Tensor, check_stability: bool) -> bool:
        """Build ``A`` from CPU CSR weights in CSR, with no COO copy (a large graph's memory is its edges).

        Returns ``False`` (and builds nothing) where ``γ`` exceeds the Gershgorin bound, so that the general
        path decides with the spectral bound or raises."""
        import scipy.sparse as sp

        check_scalar_entries(weights, "weight matrix")
        size = _check_has_nodes(
            check_num_nodes(
                check_square(weights, "weight matrix"), f"weight matrix of shape {tuple(weights.shape)}"
            )
        )
        values = real_floating_weights(weights.values().detach())
        check_weight_values(values)
        graph = sp.csr_matrix(
            (values.numpy(), weights.col_indices().numpy(), weights.crow_indices().numpy()),
            shape=(size, size),
        )
        degrees = np.asarray(graph.sum(1), dtype=graph.dtype).ravel()
        largest = float((degrees - graph.diagonal()).max()) if size else 0.0
        bound = math.inf if largest <= 0 else 1.0 / largest
        if check_stability and self.step_size > bound * (1 + 1e-6):
            return False
        matrix = (
            graph * graph.dtype.type(self.step_size)
            + sp.diags(1 - self.step_size * degrees, format="csr", dtype=graph.dtype)
        ).tocsr()
        matrix.sort_indices()
        self.num_nodes, self.bound, self.dense, self.requires_grad, self._matrix = (
            size,
            bound,
            False,
            False,
            None,
        )
        self._warn_if_edgeless()
        self.propagation = SparseMatrix(csr_from_scipy(matrix))
        return True

    def matrix(self) -> torch.Tensor:
        """``A = I − γL`` (dense tensor or coalesced sparse COO; a sparse one is rebuilt from the stored
        CSR)."""
        if self._matrix is not None:
            return self._matrix
        assert self.propagation is not None  # an operator without a kept A is sparse: it stores the CSR
        stored = self.propagation.to_coo()
        if self.order is None:
            return stored
        order = self.order.long()
        return torch.sparse_coo_tensor(order[stored.indices()], stored.values(), stored.shape).coalesce()

    def product(self, features: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """One step ``A X`` (or ``Aᵀ X`` with ``transpose``) on 2-D features ``(N, C)``, outside autograd.

        For callers that write their own backward (:func:`~pdenets.nn.adjoint_diffusion.adjoint_diffusion`);
        :class:`~pdenets.operators.PartitionedDiffusion` has the same method over processes.
        """
        if self.dense:
            matrix = self.matrix().to(device=features.device, dtype=features.dtype)
            return (matrix.T if transpose else matrix) @ features
        return self.to_nodes(self.stored_product(self.to_stored(features), transpose))

    def power(self, features: torch.Tensor, num_steps: int, transpose: bool = False) -> torch.Tensor:
        """``A^r X`` (or ``(Aᵀ)^r X`` with ``transpose``) on 2-D features ``(N, C)``: :meth:`product`
        ``r = num_steps`` times, outside autograd, the rows reordered once in and once out.

        Args:
            features: ``(N, C)`` columns to spread.
            num_steps: ``r ≥ 0`` (``0``: ``features`` themselves).
            transpose: products of ``Aᵀ`` (how much each node's score reaches the others).

        Examples:
            >>> import torch
            >>> op = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
            >>> op.power(torch.tensor([[1.], [0.]]), 2)   # A = [[3/4, 1/4], [1/4, 3/4]]
            tensor([[0.6250],
                    [0.3750]])
        """
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        if self.dense:
            for _ in range(num_steps):
                features = self.product(features, transpose)
            return features
        stored = self.to_stored(features)
        for _ in range(num_steps):
            stored = self.stored_product(stored, transpose)
        return self.to_nodes(stored)

    def stored_product(
        self, features: torch.Tensor, transpose: bool = False, out: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        """:meth:`product` of features in the stored order (:meth:`to_stored`), in the stored order.

        ``out``: a spare tensor of the result's shape (not ``features``) that the product may write into
        and return (:meth:`~pdenets.operators.SparseMatrix.product`); use the returned tensor."""
        if self.dense:
            return self.product(features, transpose)
        assert self.propagation is not None  # a sparse operator stores the CSR
        return (self.propagation.T if transpose else self.propagation).product(features, out)

    def masked_stored_product(
        self,
        features: torch.Tensor,
        transpose: bool,
        mask: Tuple[int, int, int, int, float],
        out: Optional[torch.Tensor] = None,
    ) -> Optional[torch.Tensor]:
        """:meth:`stored_product` with a dropout mask applied to the output as it is written, where the
        compiled kernel runs it (:meth:`~pdenets.operators.SparseMatrix.masked_product`), else ``None``."""
        if self.dense:
            return None
        assert self.propagation is not None  # a sparse operator stores the CSR
        return (self.propagation.T if transpose else self.propagation).masked_product(features, mask, out)

    def apply(
        self,
        features: torch.Tensor,
        num_steps: int = 1,
        *,
        step_scale: Optional[Union[float, torch.Tensor]] = None,
        before_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
        after_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    ) -> torch.Tensor:
        """Apply ``r = num_steps`` explicit steps to ``features`` of shape ``(N, *)``.

        ``step_scale`` is ``ρ`` (default: none, i.e. ``1``): each step is then the relaxed step
        ``X ← X + ρ (A X − X) = X − ρ γ L X``, a number or a tensor in ``(0, 1]`` — e.g. a learned diffusion
        time ``ρ = sigmoid(θ)`` whose gradient the result carries (as :meth:`SliceDiffusion.apply`); stable
        whenever ``γ`` is. ``before_step`` / ``after_step`` (e.g. dropout) are applied to the input / result
        of every step.

        Examples:
            >>> import torch
            >>> op = DiffusionOperator(torch.tensor([[0., 1.], [1., 0.]]), step_size=0.25)
            >>> op.apply(torch.tensor([[1.], [-1.]]), 1, step_scale=0.5)
            tensor([[ 0.7500],
                    [-0.7500]])
        """
        check_floating(features, "features")
        check_dense(features, "features", "DiffusionOperator.apply")
        if features.dim() < 1:
            raise ValueError("features must be a tensor of shape (N, *)")
        if features.shape[0] != self.num_nodes:
            raise ValueError(
                f"features have {features.shape[0]} rows but the graph has {self.num_nodes} nodes"
            )
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        shape = features.shape
        flat = self.to_stored(features.reshape(shape[0], -1))
        dense = None
        if self.dense:
            assert self._matrix is not None  # a dense operator keeps A
            dense = self._matrix.to(device=flat.device, dtype=flat.dtype)
        for _ in range(num_steps):
            if before_step is not None:
                flat = before_step(flat)
            if dense is not None:
                stepped = dense @ flat
            elif (
                self._matrix is not None
            ):  # A depends on parameters: torch's own sparse product carries its gradient
                stepped = torch.sparse.mm(self._matrix, flat)
            else:
                assert self.propagation is not None  # neither dense nor kept: the CSR is stored
                stepped = self.propagation.matmul(flat)
            flat = stepped if step_scale is None else flat + step_scale * (stepped - flat)
            if after_step is not None:
                flat = after_step(flat)
        return self.to_nodes(flat).reshape(shape)

    def __repr__(self) -> str:
        kind = "dense" if self.dense or self.propagation is None else f"sparse, nnz={self.propagation.nnz}"
        laplacian = "" if self.laplacian == "combinatorial" else ", normalized Laplacian"
        stored = "" if self.order is None else ", stored in RCM order"
        return (
            f"DiffusionOperator(N={self.num_nodes}, step_size={self.step_size:g}, bound={self.bound:.4g}, "
            f"{kind}{laplacian}{stored})"
        )


class BatchedDiffusion:
    r"""The explicit diffusion operators ``A_t = I − γL_t`` of ``T`` small dense graphs at once.

    ``X_t ← A_t X_t = (I − γL_t) X_t``,  ``L_t = Λ_t − W_t``,  ``t = 1 … T``,

    one explicit Euler step of the heat equation on every graph ("Diffusion Mechanism in Residual
    Neural Network: Theory and Applications", eq. 7), with ``X_t`` the features of the ``N`` nodes of
    graph ``t`` (one row per node), ``W_t`` its non-negative weights, ``Λ_t = diag(Σ_j (W_t)_ij)`` its
    degrees and ``γ`` the step size. The step size is checked against every graph as
    :class:`DiffusionOperator` checks its one graph: Gershgorin's bound ``1/max_i Σ_{j≠i} w_ij``
    settles it without eigenvalues when it can, the spectral bound ``2/λ_max(L_t)`` of a symmetric
    ``W_t`` decides otherwise. :meth:`apply` with ``r`` steps equals :class:`DiffusionOperator` applied
    graph by graph (up to round-off: ``A_t`` is assembled as ``I − γ(Λ_t − W_t)``).

    Args:
        weights: ``(T, N, N)`` dense non-negative weights, one graph per slice.
        step_size: ``γ > 0``.
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` when ``γ`` exceeds the
            bound of any graph (default: ``True``).

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds the stability bound of a graph.
        ValueError: ``γ ≤ 0`` or weights that are not dense ``(T, N, N)``, negative or not finite.

    Shapes:
        - weights: ``(T, N, N)``; features: ``(T, N, F)``; :meth:`matrix`: ``(T, R, N)``.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]]).expand(3, 2, 2)
        >>> op = BatchedDiffusion(w, step_size=0.25)
        >>> op
        BatchedDiffusion(T=3, N=2, step_size=0.25, bound=1)
        >>> op.apply(torch.tensor([[1.], [-1.]]).expand(3, 2, 1), num_steps=1)[0]
        tensor([[ 0.5000],
                [-0.5000]])
        >>> torch.equal(op.matrix(2)[0], op.apply(torch.eye(2).expand(3, 2, 2), 2)[0])
        True
    """

    #: the Laplacian of every graph (``L = Λ − W``; the normalized one is :class:`DiffusionOperator`'s)
    laplacian = "combinatorial"

    def __init__(self, weights: torch.Tensor, step_size: float, *, check_stability: bool = True):
        check_floating(weights, "weights")
        if weights.dim() != 3 or weights.shape[1] != weights.shape[2]:
            raise ValueError(f"weights must be (T, N, N) dense graphs, got shape {tuple(weights.shape)}")
        if weights.layout != torch.strided:
            raise ValueError(
                "BatchedDiffusion takes dense (T, N, N) weights; use DiffusionOperator for a sparse graph"
            )
        check_weight_values(weights)
        self.step_size = check_positive(step_size, "step_size")
        self.num_graphs, self.num_nodes = int(weights.shape[0]), int(weights.shape[1])
        #: the smallest stability bound of the graphs (the one that admitted ``γ`` when checked)
        self.bound = (
            _check_step_size_of_batch(self.step_size, weights)
            if check_stability
            else _check_step_size_of_batch(0.0, weights)
        )
        degrees = weights.sum(2)
        #: ``(T, N, N)``: ``L_t = Λ_t − W_t``
        self.laplacian_matrix = torch.diag_embed(degrees) - weights
        eye = torch.eye(weights.shape[1], dtype=weights.dtype, device=weights.device)
        self.step = eye - self.step_size * self.laplacian_matrix  # (T, N, N), A_t

    def apply(
        self,
        features: torch.Tensor,
        num_steps: int = 1,
        *,
        before_step: StepHook = None,
        after_step: StepHook = None,
    ) -> torch.Tensor:
        """``A_t^r X_t`` for features ``(T, N, F)``: ``r = num_steps`` batched products (``A_t`` cast to the
        features' dtype and device).

        ``before_step`` / ``after_step`` (e.g. dropout) are applied to the input / result of every step,
        as in :meth:`DiffusionOperator.apply`.
        """
        check_floating(features, "features")
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        if features.dim() != 3 or features.shape[:2] != self.step.shape[:2]:
            raise ValueError(
                f"features must be (T, N, F) = ({self.step.shape[0]}, {self.step.shape[1]}, F), got "
                f"{tuple(features.shape)}"
            )
        step = self.step.to(device=features.device, dtype=features.dtype)
        for _ in range(num_steps):
            if before_step is not None:
                features = before_step(features)
            features = torch.bmm(step, features)
            if after_step is not None:
                features = after_step(features)
        return features

    def matrix(self, num_steps: int = 1, rows: Optional[slice] = None) -> torch.Tensor:
        """The rows ``rows`` (default all) of ``A_t^r``: ``(T, R, N)``. A few rows cost ``r`` products of ``R
        × N`` by ``N × N``; all of them a matrix power."""
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        if rows is None:
            return torch.linalg.matrix_power(self.step, num_steps)
        selected = torch.eye(self.step.shape[1], dtype=self.step.dtype, device=self.step.device)[rows]
        selected = selected.expand(self.step.shape[0], -1, -1)
        for _ in range(num_steps):
            selected = torch.bmm(selected, self.step)
        return selected

    def __repr__(self) -> str:
        return (
            f"BatchedDiffusion(T={self.num_graphs}, N={self.num_nodes}, step_size={self.step_size:g}, "
            f"bound={self.bound:.4g})"
        )


class SliceDiffusion:
    r"""Explicit diffusion of an ``(S, N, C)`` tensor, slice ``s`` on its own graph of a :class:`SliceGraphs`.

    ``X_s ← X_s − ργ L_{g(s)} X_s``,  ``L = Λ − W``  (or ``L = I − Λ^{-1/2} W Λ^{-1/2}``),  ``s = 1 … S``,

    one explicit Euler step of the heat equation on every slice's graph ("Diffusion Mechanism in Residual
    Neural Network: Theory and Applications", eq. 7), with ``X_s`` the ``(N, C)`` features of slice ``s``
    (e.g. the regions of one forecast origin), ``g(s)`` its graph among the distinct graphs of
    ``graphs``, ``W`` that graph's non-negative weights, ``Λ = diag(Σ_j w_ij)`` its degrees, ``γ`` the
    step size and ``ρ`` an optional factor of it given to :meth:`apply` (``1`` unless given). A step is
    computed as ``X − γ (Λ X − W X)`` with one product per distinct graph (:meth:`SliceGraphs.laplacian`):
    nothing of size ``S·N × S·N`` is assembled for a static graph, and no ``I − γL`` per graph.

    The stability check is :class:`DiffusionOperator`'s on every distinct graph the slices use (the
    Gershgorin bounds computed once per :class:`SliceGraphs` and shared by its subsets); ``ρ ≤ 1`` keeps
    a checked ``γ`` stable.

    Args:
        graphs: the slices' graphs (:class:`~pdenets.operators.SliceGraphs`).
        step_size: ``γ > 0``.
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` when ``γ`` exceeds the
            bound of a graph the slices use (default: ``True``).
        laplacian: ``"combinatorial"`` (``L = Λ − W``) or ``"normalized"``
            (``L = I − Λ^{-1/2} W Λ^{-1/2}``, stable for ``γ ≤ 1``) (default: ``"combinatorial"``).

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds a graph's stability bound.
        TypeError: ``graphs`` is not a :class:`~pdenets.operators.SliceGraphs`.
        ValueError: ``γ ≤ 0`` or an unknown ``laplacian``.

    Shapes:
        - features: ``(S, N, C)`` (``S = len(graphs)``); output: the same.

    Examples:
        >>> import torch
        >>> from pdenets.operators import SliceGraphs
        >>> pair = torch.tensor([[0., 1.], [1., 0.]])
        >>> graphs = SliceGraphs([pair, 2 * pair], num_nodes=2, ids=torch.tensor([0, 1, 0]))
        >>> op = SliceDiffusion(graphs, step_size=0.25)
        >>> op
        SliceDiffusion(slices=3, N=2, step_size=0.25, bound=0.5)
        >>> op.apply(torch.tensor([[1.], [-1.]]).expand(3, 2, 1), num_steps=1)[:, 0, 0]
        tensor([0.5000, 0.0000, 0.5000])
    """

    def __init__(
        self,
        graphs: SliceGraphs,
        step_size: float,
        *,
        check_stability: bool = True,
        laplacian: str = "combinatorial",
    ):
        if not isinstance(graphs, SliceGraphs):
            raise TypeError(f"graphs must be a SliceGraphs, got {type(graphs).__name__}")
        self.graphs = graphs
        self.step_size = check_positive(step_size, "step_size")
        self.laplacian = check_choice(laplacian, "laplacian", LAPLACIANS)
        self.num_slices, self.num_nodes = graphs.num_slices, graphs.num_nodes
        if self.laplacian == "normalized":
            self.bound = _check_normalized_step_size(self.step_size) if check_stability else 1.0
            return
        used = torch.unique(graphs.ids)
        bounds = graphs.stability_bounds()[used]
        #: the smallest stability bound of the slices' graphs (the one that admitted ``γ`` when checked)
        self.bound = float(bounds.min())
        if check_stability and self.step_size > self.bound * (1 + 1e-6):
            # beyond a Gershgorin bound: the graphs that need it decide with the spectral bound, or raise
            admitted = [
                _check_step_size_of_checked(self.step_size, graphs.graphs[int(index)])
                if self.step_size > float(bound) * (1 + 1e-6)
                else float(bound)
                for index, bound in zip(used, bounds)
            ]
            self.bound = min(admitted)

    def apply(
        self,
        features: torch.Tensor,
        num_steps: int = 1,
        *,
        step_scale: Optional[Union[float, torch.Tensor]] = None,
        before_step: StepHook = None,
        after_step: StepHook = None,
    ) -> torch.Tensor:
        """``r = num_steps`` steps ``X_s ← X_s − ργ L_{g(s)} X_s`` of features ``(S, N, C)``.

        ``step_scale`` is ``ρ`` (default: none, i.e. ``1``), a number or a tensor in ``(0, 1]`` — e.g. a
        learned diffusion time ``ρ = sigmoid(θ)``, whose gradient the result carries; ``before_step`` /
        ``after_step`` (e.g. dropout) are applied to the input / result of every step, as in
        :meth:`DiffusionOperator.apply`. Differentiable with respect to ``features``.
        """
        check_floating(features, "features")
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        step = self.step_size if step_scale is None else self.step_size * step_scale
        normalized = self.laplacian == "normalized"
        for _ in range(num_steps):
            if before_step is not None:
                features = before_step(features)
            features = features - step * self.graphs.laplacian(features, normalized=normalized)
            if after_step is not None:
                features = after_step(features)
        return features

    def __repr__(self) -> str:
        laplacian = "" if self.laplacian == "combinatorial" else ", normalized Laplacian"
        return (
            f"SliceDiffusion(slices={self.num_slices}, N={self.num_nodes}, step_size={self.step_size:g}, "
            f"bound={self.bound:.4g}{laplacian})"
        )


def diffuse(
    features: torch.Tensor,
    weights: GraphLike,
    *,
    step_size: float,
    num_steps: int = 1,
    check_stability: bool = True,
    num_nodes: Optional[int] = None,
    laplacian: str = "combinatorial",
) -> torch.Tensor:
    r"""``r`` explicit diffusion steps of ``features`` on the graph ``weights``.

    ``X ← (I − γL)^r X``,  ``L = Λ − W``,

    with ``X`` the node features, ``W`` the weights, ``Λ = diag(Σ_j w_ij)``, ``γ`` the step size and
    ``r`` the number of steps ("Diffusion Mechanism in Residual Neural Network: Theory and
    Applications", eq. 7). A one-call wrapper of :class:`DiffusionOperator`.

    Args:
        features: node features ``X`` of shape ``(N, *)``.
        weights: ``(N, N)`` weights ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy sparse matrix).
        step_size: the step size ``γ > 0``.
        num_steps: the number of steps ``r ≥ 0`` (default: ``1``).
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` when ``γ``
            exceeds the stability bound (default: ``True``).
        num_nodes: number of nodes ``N`` when ``weights`` is an edge list (default: ``None``, inferred).
        laplacian: ``"combinatorial"`` (``L = Λ − W``) or ``"normalized"``
            (``L = I − Λ^{-1/2} W Λ^{-1/2}``) (default: ``"combinatorial"``).

    Returns:
        The diffused features ``(I − γL)^r X``, same shape as ``features``.

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds the stability bound.
        ValueError: ``features`` does not have ``N`` rows, or invalid arguments.

    Examples:
        >>> import torch
        >>> w = torch.ones(3, 3) - torch.eye(3)
        >>> diffuse(torch.tensor([[3.], [0.], [0.]]), w, step_size=1/3, num_steps=1).round(decimals=6)
        tensor([[1.],
                [1.],
                [1.]])
    """
    check_features(features, "features")
    operator = DiffusionOperator(
        weights, step_size, check_stability=check_stability, num_nodes=num_nodes, laplacian=laplacian
    )
    return operator.apply(features, num_steps)


def heat_semigroup(features: torch.Tensor, weights: GraphLike, time: float) -> torch.Tensor:
    r"""Exact heat flow ``e^{−tL} X`` for a symmetric ``W`` by eigendecomposition of ``L``.

    ``X(t) = e^{−tL} X(0) = Σ_k e^{−λ_k t} v_k v_kᵀ X(0)``,

    where ``L = Λ − W`` is the combinatorial Laplacian with eigenpairs ``(λ_k, v_k)`` and ``t`` the
    time ("Diffusion Mechanism in Residual Neural Network: Theory and Applications", eq. 11): the
    limit of :func:`diffuse` with ``r = t / γ`` steps as ``γ → 0``. Dense ``O(N³)``: a reference
    for small graphs and tests, not a layer.

    Args:
        features: initial features ``X(0)`` of shape ``(N, *)``.
        weights: symmetric ``(N, N)`` weights ``W`` (any form accepted by
            :func:`~pdenets.operators.as_weight_matrix`).
        time: diffusion time ``t ≥ 0``.

    Returns:
        ``X(t)``, same shape as ``features``.

    Raises:
        ValueError: ``W`` is not symmetric.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]])          # L has eigenvalues 0 and 2
        >>> heat_semigroup(torch.tensor([[1.], [-1.]]), w, time=0.5).round(decimals=4)   # e^{-1} ≈ 0.3679
        tensor([[ 0.3679],
                [-0.3679]])
    """
    check_features(features, "features")
    weights = as_weight_matrix(weights)
    dense = weights if is_dense(weights) else weights.to_dense()
    if not torch.allclose(dense, dense.T, atol=1e-12, rtol=1e-10):
        raise ValueError("heat_semigroup needs a symmetric weight matrix")
    laplacian = torch.diag(dense.sum(1)) - dense
    eigenvalues, eigenvectors = torch.linalg.eigh(laplacian.to(features.dtype))
    flat = features.reshape(features.shape[0], -1)
    coefficients = eigenvectors.T @ flat
    return (eigenvectors @ (torch.exp(-eigenvalues * time)[:, None] * coefficients)).reshape(features.shape)
