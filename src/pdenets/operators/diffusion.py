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
"""

from __future__ import annotations

import math
import warnings
from typing import Callable, Optional

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
from .sparse import SparseMatrix

__all__ = ["DiffusionOperator", "BatchedDiffusion", "diffuse", "heat_semigroup", "LAPLACIANS"]

#: ``"combinatorial"``: ``L = Λ − W``; ``"normalized"``: ``L = I − Λ^{-1/2} W Λ^{-1/2}`` (GCN's graph).
LAPLACIANS = ("combinatorial", "normalized")


def _check_has_nodes(num_nodes: int) -> int:
    """Refuse a graph of no nodes: its diffusion operator would be an empty matrix that no features fit."""
    if num_nodes == 0:
        raise ValueError("the graph has no nodes (N = 0): a diffusion operator needs at least one node")
    return num_nodes


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

    Raises:
        UnstableStepSizeError: ``check_stability`` is set and ``γ`` exceeds the stability bound.
        ValueError: ``γ ≤ 0``, an unknown ``laplacian`` or invalid weights (negative, non-square).

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

    def __init__(
        self,
        weights: GraphLike,
        step_size: float,
        *,
        check_stability: bool = True,
        num_nodes: Optional[int] = None,
        laplacian: str = "combinatorial",
    ):
        self.step_size = check_positive(step_size, "step_size")
        self.laplacian = check_choice(laplacian, "laplacian", LAPLACIANS)
        if (
            isinstance(weights, torch.Tensor)
            and weights.layout == torch.sparse_csr
            and weights.device.type == "cpu"
            and self.laplacian == "combinatorial"
            and not weights.requires_grad
            and num_nodes in (None, weights.shape[-1])
            and self._from_csr(weights, check_stability)
        ):
            return
        weights = as_weight_matrix(weights, num_nodes)
        self.num_nodes = _check_has_nodes(int(weights.shape[0]))
        if self.laplacian == "normalized":
            weights = symmetric_normalize(weights)
            self.bound = 1.0
            if check_stability and step_size > 1.0 + 1e-9:
                raise UnstableStepSizeError(
                    f"step_size={step_size:g} exceeds 1, the stability bound of explicit diffusion with the "
                    "normalized Laplacian (its eigenvalues reach 2 on bipartite graphs); use step_size <= 1"
                )
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
        self.propagation = SparseMatrix(
            torch.sparse_csr_tensor(
                torch.from_numpy(matrix.indptr),
                torch.from_numpy(matrix.indices),
                torch.from_numpy(matrix.data),
                (size, size),
                check_invariants=False,
            )
        )
        return True

    def matrix(self) -> torch.Tensor:
        """``A = I − γL`` (dense tensor or coalesced sparse COO; a sparse one is rebuilt from the stored
        CSR)."""
        if self._matrix is not None:
            return self._matrix
        assert self.propagation is not None  # an operator without a kept A is sparse: it stores the CSR
        return self.propagation.to_coo()

    def product(self, features: torch.Tensor, transpose: bool = False) -> torch.Tensor:
        """One step ``A X`` (or ``Aᵀ X`` with ``transpose``) on 2-D features ``(N, C)``, outside autograd.

        For callers that write their own backward (:func:`~pdenets.nn.adjoint_diffusion.adjoint_diffusion`);
        :class:`~pdenets.operators.PartitionedDiffusion` has the same method over processes.
        """
        if self.dense:
            matrix = self.matrix().to(device=features.device, dtype=features.dtype)
            return (matrix.T if transpose else matrix) @ features
        assert self.propagation is not None  # a sparse operator stores the CSR
        return (self.propagation.T if transpose else self.propagation).product(features)

    def apply(
        self,
        features: torch.Tensor,
        num_steps: int = 1,
        *,
        before_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
        after_step: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    ) -> torch.Tensor:
        """Apply ``r = num_steps`` explicit steps to ``features`` of shape ``(N, *)``.

        ``before_step`` / ``after_step`` (e.g. dropout) are applied to the input / result of
        every step.
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
        flat = features.reshape(shape[0], -1)
        dense = None
        if self.dense:
            assert self._matrix is not None  # a dense operator keeps A
            dense = self._matrix.to(device=flat.device, dtype=flat.dtype)
        for _ in range(num_steps):
            if before_step is not None:
                flat = before_step(flat)
            if dense is not None:
                flat = dense @ flat
            elif (
                self._matrix is not None
            ):  # A depends on parameters: torch's own sparse product carries its gradient
                flat = torch.sparse.mm(self._matrix, flat)
            else:
                assert self.propagation is not None  # neither dense nor kept: the CSR is stored
                flat = self.propagation.matmul(flat)
            if after_step is not None:
                flat = after_step(flat)
        return flat.reshape(shape)

    def __repr__(self) -> str:
        kind = "dense" if self.dense or self.propagation is None else f"sparse, nnz={self.propagation.nnz}"
        laplacian = "" if self.laplacian == "combinatorial" else ", normalized Laplacian"
        return (
            f"DiffusionOperator(N={self.num_nodes}, step_size={self.step_size:g}, bound={self.bound:.4g}, "
            f"{kind}{laplacian})"
        )


class BatchedDiffusion:
    r"""The explicit diffusion operators ``A_t = I − γL_t`` of ``T`` small dense graphs at once.

    ``X_t ← A_t X_t = (I − γL_t) X_t``,  ``L_t = Λ_t − W_t``,  ``t = 1 … T``,

    one explicit Euler step of the heat equation on every graph ("Diffusion Mechanism in Residual
    Neural Network: Theory and Applications", eq. 7), with ``W_t`` the non-negative weights of graph
    ``t`` and ``Λ_t`` its degrees. The step size is checked against every graph's stability bound
    ``2/λ_max(L_t)``: Gershgorin's ``λ_max ≤ 2 max_i Σ_{j≠i} w_ij`` settles it without eigenvalues
    when it can, the eigenvalues of the graphs (symmetric ``W_t``) decide otherwise.

    Args:
        weights: ``(T, N, N)`` dense non-negative weights, one graph per slice.
        step_size: ``γ > 0``.
        check_stability: raise :class:`~pdenets.operators.UnstableStepSizeError` when ``γ`` exceeds the
            bound of any graph (default: ``True``).

    Shapes:
        - weights: ``(T, N, N)``; features: ``(T, N, F)``; :meth:`matrix`: ``(T, R, N)``.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]]).expand(3, 2, 2)
        >>> op = BatchedDiffusion(w, step_size=0.25)
        >>> op.apply(torch.tensor([[1.], [-1.]]).expand(3, 2, 1), num_steps=1)[0]
        tensor([[ 0.5000],
                [-0.5000]])
        >>> torch.equal(op.matrix(2)[0], op.apply(torch.eye(2).expand(3, 2, 2), 2)[0])
        True
    """

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
        degrees = weights.sum(2)
        self.laplacian = torch.diag_embed(degrees) - weights
        if check_stability:
            off_diagonal = degrees - torch.diagonal(weights, dim1=1, dim2=2)
            if weights.numel() and self.step_size * 2 * float(off_diagonal.max()) > 2.0:
                largest = float(torch.linalg.eigvalsh(self.laplacian.double())[:, -1].max())
                if largest > 0 and self.step_size > 2.0 / largest * (1 + 1e-6):
                    raise UnstableStepSizeError(
                        f"step_size={self.step_size:g} exceeds the stability bound 2/lambda_max(L) = "
                        f"{2.0 / largest:.4g} of at least one of the {weights.shape[0]} graphs; lower it"
                    )
        eye = torch.eye(weights.shape[1], dtype=weights.dtype, device=weights.device)
        self.step = eye - self.step_size * self.laplacian  # (T, N, N), A_t

    def apply(self, features: torch.Tensor, num_steps: int) -> torch.Tensor:
        """``A_t^r X_t`` for features ``(T, N, F)``: ``r`` batched products."""
        num_steps = check_positive_int(num_steps, "num_steps", minimum=0)
        if features.dim() != 3 or features.shape[:2] != self.step.shape[:2]:
            raise ValueError(
                f"features must be (T, N, F) = ({self.step.shape[0]}, {self.step.shape[1]}, F), got "
                f"{tuple(features.shape)}"
            )
        for _ in range(num_steps):
            features = torch.bmm(self.step, features)
        return features

    def matrix(self, num_steps: int, rows: Optional[slice] = None) -> torch.Tensor:
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
            f"BatchedDiffusion(T={self.step.shape[0]}, N={self.step.shape[1]}, step_size={self.step_size:g})"
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
