"""Node orders that put a graph's neighbours near each other in memory, and when one is worth using.

A diffusion step ``Y = A X`` reads, for each stored entry ``a_ij``, the row ``X_j``. When the columns of a
row lie within a window of rows that fits the caches, those reads hit them; when they lie anywhere (node
ids assigned in the order the data came in), each is a random read from memory. The **locality** of an
order is the share of stored entries within that window of their row,

$$
    \\ell = \\frac{1}{\\operatorname{nnz}(A)} \\, \\#\\{(i, j) : a_{ij} \\neq 0,\\ |i - j| \\le w\\}.
$$

Reverse Cuthill–McKee (SciPy) renumbers a graph by breadth-first levels, so that a node's neighbours get
nearby numbers. On graphs with locality to find (k-NN graphs of data, meshes, road networks) it finds it:
on a 1,048,576-node 10-NN graph of 3-D points in random order ``ℓ`` goes from 0.14 to 0.97 and a
64-column step from 0.43 s to 0.23 s (2 threads; ``benchmarks/graph.py --roofline --graph knn``). On a
graph whose edges are random it finds none (``ℓ`` 0.15 → 0.16, and a slower step), so :func:`locality_order`
keeps the given order there.

Examples:
    >>> import numpy as np, scipy.sparse as sp
    >>> path = sp.diags([1.0, 1.0], [-1, 1], shape=(6, 6), format="csr")  # a path 0-1-2-3-4-5 ...
    >>> order = np.array([3, 0, 5, 1, 4, 2])                             # ... numbered at random
    >>> shuffled = path[order][:, order].tocsr()
    >>> locality(shuffled.indptr, shuffled.indices, window=1), locality(path.indptr, path.indices, window=1)
    (0.0, 1.0)
"""

from __future__ import annotations

from typing import Optional

import numpy as np

__all__ = ["LOCALITY_MIN_NODES", "LOCALITY_WINDOW", "NODE_ORDERS", "locality", "locality_order"]

#: the node orders a diffusion operator can use: ``auto`` (RCM where it pays), ``given``, ``rcm``
NODE_ORDERS = ("auto", "given", "rcm")
#: nodes from which ``auto`` looks for a better order (below it the features fit the caches anyway:
#: 262,144 rows × 64 float32 columns = 64 MiB)
LOCALITY_MIN_NODES = 1 << 18
#: rows counted as near (32,768 rows × 64 float32 columns = 8 MiB: a share of a server's last-level cache)
LOCALITY_WINDOW = 1 << 15
#: ``auto`` takes the new order when its locality is at least this ...
_GOOD_LOCALITY = 0.5
#: ... and this much above the given order's
_GAIN = 0.25


def locality(indptr: np.ndarray, indices: np.ndarray, window: int = LOCALITY_WINDOW) -> float:
    """The share ``ℓ`` of stored entries ``(i, j)`` with ``|i − j| ≤ window`` (1.0 for an empty matrix).

    Args:
        indptr: CSR row pointers, ``(N + 1,)``.
        indices: CSR column indices, ``(nnz,)``.
        window: the rows counted as near.
    """
    if indices.size == 0:
        return 1.0
    near = 0
    chunk = 1 << 16
    for first in range(0, indptr.size - 1, chunk):  # bounded memory: a row block at a time
        last = min(first + chunk, indptr.size - 1)
        rows = np.repeat(np.arange(first, last), np.diff(indptr[first : last + 1]))
        columns = indices[indptr[first] : indptr[last]]
        near += int(np.count_nonzero(np.abs(rows - columns) <= window))
    return near / indices.size


def locality_order(matrix, method: str = "auto") -> Optional[np.ndarray]:
    """A renumbering of a square sparse matrix's nodes for locality, or ``None`` to keep the given one.

    Args:
        matrix: a SciPy CSR matrix (its sparsity pattern is used, made symmetric).
        method: ``"rcm"`` (always reverse Cuthill–McKee), ``"given"`` (never) or ``"auto"``: RCM when the
            graph has at least :data:`LOCALITY_MIN_NODES` nodes, the given order's locality is below 0.5, and
            RCM's is at least 0.5 and 0.25 above it.

    Returns:
        ``order`` with ``order[i]`` the given id of the node numbered ``i`` (a permutation), or ``None``.

    Examples:
        >>> import numpy as np, scipy.sparse as sp
        >>> path = sp.diags([1.0, 1.0], [-1, 1], shape=(6, 6), format="csr")
        >>> shuffled = path[[3, 0, 5, 1, 4, 2]][:, [3, 0, 5, 1, 4, 2]].tocsr()
        >>> order = locality_order(shuffled, "rcm")
        >>> stored = permuted(shuffled, order)
        >>> locality(stored.indptr, stored.indices, window=1)   # a path again: every entry beside its row
        1.0
        >>> locality_order(shuffled, "auto") is None            # small graphs are kept as given
        True
    """
    from scipy.sparse.csgraph import reverse_cuthill_mckee

    if method == "given":
        return None
    size = matrix.shape[0]
    given = None
    if method == "auto":
        if size < LOCALITY_MIN_NODES:
            return None
        given = locality(matrix.indptr, matrix.indices, LOCALITY_WINDOW)
        if given >= _GOOD_LOCALITY:
            return None
    order = np.asarray(reverse_cuthill_mckee(matrix, symmetric_mode=False), dtype=np.int64)
    if given is not None:
        reordered = permuted(matrix, order)
        found = locality(reordered.indptr, reordered.indices, LOCALITY_WINDOW)
        if found < _GOOD_LOCALITY or found < given + _GAIN:
            return None
    return order


def permuted(matrix, order: np.ndarray):
    """``P M Pᵀ`` for the order ``order`` (row ``i`` of the result is row ``order[i]`` of ``M``), CSR with
    sorted indices and the index type of ``M``."""
    position = np.empty_like(order)
    position[order] = np.arange(order.size, dtype=order.dtype)
    rows = matrix[order]  # rows in the new order, old column ids
    chunk = 1 << 24
    for first in range(0, rows.indices.size, chunk):  # renamed in place, a bounded block at a time
        rows.indices[first : first + chunk] = position[rows.indices[first : first + chunk]]
    rows.sort_indices()
    rows.indptr = rows.indptr.astype(matrix.indptr.dtype, copy=False)
    return rows
