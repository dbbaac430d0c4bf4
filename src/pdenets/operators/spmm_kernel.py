"""A compiled CSR × dense product for large graphs on the CPU (optional: needs ``numba``).

``Y = M X`` row by row: each output row is the weighted sum of the rows of ``X`` its stored entries
point at, accumulated in registers and written once,

$$
    Y_{i,:} = \\sum_{k = p_i}^{p_{i+1} - 1} v_k \\, X_{j_k,:},
$$

with ``p`` the row pointers, ``j`` the column indices and ``v`` the values of ``M``. The rows are split
over the threads torch is allowed (``torch.get_num_threads()``). On a graph whose rows point anywhere
(a random or web graph) the product is a gather of ``nnz`` rows of ``X`` from memory; this kernel
does nothing else, where torch's CSR kernel and SciPy's ``csr_matvecs`` spend 2.6× and 8× its time
(1,048,576-node block graph, 22 M entries, 64 float32 columns, ``benchmarks/graph.py --roofline``).
The output is the only memory it allocates.

Memory: a 20,000,000-node epoch (r = 20) peaked at 23.2 GiB with this kernel against 18.5 GiB with SciPy's
(1,019 s against 1,877 s); ``PDENETS_COMPILED_SPMM=0`` turns the kernel off where the memory matters more than
the time.

Without ``numba`` (or with ``PDENETS_COMPILED_SPMM=0``) :func:`available` is ``False`` and
:class:`~pdenets.operators.sparse.SparseMatrix` keeps its torch/SciPy products; the numbers are the same to
rounding (the compiler may vectorize a row's sum; a given row is summed alike on any number of threads).

Examples:
    >>> import numpy as np
    >>> if available():
    ...     out = csr_product(np.array([0, 1, 2], dtype=np.int32), np.array([1, 0], dtype=np.int32),
    ...                       np.array([2.0, 3.0], dtype=np.float32), np.eye(2, dtype=np.float32))
    ... else:
    ...     out = np.array([[0.0, 2.0], [3.0, 0.0]], dtype=np.float32)
    >>> out
    array([[0., 2.],
           [3., 0.]], dtype=float32)
"""

from __future__ import annotations

import functools
from types import ModuleType
from typing import Callable, Optional

import numpy as np

from .._checks import environment_flag

__all__ = ["available", "csr_product"]


def _numba() -> Optional[ModuleType]:
    try:
        import numba
    except ImportError:
        return None
    return numba


@functools.lru_cache(maxsize=None)
def _kernel(width: int) -> Callable:
    """The kernel for operands of ``width`` columns (a compile-time constant: the sums stay in registers)."""
    numba = _numba()
    assert numba is not None  # the caller checked available()

    @numba.njit(parallel=True, fastmath=True, boundscheck=False, nogil=True, cache=False)
    def product(  # pragma: no cover - compiled
        indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, dense: np.ndarray, out: np.ndarray
    ) -> None:
        for row in numba.prange(out.shape[0]):
            sums = np.zeros(width, dtype=out.dtype)
            for entry in range(indptr[row], indptr[row + 1]):
                weight = values[entry]
                source = indices[entry]
                for column in range(width):
                    sums[column] += weight * dense[source, column]
            for column in range(width):
                out[row, column] = sums[column]

    return product


def available() -> bool:
    """Whether the compiled product can run here: ``numba`` importable and ``$PDENETS_COMPILED_SPMM`` not
    off (``0``, ``false``, ``off`` or ``no``, any case; another word is refused naming the variable)."""
    return environment_flag("PDENETS_COMPILED_SPMM", True) and _numba() is not None


def csr_product(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    dense: np.ndarray,
    threads: Optional[int] = None,
) -> np.ndarray:
    """``M @ dense`` for ``M`` given by its CSR arrays; a new C-contiguous array of ``dense``'s dtype.

    Args:
        indptr: row pointers ``p``, shape ``(n + 1,)`` (int32 or int64).
        indices: column indices ``j``, shape ``(nnz,)``, each in ``[0, dense.shape[0])`` (not checked:
            the caller's matrix is a checked CSR).
        values: the entries ``v``, shape ``(nnz,)``, of ``dense``'s dtype.
        dense: ``X``, C-contiguous ``(m, C)`` float32 or float64.
        threads: threads to split the rows over (default: ``torch.get_num_threads()``).

    Returns:
        ``Y = M X`` of shape ``(n, C)``.

    Raises:
        RuntimeError: ``numba`` is not installed (check :func:`available` first).
    """
    if not available():
        raise RuntimeError("the compiled CSR product needs numba: pip install numba (or pdenets[fast])")
    import torch

    numba = _numba()
    assert numba is not None  # available() said so

    wanted = threads if threads is not None else torch.get_num_threads()
    numba.set_num_threads(max(1, min(int(wanted), numba.config.NUMBA_NUM_THREADS)))
    out = np.empty((indptr.shape[0] - 1, dense.shape[1]), dtype=dense.dtype)
    product = _kernel(int(dense.shape[1]))
    product(indptr, indices, values.astype(dense.dtype, copy=False), np.ascontiguousarray(dense), out)
    return out
