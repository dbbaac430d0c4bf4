r"""Diffusion weights from a point cloud: Gaussian kernel, top-k sparsification, normalization.

"Diffusion Mechanism in Residual Neural Network: Theory and Applications" (Diff-ResNet),
Algorithm 1:

$$
    \tilde w_{ij} = \exp\!\left(-\frac{\|x_i - x_j\|^2}{\sigma^2}\right), \qquad
    W = \mathrm{Normalize}(\mathrm{Sparse}(\tilde W, n_{top})).
$$

``Sparse`` keeps the ``n_top`` largest entries of each row, i.e. the ``n_top`` nearest
neighbours, which :func:`~pdenets.operators.knn.knn_search` finds without forming
``W̃`` (an N×N matrix). ``σ`` is fixed, or adaptive: ``σ_i`` = distance of ``x_i`` to its
k-th neighbour, ``w̃_ij = exp(−‖x_i − x_j‖² / σ_i²)``.

Conventions of the official code, available as options:

* few-shot: self counts as a neighbour (``include_self=True``; its ``n_top = 8`` keeps 7
  entries including self, i.e. ``n_top=7`` here), adaptive ``σ`` = 4th entry of that
  list (``sigma_neighbor=4``), symmetric normalization, then ``(W + Wᵀ)/2``;
* synthetic: self counts (``include_self=True``, ``n_top`` entries including self), fixed
  ``σ``, row normalization (every degree equals 1, the setting of Prop. 2).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence, Union

import torch

from .._checks import check_choice, check_floating, check_points, check_positive, check_positive_int
from .graph import row_normalize, symmetric_normalize, symmetrize
from .knn import NeighbourIndex, check_sq_distances, knn_search

__all__ = [
    "gaussian_kernel",
    "knn_gaussian_weights",
    "batched_knn_gaussian_weights",
    "KnnGaussianWeights",
    "NORMALIZATIONS",
]

NORMALIZATIONS = ("symmetric", "row", "none")


#: what a zero adaptive width means: an error, or the kernel's limit σ → 0 (weight 1 at distance 0, else 0)
COINCIDENT = ("raise", "link")


def gaussian_kernel(
    sq_distances: torch.Tensor, sigma: Union[float, torch.Tensor], *, coincident: str = "raise"
) -> torch.Tensor:
    r"""The Gaussian kernel ``exp(−d² / σ²)``, elementwise.

    ``k(d²) = exp(−d² / σ²)``,

    with ``d²`` a squared distance and ``σ`` the bandwidth ("Diffusion Mechanism in Residual Neural
    Network: Theory and Applications", Algorithm 1).

    Args:
        sq_distances: squared distances ``d²``, any shape.
        sigma: a positive float, or a tensor broadcastable to ``sq_distances`` (e.g. a
            ``(N, 1)`` column of per-row bandwidths ``σ_i``).
        coincident: a zero entry of a ``sigma`` tensor (a point whose width-setting neighbour coincides with
            it): ``"raise"`` (default) or ``"link"``, the kernel's limit ``σ → 0⁺``: weight 1 at distance 0,
            0 elsewhere — the point is linked to its copies only.

    Returns:
        ``exp(−d² / σ²)``, shape of ``sq_distances`` (broadcast with ``sigma``).

    Raises:
        ValueError: ``sigma`` is not positive (for a tensor: some entry is zero, e.g. duplicate points, unless
            ``coincident="link"``).

    Examples:
        >>> import torch
        >>> gaussian_kernel(torch.tensor([0., 1., 4.]), 2.0).round(decimals=4)
        tensor([1.0000, 0.7788, 0.3679])
    """
    check_floating(sq_distances, "sq_distances")
    check_choice(coincident, "coincident", COINCIDENT)
    if isinstance(sigma, torch.Tensor):
        zero = sigma <= 0
        if bool(zero.any()):
            if coincident == "raise" or bool((sigma < 0).any()):
                raise ValueError(
                    "adaptive sigma is zero for some points (duplicate points?); "
                    "use a larger sigma_neighbor or a fixed sigma"
                )
            limit = (sq_distances == 0).to(sq_distances.dtype)  # σ → 0⁺: 1 at distance 0, else 0
            return torch.where(zero, limit, torch.exp(-sq_distances / torch.where(zero, 1.0, sigma).pow(2)))
        return torch.exp(-sq_distances / sigma.pow(2))
    sigma = check_positive(sigma, "sigma")
    return torch.exp(-sq_distances / sigma**2)


def knn_gaussian_weights(
    points: torch.Tensor,
    n_top: int,
    *,
    sigma: Optional[float] = None,
    sigma_neighbor: Optional[int] = None,
    include_self: bool = False,
    normalization: str = "symmetric",
    symmetrize_weights: bool = False,
    backend: str = "auto",
    coincident: str = "raise",
    index: Optional[NeighbourIndex] = None,
) -> torch.Tensor:
    r"""Sparse Gaussian-kernel weights on the ``n_top``-nearest-neighbour graph.

    ``w_ij = exp(−‖x_i − x_j‖² / σ_i²)`` for the ``n_top`` nearest neighbours ``x_j`` of ``x_i``,
    else ``0``;  ``W ← Normalize(W)``,

    with ``x_i`` the points, ``σ_i = σ`` fixed or the distance of ``x_i`` to its ``sigma_neighbor``-th
    neighbour (adaptive), and ``Normalize`` symmetric (``D^{-1/2} W D^{-1/2}``), row (``D^{-1} W``) or
    none, ``D`` the degrees ("Diffusion Mechanism in Residual Neural Network: Theory and
    Applications", Algorithm 1).

    Args:
        points: ``(N, D)`` points ``x_i`` (detached: the weights are constants).
        n_top: entries ``n_top`` kept per row (neighbours, including self if ``include_self``).
        sigma: fixed bandwidth ``σ > 0``; give exactly one of ``sigma`` and ``sigma_neighbor``
            (default: ``None``).
        sigma_neighbor: adaptive bandwidth: ``σ_i`` = distance of ``x_i`` to the ``sigma_neighbor``-th
            entry of its neighbour list (self is entry 1 when ``include_self``) (default: ``None``).
        include_self: count the point itself among its ``n_top`` neighbours (default: ``False``).
        normalization: ``"symmetric"`` (``D^{-1/2} W D^{-1/2}``), ``"row"`` (``D^{-1} W``)
            or ``"none"`` (default: ``"symmetric"``).
        symmetrize_weights: return ``(W + Wᵀ)/2`` after normalizing, as the official few-shot code
            does (default: ``False``).
        backend: neighbour search backend of :func:`~pdenets.operators.knn.knn_search`
            (default: ``"auto"``).
        coincident: a point whose adaptive width is zero (copies of it fill its list up to the
            ``sigma_neighbor``-th entry): ``"raise"`` (default) or ``"link"`` it to its copies only, weight
            1 (:func:`gaussian_kernel`'s limit ``σ → 0⁺``).
        index: a :class:`~pdenets.operators.knn.NeighbourIndex` of ``points`` to search instead (kept by the
            caller for later searches; ``backend`` is then the index's, ``include_self`` must be ``False``)
            (default: ``None``).

    Returns:
        ``(N, N)`` coalesced sparse COO tensor with at most ``N · n_top`` (twice that if
        symmetrized) stored entries.

    Raises:
        ValueError: both or neither of ``sigma`` and ``sigma_neighbor``, ``n_top`` larger than the
            number of candidates, an unknown ``normalization``, or a bandwidth that leaves the graph
            without edges.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> x = torch.randn(100, 2, dtype=torch.float64)
        >>> w = knn_gaussian_weights(x, 10, sigma=0.5, include_self=True, normalization="row")
        >>> torch.allclose(torch.sparse.sum(w, 1).to_dense(), torch.ones(100, dtype=torch.float64))
        True
    """
    check_points(points, "points")
    if (sigma is None) == (sigma_neighbor is None):
        raise ValueError("give exactly one of sigma (fixed bandwidth) or sigma_neighbor (adaptive)")
    check_choice(normalization, "normalization", NORMALIZATIONS)
    n_top = check_positive_int(n_top, "n_top")
    num_points = points.shape[0]
    search_k = n_top
    if sigma_neighbor is not None:
        sigma_neighbor = check_positive_int(sigma_neighbor, "sigma_neighbor")
        search_k = max(n_top, sigma_neighbor)
    points = points.detach()
    if index is not None:
        if include_self or index.points.shape != points.shape:
            raise ValueError("an index searches its own points, without themselves: give include_self=False")
        neighbors = index.search(None, search_k)
    else:
        neighbors = knn_search(points, search_k, include_self=include_self, backend=backend)
    sq = neighbors.sq_distances
    if sigma_neighbor is not None:
        bandwidth = sq[:, sigma_neighbor - 1 : sigma_neighbor].sqrt()
        values = gaussian_kernel(sq[:, :n_top], bandwidth, coincident=coincident)
    else:
        assert sigma is not None  # exactly one of sigma and sigma_neighbor was given
        values = gaussian_kernel(sq[:, :n_top], sigma)
    _check_not_empty(values, neighbors.indices[:, :n_top], sq[:, :n_top], sigma)
    rows = torch.arange(num_points, device=points.device).repeat_interleave(n_top)
    cols = neighbors.indices[:, :n_top].reshape(-1)
    weights = torch.sparse_coo_tensor(
        torch.stack([rows, cols]), values.reshape(-1), (num_points, num_points)
    ).coalesce()
    if normalization == "symmetric":
        weights = symmetric_normalize(weights)
    elif normalization == "row":
        weights = row_normalize(weights)
    if symmetrize_weights:
        weights = symmetrize(weights)
    return weights


def batched_knn_gaussian_weights(
    points: torch.Tensor,
    n_top: Union[int, Sequence[int], torch.Tensor],
    *,
    sigma: Optional[float] = None,
    sigma_neighbor: Optional[Union[int, Sequence[int], torch.Tensor]] = None,
    include_self: bool = False,
    normalization: str = "symmetric",
    symmetrize_weights: bool = False,
    coincident: str = "raise",
) -> torch.Tensor:
    r""":func:`knn_gaussian_weights` for a batch of small point clouds at once, as dense ``(T, N, N)``
    matrices.

    Few-shot episodes hold tens to a few hundred points each; one dense batched computation
    for many episodes beats a sparse graph per episode. Same options, same weights as
    :func:`knn_gaussian_weights` applied to each cloud ``t``:

    ``w_tij = exp(−‖x_ti − x_tj‖² / σ_ti²)`` for the ``n_top`` nearest neighbours ``x_tj`` of ``x_ti``,
    else ``0``;  ``W_t ← Normalize(W_t)``,

    with ``x_ti`` the points of cloud ``t``, ``σ_ti = σ`` fixed or the distance of ``x_ti`` to its
    ``sigma_neighbor``-th neighbour (adaptive), and ``Normalize`` symmetric (``D^{-1/2} W D^{-1/2}``),
    row (``D^{-1} W``) or none, ``D`` the degrees ("Diffusion Mechanism in Residual Neural Network:
    Theory and Applications", Algorithm 1). The neighbours are ranked by distances from one matrix
    product per cloud, on coordinates centred on the cloud's mean; the distances that enter the
    weights are recomputed in the difference form.

    Args:
        points: ``(T, N, D)`` point clouds, ``T`` clouds of ``N`` points (detached).
        n_top: entries ``n_top`` kept per row (neighbours, including self if ``include_self``): one count for
            every cloud, or one per cloud (a sequence or tensor of ``T`` counts).
        sigma: fixed bandwidth ``σ > 0``; give exactly one of ``sigma`` and ``sigma_neighbor``
            (default: ``None``).
        sigma_neighbor: adaptive bandwidth: ``σ_i`` = distance of ``x_i`` to the ``sigma_neighbor``-th
            entry of its neighbour list (self is entry 1 when ``include_self``), one for every cloud or one
            per cloud (default: ``None``).
        include_self: count the point itself among its ``n_top`` neighbours (default: ``False``).
        normalization: ``"symmetric"`` (``D^{-1/2} W D^{-1/2}``), ``"row"`` (``D^{-1} W``)
            or ``"none"`` (default: ``"symmetric"``).
        symmetrize_weights: return ``(W + Wᵀ)/2`` after normalizing, as the official few-shot code
            does (default: ``False``).
        coincident: a point whose adaptive width is zero (copies of it fill its list up to the
            ``sigma_neighbor``-th entry): ``"raise"`` (default) or ``"link"`` it to its copies only, weight
            1 (:func:`gaussian_kernel`'s limit ``σ → 0⁺``; user data such as embedded sentences hold
            duplicates).

    Returns:
        ``(T, N, N)`` dense weights, one matrix per cloud.

    Raises:
        ValueError: ``points`` not of shape ``(T, N, D)``, both or neither of ``sigma`` and
            ``sigma_neighbor``, more neighbours than a cloud has, or an unknown ``normalization``.

    Shapes:
        - points: ``(T, N, D)``
        - output: ``(T, N, N)``

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> clouds = torch.randn(3, 20, 4, dtype=torch.float64)
        >>> batched = batched_knn_gaussian_weights(clouds, 5, sigma_neighbor=3, include_self=True)
        >>> single = knn_gaussian_weights(clouds[1], 5, sigma_neighbor=3, include_self=True).to_dense()
        >>> torch.allclose(batched[1], single)
        True
        >>> mixed = batched_knn_gaussian_weights(
        ...     clouds, [5, 3, 5], sigma_neighbor=[3, 2, 3], include_self=True
        ... )
        >>> single = knn_gaussian_weights(clouds[1], 3, sigma_neighbor=2, include_self=True)
        >>> torch.allclose(mixed[1], single.to_dense())
        True
    """
    if not isinstance(points, torch.Tensor) or points.dim() != 3:
        raise ValueError(
            f"points must be a (T, N, D) tensor, got {getattr(points, 'shape', type(points).__name__)}"
        )
    check_points(points.reshape(-1, points.shape[-1]) if points.numel() else points.reshape(0, 1), "points")
    if (sigma is None) == (sigma_neighbor is None):
        raise ValueError("give exactly one of sigma (fixed bandwidth) or sigma_neighbor (adaptive)")
    check_choice(normalization, "normalization", NORMALIZATIONS)
    tasks, num_points, _ = points.shape
    counts = _per_cloud(n_top, "n_top", tasks, points.device)
    widths = (
        None if sigma_neighbor is None else _per_cloud(sigma_neighbor, "sigma_neighbor", tasks, points.device)
    )
    search_k = int(counts.max()) if widths is None else int(torch.maximum(counts, widths).max())
    available = num_points if include_self else num_points - 1
    if search_k > available:
        raise ValueError(
            f"n_top/sigma_neighbor={search_k} neighbours requested but each cloud has only {available} "
            f"{'points' if include_self else 'other points'} (N={num_points})"
        )
    points = points.detach()
    centred = points - points.mean(1, keepdim=True)
    norms = centred.square().sum(2)
    sq = torch.baddbmm(norms[:, None, :] + norms[:, :, None], centred, centred.transpose(1, 2), alpha=-2.0)
    diagonal = torch.arange(num_points, device=points.device)
    sq[:, diagonal, diagonal] = -1.0 if include_self else math.inf  # self first, or never
    order = torch.topk(sq, search_k, dim=2, largest=False, sorted=True).indices
    # the selected distances in the difference form (no cancellation), rows re-sorted where round-off swapped
    # a pair (a stable sort: self, ranked first, stays first among points at distance 0)
    offsets = num_points * torch.arange(tasks, device=points.device)[:, None, None]
    flat = points.reshape(tasks * num_points, -1)
    neighbours = flat.index_select(0, (order + offsets).reshape(-1)).view(tasks, num_points, search_k, -1)
    sorted_sq, resort = torch.sort(
        neighbours.sub_(points[:, :, None, :]).square_().sum(3), dim=2, stable=True
    )
    order = torch.gather(order, 2, resort)
    check_sq_distances(sorted_sq, points)
    keep = torch.arange(search_k, device=points.device)[None, None, :] < counts[:, None, None]  # (T, 1, k)
    if widths is not None:
        bandwidth = torch.gather(sorted_sq, 2, (widths - 1)[:, None, None].expand(-1, num_points, 1)).sqrt()
        values = gaussian_kernel(sorted_sq, bandwidth, coincident=coincident)
    else:
        assert sigma is not None  # exactly one of sigma and sigma_neighbor was given
        values = gaussian_kernel(sorted_sq, sigma)
    values = values * keep
    flat_values, flat_sq = values.reshape(-1, search_k), sorted_sq.reshape(-1, search_k)
    flat_keep = keep.expand(-1, num_points, -1).reshape(-1, search_k)
    flat_order = (order + offsets).reshape(-1, search_k)
    _check_not_empty(
        flat_values,
        torch.where(flat_keep, flat_order, torch.arange(flat_order.shape[0], device=points.device)[:, None]),
        flat_sq,
        sigma,
    )
    weights = torch.zeros(tasks, num_points, num_points, dtype=points.dtype, device=points.device)
    weights.scatter_add_(2, order, values)
    if normalization != "none":
        degrees = weights.sum(2)
        if normalization == "symmetric":
            inverse = torch.where(degrees > 0, degrees.rsqrt(), torch.zeros_like(degrees))
            weights = inverse[:, :, None] * weights * inverse[:, None, :]
        else:
            inverse = torch.where(degrees > 0, 1.0 / degrees, torch.zeros_like(degrees))
            weights = inverse[:, :, None] * weights
    if symmetrize_weights:
        weights = (weights + weights.transpose(1, 2)) / 2
    return weights


def _per_cloud(value, name: str, tasks: int, device) -> torch.Tensor:
    """One positive count per cloud ``(T,)`` from an int or a sequence/tensor of ``T`` ints."""
    if isinstance(value, torch.Tensor) and value.dim() == 1 or isinstance(value, (list, tuple)):
        counts = [check_positive_int(int(v) if isinstance(v, torch.Tensor) else v, name) for v in value]
        if len(counts) != tasks:
            raise ValueError(f"{name} gives {len(counts)} counts for {tasks} clouds")
        return torch.tensor(counts, device=device)
    return torch.full((tasks,), check_positive_int(value, name), device=device)


def _check_not_empty(values: torch.Tensor, indices: torch.Tensor, sq: torch.Tensor, sigma) -> None:
    """Refuse a kernel width under which every weight between distinct points is 0; warn if some points are
    cut off."""
    others = indices != torch.arange(indices.shape[0], device=indices.device)[:, None]
    if not bool(others.any()):
        return  # only self entries were asked for (n_top = 1 with include_self)
    connected = ((values > 0) & others).any(1)
    if bool(connected.all()):
        return
    distances = sq[others].sqrt()
    width = f"sigma={sigma:g}" if sigma is not None else "the adaptive sigma"
    if not bool(connected.any()):
        raise ValueError(
            f"{width} is so small that every weight exp(-d^2/sigma^2) between distinct points underflows to "
            f"0 (neighbour distances {float(distances.min()):.3g} to {float(distances.max()):.3g}): the "
            "graph has no edges and diffusion would do nothing. Use sigma near the neighbour distances "
            f"(e.g. {float(distances.median()):.3g}) or an adaptive width (sigma_neighbor=...)"
        )
    warnings.warn(
        f"{int((~connected).sum())} of {connected.numel()} points have no neighbour with a non-zero weight "
        f"under {width}: they are cut off from the graph and diffusion leaves them unchanged",
        RuntimeWarning,
        stacklevel=3,
    )


@dataclass
class KnnGaussianWeights:
    """A weight builder: call it on a batch of points to get that batch's sparse ``W``.

    Holds the options of :func:`knn_gaussian_weights`. Pass one to
    :class:`~pdenets.nn.DiffusionLayer` (``weights=KnnGaussianWeights(...)``) to build the
    graph from each mini-batch ("Diffusion Mechanism in Residual Neural Network: Theory and
    Applications", Remark 1). Calling it on ``(N, D)`` points (or ``(N, ...)``, flattened) returns
    the ``(N, N)`` sparse weights of :func:`knn_gaussian_weights`:

    ``w_ij = exp(−‖x_i − x_j‖² / σ_i²)`` for the ``n_top`` nearest neighbours ``x_j`` of ``x_i``,
    else ``0``;  ``W ← Normalize(W)``,

    with ``x_i`` the points, ``σ_i = σ`` fixed or the distance of ``x_i`` to its ``sigma_neighbor``-th
    neighbour (adaptive), and ``Normalize`` symmetric (``D^{-1/2} W D^{-1/2}``), row (``D^{-1} W``) or
    none, ``D`` the degrees ("Diffusion Mechanism in Residual Neural Network: Theory and
    Applications", Algorithm 1).

    Args:
        n_top: entries ``n_top`` kept per row (neighbours, including self if ``include_self``).
        sigma: fixed bandwidth ``σ > 0``; give exactly one of ``sigma`` and ``sigma_neighbor``
            (default: ``None``).
        sigma_neighbor: adaptive bandwidth: ``σ_i`` = distance of ``x_i`` to the ``sigma_neighbor``-th
            entry of its neighbour list (self is entry 1 when ``include_self``) (default: ``None``).
        include_self: count the point itself among its ``n_top`` neighbours (default: ``False``).
        normalization: ``"symmetric"`` (``D^{-1/2} W D^{-1/2}``), ``"row"`` (``D^{-1} W``)
            or ``"none"`` (default: ``"symmetric"``).
        symmetrize_weights: return ``(W + Wᵀ)/2`` after normalizing, as the official few-shot code
            does (default: ``False``).
        backend: neighbour search backend of :func:`~pdenets.operators.knn.knn_search`
            (default: ``"auto"``).

    Raises:
        ValueError: both or neither of ``sigma`` and ``sigma_neighbor``, a non-positive value or an
            unknown ``normalization``.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> build = KnnGaussianWeights(n_top=5, sigma=1.0)
        >>> build(torch.randn(20, 3)).shape
        torch.Size([20, 20])
    """

    n_top: int
    sigma: Optional[float] = None
    sigma_neighbor: Optional[int] = None
    include_self: bool = False
    normalization: str = "symmetric"
    symmetrize_weights: bool = False
    backend: str = "auto"

    def __post_init__(self) -> None:
        if (self.sigma is None) == (self.sigma_neighbor is None):
            raise ValueError("give exactly one of sigma (fixed bandwidth) or sigma_neighbor (adaptive)")
        self.n_top = check_positive_int(self.n_top, "n_top")
        if self.sigma is not None:
            self.sigma = check_positive(self.sigma, "sigma")
        else:
            self.sigma_neighbor = check_positive_int(self.sigma_neighbor, "sigma_neighbor")
        check_choice(self.normalization, "normalization", NORMALIZATIONS)

    def __call__(self, points: torch.Tensor) -> torch.Tensor:
        return knn_gaussian_weights(
            points.flatten(1) if points.dim() > 2 else points,
            self.n_top,
            sigma=self.sigma,
            sigma_neighbor=self.sigma_neighbor,
            include_self=self.include_self,
            normalization=self.normalization,
            symmetrize_weights=self.symmetrize_weights,
            backend=self.backend,
        )
