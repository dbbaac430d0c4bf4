r"""Graph Laplacian and the stability bound of explicit diffusion.

.. math::

    L = \Lambda - W, \qquad \Lambda = \mathrm{diag}(d_i), \quad d_i = \sum_j w_{ij}.

Explicit Euler diffusion ``X ← (I − γL) X`` (paper 000, Appendix A) is stable when

.. math::

    0 < \gamma \le \gamma_{max} = \frac{1}{\max_i \sum_{j \ne i} w_{ij}} .

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
    "stability_bound",
    "check_step_size",
    "UnstableStepSizeError",
]


class UnstableStepSizeError(ValueError):
    """A diffusion step size beyond the stability bound (explicit Euler would blow up)."""


def graph_laplacian(weights: GraphLike, num_nodes=None, *, sparse: bool = True) -> torch.Tensor:
    """``L = Λ − W`` as a sparse COO tensor (default) or a dense matrix.

    Example:
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


def stability_bound(weights: GraphLike, num_nodes=None) -> float:
    r"""Largest stable explicit-Euler step ``γ_max = 1 / max_i Σ_{j≠i} w_ij`` (inf for no edges).

    Example:
        >>> import torch
        >>> w = torch.tensor([[0., .5, .5], [.5, 0., .5], [.5, .5, 0.]])
        >>> stability_bound(w)
        1.0
    """
    weights = as_weight_matrix(weights, num_nodes)
    largest = float(_off_diagonal_row_sums(weights).max()) if weights.shape[0] else 0.0
    return math.inf if largest <= 0 else 1.0 / largest


def check_step_size(step_size: float, weights: GraphLike, *, num_nodes=None, rtol: float = 1e-6) -> float:
    """Raise :class:`UnstableStepSizeError` if ``step_size`` exceeds :func:`stability_bound`.

    Returns the bound. A relative tolerance ``rtol`` absorbs round-off of normalized weights.
    """
    step_size = check_positive(step_size, "step_size")
    bound = stability_bound(weights, num_nodes)
    if step_size > bound * (1 + rtol):
        raise UnstableStepSizeError(
            f"step_size={step_size:g} exceeds the stability bound {bound:.6g} = 1/max_i sum_(j!=i) w_ij "
            "of explicit diffusion (paper 000, Prop. 2): features would grow without bound. "
            f"Use step_size <= {bound:.6g} and more steps for the same total strength, normalize the "
            "weights, or pass check_stability=False if you know what you are doing."
        )
    return bound
