r"""Graph Laplacian and the stability bound of explicit diffusion.

$$
    L = \Lambda - W, \qquad \Lambda = \mathrm{diag}(d_i), \quad d_i = \sum_j w_{ij}.
$$

Explicit Euler diffusion ``X ← (I − γL) X`` ("Diffusion Mechanism in Residual Neural Network:
Theory and Applications", Appendix A) is stable when

$$
    0 < \gamma \le \gamma_{max} = \frac{1}{\max_i \sum_{j \ne i} w_{ij}}
    \quad\text{or, for symmetric } W,\quad \gamma \le \frac{2}{\lambda_{max}(L)} .
$$

For the paper's setting (all degrees equal to ``d``, no self weight) this is Prop. 2's
``γ ≤ 1/d``. In general it is the Gershgorin condition: every row of ``I − γL`` is then
non-negative and sums to one, so each step replaces a point by a convex combination of
points — the ∞-norm (and the convex hull) never grows — and for symmetric ``W`` every
eigenvalue of ``I − γL`` lies in ``[−1, 1]``, so the 2-norm never grows. The bound is
sharp: on a bipartite regular graph (an even cycle) any ``γ > γ_max`` makes the
eigenvalue ``1 − 2γd < −1`` and the iteration diverges.
"""

from __future__ import annotations

import math

import torch

from .._checks import check_positive
from .graph import GraphLike, as_weight_matrix, is_dense, row_sums

__all__ = [
    "graph_laplacian",
    "is_symmetric",
    "largest_laplacian_eigenvalue",
    "stability_bound",
    "check_step_size",
    "UnstableStepSizeError",
]


class UnstableStepSizeError(ValueError):
    """A diffusion step size beyond the stability bound (explicit Euler would blow up).

    Raised by :func:`check_step_size` (and so by :class:`~pdenets.operators.DiffusionOperator`,
    :func:`~pdenets.operators.diffuse` and :class:`~pdenets.nn.DiffusionLayer`) when ``γ`` exceeds
    :func:`stability_bound`. A subclass of ``ValueError``.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]])      # stable for γ ≤ 1
        >>> try:
        ...     check_step_size(2.0, w)
        ... except UnstableStepSizeError as error:
        ...     print(type(error).__name__, isinstance(error, ValueError))
        UnstableStepSizeError True
    """


def graph_laplacian(weights: GraphLike, num_nodes=None, *, sparse: bool = True) -> torch.Tensor:
    """The combinatorial graph Laplacian ``L = Λ − W`` as a sparse COO tensor (default) or a dense matrix.

    ``L = Λ − W``,  ``Λ = diag(d_i)``,  ``d_i = Σ_j w_ij``,

    with ``W`` the weights and ``d_i`` the degrees.

    Args:
        weights: ``(N, N)`` weights ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)`` pair or
            scipy).
        num_nodes (int | None): number of nodes ``N`` when ``weights`` is an edge list (default: ``None``,
            inferred).
        sparse: return a coalesced sparse COO tensor; ``False`` returns a dense one (default: ``True``).

    Returns:
        ``(N, N)`` Laplacian ``L``.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., 1.], [1., 0.]])
        >>> graph_laplacian(w, sparse=False)
        tensor([[ 1., -1.],
                [-1.,  1.]])
    """
    weights = as_weight_matrix(weights, num_nodes)
    degrees = row_sums(weights)
    if is_dense(weights):
        laplacian = torch.diag(degrees) - weights
        return laplacian.to_sparse().coalesce() if sparse else laplacian
    size = weights.shape[0]
    diag = torch.arange(size, device=weights.device)
    degree_matrix = torch.sparse_coo_tensor(torch.stack([diag, diag]), degrees, weights.shape)
    laplacian = (degree_matrix - weights).coalesce()
    return laplacian if sparse else laplacian.to_dense()


def _off_diagonal_row_sums(weights: torch.Tensor) -> torch.Tensor:
    if is_dense(weights):
        return weights.sum(1) - torch.diagonal(weights)
    weights = weights.coalesce()
    row, col = weights.indices()
    values = torch.where(row == col, torch.zeros_like(weights.values()), weights.values())
    out = torch.zeros(weights.shape[0], dtype=weights.dtype, device=weights.device)
    return out.index_add_(0, row, values)


def is_symmetric(weights: torch.Tensor, rtol: float = 1e-6) -> bool:
    """Whether ``W = Wᵀ`` (up to ``rtol`` relative to the largest weight)."""
    weights = as_weight_matrix(weights)
    if is_dense(weights):
        scale = float(weights.abs().max()) if weights.numel() else 0.0
        return bool(torch.allclose(weights, weights.T, rtol=0.0, atol=rtol * max(scale, 1e-300)))
    weights = weights.coalesce()
    transposed = weights.transpose(0, 1).coalesce()
    if not torch.equal(weights.indices(), transposed.indices()):
        return False
    scale = float(weights.values().abs().max()) if weights._nnz() else 0.0
    return bool(
        torch.allclose(weights.values(), transposed.values(), rtol=0.0, atol=rtol * max(scale, 1e-300))
    )


def largest_laplacian_eigenvalue(weights: GraphLike, num_nodes=None) -> float:
    """``λ_max(L)`` for a symmetric ``W`` (dense ``eigvalsh`` up to 2,000 nodes, else Lanczos)."""
    weights = as_weight_matrix(weights, num_nodes)
    laplacian = graph_laplacian(weights).detach().cpu().double().coalesce()
    size = laplacian.shape[0]
    if size <= 2000:
        return float(torch.linalg.eigvalsh(laplacian.to_dense()).max())
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.linalg import eigsh

    row, col = laplacian.indices().numpy()
    matrix = sp.csr_matrix((laplacian.values().numpy(), (row, col)), shape=(size, size))
    start = np.random.default_rng(0).standard_normal(size)  # a fixed start vector: the same bound every time
    value = eigsh(matrix, k=1, which="LA", tol=1e-10, v0=start, return_eigenvectors=False)[0]
    return float(value) * (1 + 1e-8)  # Lanczos approaches λ_max from below


def stability_bound(weights: GraphLike, num_nodes=None, *, method: str = "gershgorin") -> float:
    r"""Largest stable explicit-Euler step size ``γ_max`` (``inf`` for a graph without edges).

    ``γ_max = 1 / max_i Σ_{j≠i} w_ij`` (Gershgorin) or ``γ_max = 2 / λ_max(L)`` (spectral),

    with ``W`` the weights and ``λ_max(L)`` the largest eigenvalue of ``L = Λ − W``: explicit
    diffusion ``X ← (I − γL) X`` does not grow for ``γ ≤ γ_max`` ("Diffusion Mechanism in Residual
    Neural Network: Theory and Applications", Prop. 2 and Appendix A).

    ``method="gershgorin"`` (default, any ``W``): ``1 / max_i Σ_{j≠i} w_ij``. Rows of
    ``I − γL`` are then convex weights: the ∞-norm never grows, nor (symmetric ``W``) the 2-norm.

    ``method="spectral"`` (symmetric ``W``): ``2 / λ_max(L)``, the exact 2-norm stability
    limit (eigenvalues ``1 − γλ`` of ``I − γL`` stay in ``[−1, 1]``); at least the Gershgorin
    bound, larger on irregular graphs with hubs.

    Args:
        weights: ``(N, N)`` non-negative weights ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy).
        num_nodes (int | None): number of nodes ``N`` when ``weights`` is an edge list (default: ``None``,
            inferred).
        method: ``"gershgorin"`` (any ``W``) or ``"spectral"`` (symmetric ``W``) (default: ``"gershgorin"``).

    Returns:
        ``γ_max`` as a float (``math.inf`` when no two distinct nodes are connected).

    Raises:
        ValueError: an unknown ``method``, or ``"spectral"`` with a non-symmetric ``W``.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., .5, .5], [.5, 0., .5], [.5, .5, 0.]])
        >>> stability_bound(w)
        1.0
        >>> round(stability_bound(w, method="spectral"), 6)    # λ_max(L) = 1.5
        1.333333
    """
    return _bound_of_checked(as_weight_matrix(weights, num_nodes), method)


def _bound_of_checked(weights: torch.Tensor, method: str = "gershgorin") -> float:
    """:func:`stability_bound` of weights :func:`~pdenets.operators.graph.as_weight_matrix` has already
    checked."""
    if method == "gershgorin":
        largest = float(_off_diagonal_row_sums(weights.detach()).max()) if weights.shape[0] else 0.0
        return math.inf if largest <= 0 else 1.0 / largest
    if method == "spectral":
        if not is_symmetric(weights):
            raise ValueError(
                "the spectral stability bound needs a symmetric weight matrix; use method='gershgorin'"
            )
        largest = largest_laplacian_eigenvalue(weights)
        return math.inf if largest <= 0 else 2.0 / largest
    raise ValueError(f"method must be 'gershgorin' or 'spectral', got {method!r}")


def check_step_size(step_size: float, weights: GraphLike, *, num_nodes=None, rtol: float = 1e-6) -> float:
    """Raise :class:`UnstableStepSizeError` if explicit diffusion with ``step_size`` can grow.

    ``γ ≤ (1 + rtol) · γ_max``, ``γ_max = 1 / max_i Σ_{j≠i} w_ij`` or, for symmetric ``W``, ``2 / λ_max(L)``,

    with ``γ`` the step size of ``X ← (I − γL) X`` and ``L = Λ − W``. Accepts ``γ`` up to the
    Gershgorin bound; for symmetric ``W`` a larger ``γ`` is accepted up to the exact spectral bound
    ``2/λ_max(L)`` (see :func:`stability_bound`). A relative tolerance ``rtol`` absorbs round-off of
    normalized weights.

    Args:
        step_size: the step size ``γ > 0``.
        weights: ``(N, N)`` non-negative weights ``W`` (dense or sparse tensor, ``(edge_index, edge_weight)``
            pair or scipy).
        num_nodes (int | None): number of nodes ``N`` when ``weights`` is an edge list (default: ``None``,
            inferred).
        rtol: relative tolerance on the bound (default: ``1e-6``).

    Returns:
        The bound that admitted ``γ`` (Gershgorin, or spectral if only that one admits it).

    Raises:
        UnstableStepSizeError: ``γ`` exceeds the bound.
        ValueError: ``γ ≤ 0`` or not finite.

    Examples:
        >>> import torch
        >>> w = torch.tensor([[0., .5, .5], [.5, 0., .5], [.5, .5, 0.]])
        >>> check_step_size(0.5, w)                  # within the Gershgorin bound 1
        1.0
        >>> round(check_step_size(1.2, w), 6)        # beyond it, within the spectral bound 2/1.5
        1.333333
    """
    return _check_step_size_of_checked(
        check_positive(step_size, "step_size"), as_weight_matrix(weights, num_nodes), rtol
    )


def _check_step_size_of_checked(step_size: float, weights: torch.Tensor, rtol: float = 1e-6) -> float:
    """:func:`check_step_size` of weights :func:`~pdenets.operators.graph.as_weight_matrix` has already
    checked (a diffusion operator checks its graph once, not once per bound)."""
    bound = _bound_of_checked(weights)
    if step_size <= bound * (1 + rtol):
        return bound
    spectral = _bound_of_checked(weights, "spectral") if is_symmetric(weights) else None
    if spectral is not None and step_size <= spectral * (1 + rtol):
        return spectral
    limit = spectral if spectral is not None else bound
    detail = (
        f"2/lambda_max(L) = {spectral:.6g}"
        if spectral is not None
        else f"1/max_i sum_(j!=i) w_ij = {bound:.6g} (W is not symmetric)"
    )
    raise UnstableStepSizeError(
        f"step_size={step_size:g} exceeds the stability bound {detail} of explicit diffusion "
        "(Diff-ResNet paper, Prop. 2): features would grow without bound. "
        f"Use step_size <= {limit:.6g} and more steps for the same total strength, normalize the "
        "weights, or pass check_stability=False if you know what you are doing."
    )
