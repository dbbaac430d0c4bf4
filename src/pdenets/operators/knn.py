"""k-nearest-neighbour search without an N×N distance matrix.

Three backends answer the same question — the ``k`` nearest points (squared Euclidean
distance) of every query:

``"brute"``
    one ``(M, N)`` distance matrix; exact; only sensible for small inputs.
``"chunked"``
    exact; queries are processed in row blocks so that at most ``chunk_size × N``
    distances exist at once (memory ``O(chunk_size · N)``, not ``O(N²)``). Runs on any
    device torch runs on.
``"faiss"``
    approximate (HNSW graph index from the optional ``faiss-cpu`` package,
    ``pip install pdenets[ann]``); memory ``O(N)``, for N in the millions.

``"auto"`` picks ``brute`` for small problems, ``chunked`` up to
:data:`APPROXIMATE_THRESHOLD` points on the CPU (:data:`APPROXIMATE_THRESHOLD_ACCELERATOR` on a GPU, whose
exact search is many times faster; either where faiss is not installed), ``faiss`` above. The exact search
costs ``O(N²)``: on one CPU core about 26 s at 50,000 points of 32 features and 100 s at 100,000, where the
HNSW index takes 13 s (``benchmarks/peers.py --part scale``); its neighbours were the exact ones for all but
one of 100,000 neighbour slots at 10,000 points.

Precision. The fast form ``‖q − p‖² = ‖q‖² − 2 q·p + ‖p‖²`` loses every digit the points
share: for a cloud at ``1000 + 0.1·noise`` in float32 the three terms are ~10⁶ and their
difference ~10⁻², below the rounding error, so the neighbours come out at random with
distance 0. The search therefore selects neighbours on centred coordinates (the mean,
accumulated in float64, is subtracted from points and queries — distances do not change),
and computes the distances it returns in the difference form ``Σ (q − p)²`` from the
original coordinates (one rounding per coordinate difference), then re-sorts. The cost is
one pass over the points and ``O(M·k·D)`` for the returned neighbours, next to the
``O(M·N·D)`` of the search (``benchmarks/knn.py``).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import torch

from .._checks import check_num_neighbors, check_points, nearest_hint

__all__ = [
    "Neighbors",
    "knn_search",
    "pairwise_sq_distances",
    "BRUTE_FORCE_MAX_ENTRIES",
    "APPROXIMATE_THRESHOLD",
    "APPROXIMATE_THRESHOLD_ACCELERATOR",
    "approximate_threshold",
    "NeighbourIndex",
    "faiss_available",
]

#: ``auto`` uses one dense distance matrix when it has at most this many entries (64 MiB in float32).
BRUTE_FORCE_MAX_ENTRIES = 1 << 24
#: ``auto`` switches to the approximate faiss backend above this many points on the CPU (if installed).
APPROXIMATE_THRESHOLD = 50_000
#: the same for points on another device (a GPU), where the exact search is fast up to millions of points.
APPROXIMATE_THRESHOLD_ACCELERATOR = 200_000
#: Memory budget in bytes for one block of the chunked search.
CHUNK_MEMORY_BYTES = 1 << 27


@dataclass
class Neighbors:
    """Result of :func:`knn_search`: the ``k`` nearest neighbours of ``M`` queries.

    Args:
        indices: ``(M, k)`` long tensor, neighbour ids sorted by increasing distance.
        sq_distances: ``(M, k)`` squared Euclidean distances, non-decreasing along rows.

    Examples:
        >>> import torch
        >>> found = Neighbors(indices=torch.tensor([[1, 2]]), sq_distances=torch.tensor([[0.5, 2.0]]))
        >>> found.n_top
        2

    Attributes:
        indices: ``(M, k)`` long tensor, neighbour ids sorted by increasing distance.
        sq_distances: ``(M, k)`` squared Euclidean distances, non-decreasing along rows.
    """

    indices: torch.Tensor
    sq_distances: torch.Tensor

    @property
    def n_top(self) -> int:
        """``k``, the neighbours per query (the library's one name for it, as in ``knn_gaussian_weights``)."""
        return int(self.indices.shape[1])

    @property
    def num_neighbors(self) -> int:
        """Deprecated name of :attr:`n_top`."""
        warnings.warn(
            "Neighbors.num_neighbors is deprecated; use Neighbors.n_top", DeprecationWarning, stacklevel=2
        )
        return self.n_top


def approximate_threshold(device: torch.device) -> int:
    """The number of points above which ``backend="auto"`` searches approximately on ``device``.

    Examples:
        >>> approximate_threshold(torch.device("cpu"))
        50000
    """
    return APPROXIMATE_THRESHOLD if device.type == "cpu" else APPROXIMATE_THRESHOLD_ACCELERATOR


def faiss_available() -> bool:
    """Whether the optional ``faiss`` package (``pip install pdenets[ann]``) can be imported.

    Returns:
        ``True`` if the ``"faiss"`` backend of :func:`knn_search` is usable.

    Examples:
        >>> isinstance(faiss_available(), bool)
        True
    """
    try:
        import faiss  # noqa: F401
    except ImportError:
        return False
    return True


def pairwise_sq_distances(queries: torch.Tensor, points: torch.Tensor) -> torch.Tensor:
    """Squared Euclidean distances between all queries and points, clamped at 0 (round-off).

    ``d_ij = ‖q_i − x_j‖² = ‖q_i‖² − 2 q_i·x_j + ‖x_j‖²``,

    with ``q_i`` the queries and ``x_j`` the points, computed in this fast (matrix product) form,
    which loses the digits the points share: centre far-from-origin data first.

    Args:
        queries: ``(M, D)`` query points ``q_i``.
        points: ``(N, D)`` points ``x_j``.

    Returns:
        ``(M, N)`` tensor of squared distances ``d_ij``.

    Examples:
        >>> import torch
        >>> pairwise_sq_distances(torch.tensor([[0., 0.]]), torch.tensor([[3., 4.], [1., 0.]]))
        tensor([[25.,  1.]])
    """
    point_norms = (points * points).sum(1)
    query_norms = (queries * queries).sum(1)
    sq = torch.addmm(point_norms[None, :], queries, points.T, alpha=-2.0)  # one fused pass
    return sq.add_(query_norms[:, None]).clamp_min_(0.0)


def centred(points: torch.Tensor, queries: torch.Tensor):
    """Points and queries minus the points' mean (accumulated in float64): same distances, fewer shared
    digits."""
    centre = points.mean(0, dtype=torch.float64).to(points.dtype)
    shifted = points - centre
    return shifted, (shifted if queries is points else queries - centre)


def exact_sq_distances(queries: torch.Tensor, points: torch.Tensor, indices: torch.Tensor):
    """``‖q_i − p_{indices[i, j]}‖²`` in the difference form (no cancellation), shape of ``indices``."""
    gathered = points.index_select(0, indices.reshape(-1)).view(*indices.shape, points.shape[1])
    return gathered.sub_(queries.unsqueeze(1)).square_().sum(-1)


def check_sq_distances(
    sq_distances: torch.Tensor, *clouds: torch.Tensor, found: Optional[torch.Tensor] = None
) -> None:
    """Refuse squared distances that overflow the dtype of finite points (``(2e20)² = inf`` in float32).

    An infinite squared distance between finite points means the coordinates are too large for
    their dtype; any kernel ``exp(−d²/σ²)`` would then be 0 whatever ``σ``, so the error says so
    instead of blaming the kernel's width.

    Args:
        sq_distances: squared distances computed from ``clouds``.
        clouds: the point clouds (points, queries) the distances come from.
        found: ``True`` where an entry is a neighbour that was found (default: ``None``, all).

    Raises:
        ValueError: an entry is infinite; the message gives the largest coordinate and the dtype.
    """
    overflow = torch.isinf(sq_distances)
    if found is not None:
        overflow &= found
    if not bool(overflow.any()):
        return
    dtype = clouds[0].dtype
    largest = max(float(cloud.detach().abs().max()) for cloud in clouds if cloud.numel())
    name = str(dtype).replace("torch.", "")
    advice = "rescale the points (e.g. standardize them)" + (
        "" if dtype == torch.float64 else " or use float64"
    )
    raise ValueError(
        f"the squared distances between points overflow {name} (coordinates reach {largest:.3g}, "
        f"{name} holds at most {torch.finfo(dtype).max:.3g}): the coordinates are too large for the "
        f"dtype; {advice}"
    )


def _sorted_rows(indices: torch.Tensor, distances: torch.Tensor):
    """Re-sort the rows whose recomputed distances are out of order (rare: near ties)."""
    unsorted = (distances[:, 1:] < distances[:, :-1]).any(1)
    if bool(unsorted.any()):
        rows = unsorted.nonzero().squeeze(1)
        values, order = torch.sort(distances[rows], dim=1, stable=True)
        distances[rows] = values
        indices[rows] = torch.gather(indices[rows], 1, order)
    return indices, distances


def _exact_search(
    points: torch.Tensor, k: int, queries: torch.Tensor, exclude_self: bool, chunk_size: Optional[int]
) -> Tuple[torch.Tensor, torch.Tensor]:
    """Select on centred coordinates; return distances from the original ones (one rounding per
    difference)."""
    centred_points, centred_queries = centred(points, queries)
    num_queries = queries.shape[0]
    if chunk_size is None:
        chunk_size = max(1, CHUNK_MEMORY_BYTES // (points.shape[0] * points.element_size() * 2))
    chunk_size = min(chunk_size, num_queries)
    all_indices, all_distances = [], []
    for start in range(0, num_queries, chunk_size):
        sq = pairwise_sq_distances(centred_queries[start : start + chunk_size], centred_points)
        if exclude_self:
            rows = torch.arange(sq.shape[0], device=sq.device)
            sq[rows, rows + start] = math.inf
        indices = torch.topk(sq, k, dim=1, largest=False, sorted=True).indices
        indices, distances = _sorted_rows(
            indices, exact_sq_distances(queries[start : start + chunk_size], points, indices)
        )
        all_indices.append(indices)
        all_distances.append(distances)
    return torch.cat(all_indices), torch.cat(all_distances)


def _hnsw_index(centred_points: torch.Tensor):
    """A faiss HNSW index of the (centred) points, in float32."""
    import faiss
    import numpy as np

    index = faiss.IndexHNSWFlat(centred_points.shape[1], 32)
    index.hnsw.efConstruction = 80
    index.add(np.ascontiguousarray(centred_points.detach().cpu().float().numpy()))
    return index


def _hnsw_search(
    index: Any,
    points: torch.Tensor,
    centred_queries: torch.Tensor,
    queries: torch.Tensor,
    k: int,
    exclude_self: bool,
) -> Tuple[torch.Tensor, torch.Tensor]:
    """The ``k`` nearest ``points`` of each query through ``index`` (built on the centred points), their
    distances recomputed from the original coordinates."""
    import numpy as np

    extra = 1 if exclude_self else 0
    index.hnsw.efSearch = max(64, 2 * (k + extra))
    query = np.ascontiguousarray(centred_queries.detach().cpu().float().numpy())
    found_distances, found_indices = index.search(query, k + extra)  # numpy arrays
    distances = torch.from_numpy(found_distances).to(points.dtype)
    indices = torch.from_numpy(found_indices).long()
    if exclude_self:
        own = torch.arange(indices.shape[0])[:, None]
        distances = distances.masked_fill(indices == own, math.inf)
    # HNSW may return -1 for missing results; push them to the end.
    distances = distances.masked_fill(indices < 0, math.inf)
    order = torch.argsort(distances, dim=1, stable=True)[:, :k]
    indices = torch.gather(indices, 1, order).to(points.device)
    exact = exact_sq_distances(
        queries, points, indices.clamp_min(0)
    )  # the index's float32 distances, recomputed
    return _sorted_rows(indices, torch.where(indices >= 0, exact, torch.full_like(exact, math.inf)))


def _faiss_search(
    points: torch.Tensor, k: int, queries: torch.Tensor, exclude_self: bool
) -> Tuple[torch.Tensor, torch.Tensor]:
    same = queries is points
    points = points.detach()
    queries = points if same else queries.detach()
    centred_points, centred_queries = centred(points, queries)
    return _hnsw_search(_hnsw_index(centred_points), points, centred_queries, queries, k, exclude_self)


class NeighbourIndex:
    """Points searched again and again, indexed once: :meth:`search` answers as
    ``knn_search(points, n_top, queries=queries)`` does (``backend="auto"``), and where that search is the
    approximate one the HNSW index is built at the first search and kept (building it costs more than
    searching it: ~150 s for 1,000,000 points of 32 features on one core, where 10,000 queries take ~10 s).

    Args:
        points: ``(N, D)`` the points to search.

    Examples:
        >>> import torch
        >>> index = NeighbourIndex(torch.tensor([[0.0], [1.0], [3.0]]))
        >>> index.search(torch.tensor([[2.9], [0.2]]), 1).indices.flatten().tolist()
        [2, 0]
    """

    def __init__(self, points: torch.Tensor):
        check_points(points, "points")
        self.points = points.detach()
        self._index: Any = None
        self._centre: Optional[torch.Tensor] = None

    def approximate(self, queries: int) -> bool:
        """Whether a search of ``queries`` rows is the approximate one (and builds or reads the index)."""
        points = self.points
        return (
            queries * points.shape[0] > BRUTE_FORCE_MAX_ENTRIES
            and points.shape[0] > approximate_threshold(points.device)
            and faiss_available()
        )

    def search(self, queries: Optional[torch.Tensor], n_top: int) -> Neighbors:
        """The ``n_top`` nearest points of each of the ``(M, D)`` ``queries`` (``None``: of each point, itself
        excluded, as ``knn_search(points, n_top)``)."""
        points = self.points
        if not self.approximate(len(points) if queries is None else queries.shape[0]):
            return knn_search(points, n_top, queries=queries)
        if queries is not None:
            check_points(queries, "queries")
            if queries.shape[1] != points.shape[1]:
                raise ValueError(
                    f"queries have dimension {queries.shape[1]} but points have dimension {points.shape[1]}"
                )
        check_num_neighbors(n_top, points.shape[0], include_self=False, name="n_top")
        if self._index is None:
            self._centre = points.mean(0, dtype=torch.float64).to(points.dtype)
            self._index = _hnsw_index(points - self._centre)
        assert self._centre is not None
        own = queries is None
        queries = points if queries is None else queries.detach()
        indices, distances = _hnsw_search(self._index, points, queries - self._centre, queries, n_top, own)
        return Neighbors(indices=indices, sq_distances=distances)


def knn_search(
    points: torch.Tensor,
    n_top: Optional[int] = None,
    *,
    queries: Optional[torch.Tensor] = None,
    include_self: bool = False,
    backend: str = "auto",
    chunk_size: Optional[int] = None,
    num_neighbors: Optional[int] = None,
) -> Neighbors:
    """Find the ``n_top`` nearest points of every query (squared Euclidean distance).

    ``indices[i] = argsort_j(‖q_i − x_j‖²)[:k]``,  ``sq_distances[i, m] = ‖q_i − x_{indices[i, m]}‖²``,

    with ``q_i`` the queries, ``x_j`` the points and ``k = n_top``; without ``queries``
    each point is its own query and is excluded unless ``include_self``. No ``N × N`` matrix
    is formed by the ``"chunked"`` and ``"faiss"`` backends.

    Args:
        points: ``(N, D)`` database points.
        n_top: ``k``, neighbours returned per query (the name :func:`knn_gaussian_weights` uses too).
        queries: ``(M, D)`` query points (default: ``None``, the points themselves, ``M = N``).
        include_self: only when ``queries`` is None. ``True`` returns the point itself as its
            first neighbour (distance 0) followed by ``k − 1`` others — the convention of the
            official Diff-ResNet code; ``False`` returns ``k`` other points (default: ``False``).
        backend: ``"brute"`` (one ``(M, N)`` distance matrix), ``"chunked"`` (exact, in row blocks),
            ``"faiss"`` (approximate HNSW index) or ``"auto"`` (chosen from the problem size)
            (default: ``"auto"``).
        chunk_size: query rows per block for ``"chunked"`` (default: ``None``, from a 128 MiB budget).
        num_neighbors: deprecated name of ``n_top`` (default: ``None``).

    Returns:
        :class:`Neighbors` with ``(M, k)`` indices and squared distances.

    Raises:
        ValueError: bad shapes, NaN/inf, ``k`` larger than the number of candidates,
            unknown backend, or coordinates so large that squared distances overflow the dtype.
        ImportError: ``backend="faiss"`` without the ``faiss`` package.

    Examples:
        >>> import torch
        >>> x = torch.tensor([[0.0], [1.0], [3.0]])
        >>> knn_search(x, 1).indices.flatten().tolist()
        [1, 0, 1]
    """
    if num_neighbors is not None:
        if n_top is not None:
            raise TypeError("give n_top, not both n_top and its deprecated name num_neighbors")
        warnings.warn(
            "knn_search(num_neighbors=...) is deprecated; use n_top=", DeprecationWarning, stacklevel=2
        )
        n_top = num_neighbors
    if n_top is None:
        raise TypeError("knn_search() needs n_top, the neighbours per query")
    check_points(points, "points")
    self_query = queries is None
    if queries is None:
        queries = points
    else:
        check_points(queries, "queries")
        if queries.shape[1] != points.shape[1]:
            raise ValueError(
                f"queries have dimension {queries.shape[1]} but points have dimension {points.shape[1]}"
            )
        if include_self:
            raise ValueError("include_self only applies when queries is None")
    check_num_neighbors(n_top, points.shape[0], include_self=self_query and include_self, name="n_top")
    exclude_self = self_query
    k = n_top - 1 if (self_query and include_self) else n_top

    if backend == "auto":
        entries = queries.shape[0] * points.shape[0]
        if entries <= BRUTE_FORCE_MAX_ENTRIES:
            backend = "brute"
        elif points.shape[0] > approximate_threshold(points.device) and faiss_available():
            backend = "faiss"
        else:
            backend = "chunked"
    if backend not in ("brute", "chunked", "faiss"):
        backends = ("auto", "brute", "chunked", "faiss")
        raise ValueError(
            f"unknown knn backend {backend!r}{nearest_hint(backend, backends)}; "
            "choose auto, brute, chunked or faiss"
        )

    if k == 0:
        indices = torch.zeros(queries.shape[0], 0, dtype=torch.long, device=points.device)
        distances = torch.zeros(queries.shape[0], 0, dtype=points.dtype, device=points.device)
    elif backend == "faiss":
        if not faiss_available():
            raise ImportError("the faiss backend needs faiss-cpu: pip install 'pdenets[ann]'")
        indices, distances = _faiss_search(points, k, queries, exclude_self)
    else:
        with torch.no_grad():
            size = queries.shape[0] if backend == "brute" else chunk_size
            indices, distances = _exact_search(points.detach(), k, queries.detach(), exclude_self, size)

    if self_query and include_self:
        own = torch.arange(points.shape[0], device=points.device)[:, None]
        indices = torch.cat([own, indices], dim=1)
        distances = torch.cat([torch.zeros_like(own, dtype=distances.dtype), distances], dim=1)
    check_sq_distances(distances, points, queries, found=indices >= 0)
    if bool(torch.isinf(distances).any()):
        warnings.warn("some queries found fewer neighbours than requested", RuntimeWarning, stacklevel=2)
    return Neighbors(indices=indices, sq_distances=distances)
