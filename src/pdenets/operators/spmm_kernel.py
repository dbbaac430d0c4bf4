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
Memory: the output is the only array a product allocates (none where the caller gives one to write
into: a spare buffer of an earlier step, so that a run of steps faults no fresh pages in), and kernels are
compiled on a thread of their own (numba's compiler leaves a reference cycle holding the frames it ran
under; compiled inside an epoch, that kept a 4.7 GiB activation of a 20,000,000-node epoch alive).
``PDENETS_COMPILED_SPMM=0`` turns the kernel off.

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

import ctypes
import functools
import sys
import threading
from types import ModuleType
from typing import Callable, Optional, Set, Tuple

import numpy as np

from .._checks import environment_flag

__all__ = ["available", "csr_product", "masked_csr_product", "numba_module"]


def numba_module() -> Optional[ModuleType]:
    """``numba``, or ``None`` where it is not installed."""
    try:
        import numba
    except ImportError:
        return None
    return numba


@functools.lru_cache(maxsize=None)
def _kernel(width: int) -> Callable:
    """The kernel for operands of ``width`` columns (a compile-time constant: the sums stay in registers)."""
    numba = numba_module()
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


@functools.lru_cache(maxsize=None)
def _masked_kernel(width: int) -> Callable:
    """The kernel of :func:`masked_csr_product` for operands of ``width`` columns."""
    numba = numba_module()
    assert numba is not None  # the caller checked available()
    from .pcg64 import stepper

    uint64 = numba.uint64
    step = stepper()

    @numba.njit(parallel=True, fastmath=True, boundscheck=False, nogil=True, cache=False)
    def product(  # pragma: no cover - compiled
        indptr: np.ndarray,
        indices: np.ndarray,
        values: np.ndarray,
        dense: np.ndarray,
        out: np.ndarray,
        row_bounds: np.ndarray,
        states: np.ndarray,
        skips: np.ndarray,
        itemsize: int,
        threshold: int,
        scale: float,
    ) -> None:
        units = 8 // itemsize
        bits = uint64(8 * itemsize)
        mask = (uint64(1) << bits) - uint64(1)
        limit = uint64(threshold)
        zero = scale - scale
        for part in numba.prange(row_bounds.shape[0] - 1):
            high, low = states[part, 0], states[part, 1]
            increment_high, increment_low = states[part, 2], states[part, 3]
            high, low, word = step(high, low, increment_high, increment_low)
            position = skips[part]  # the unit of the current word the next entry reads
            sums = np.empty(width, dtype=out.dtype)  # once per run of rows (a heap array: not per row)
            for row in range(row_bounds[part], row_bounds[part + 1]):
                for column in range(width):
                    sums[column] = 0
                for entry in range(indptr[row], indptr[row + 1]):
                    weight = values[entry]
                    source = indices[entry]
                    for column in range(width):
                        sums[column] += weight * dense[source, column]
                for column in range(width):
                    if position == units:
                        high, low, word = step(high, low, increment_high, increment_low)
                        position = 0
                    drawn = (word >> (uint64(position) * bits)) & mask
                    position += 1
                    out[row, column] = sums[column] * (scale if drawn < limit else zero)

    return product


def compile_apart(kernel: Callable, *arguments) -> None:
    """Call ``kernel(*arguments)`` (tiny arrays of the real types) on a thread of its own, to compile it.

    numba's compiler leaves a reference cycle that holds the Python frames it ran under, and through
    them every local of their callers until the cyclic collector runs. Compiled on first use inside a
    training epoch, that kept the network's diffusion input (one ``N × C`` activation, 4.7 GiB at 20 M
    nodes) alive to the end of the backward pass. A fresh thread's frames hold nothing.
    """
    thread = threading.Thread(target=kernel, args=arguments)
    thread.start()
    thread.join()


def _warm(product: Callable, indptr: np.ndarray, indices: np.ndarray, dense: np.ndarray) -> None:
    """Compile ``product`` for these operands' types (:func:`compile_apart`)."""
    width = dense.shape[1]
    compile_apart(
        product,
        np.zeros(2, dtype=indptr.dtype),
        np.zeros(0, dtype=indices.dtype),
        np.zeros(0, dtype=dense.dtype),
        np.zeros((1, width), dtype=dense.dtype),
        np.zeros((1, width), dtype=dense.dtype),
    )


_WARMED: Set[Tuple[int, str, str, str]] = set()


def advise_huge_pages(array: np.ndarray) -> None:
    """Ask the kernel for 2 MiB pages under a large fresh array (``madvise(MADV_HUGEPAGE)``; Linux).

    A product gathers rows of its operand at random; with 4 KiB pages nearly every gathered row is also a
    TLB miss. Only arrays this module allocates are advised, before they are first written. Where the
    call is not available or refused, nothing changes.
    """
    if array.nbytes < _HUGE_PAGE_MIN_BYTES or _MADVISE is None:
        return
    start = array.ctypes.data
    aligned = (start + _HUGE_PAGE - 1) // _HUGE_PAGE * _HUGE_PAGE
    end = (start + array.nbytes) // _HUGE_PAGE * _HUGE_PAGE
    if end > aligned:
        _MADVISE(ctypes.c_void_p(aligned), ctypes.c_size_t(end - aligned), _MADV_HUGEPAGE)


def _libc_madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    function.restype = ctypes.c_int
    return function


_HUGE_PAGE = 1 << 21
_HUGE_PAGE_MIN_BYTES = 1 << 26
_MADV_HUGEPAGE = 14
_MADVISE = _libc_madvise()


def masked_csr_product(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    dense: np.ndarray,
    mask: Tuple[int, int, int, int, float],
    threads: Optional[int] = None,
    out: Optional[np.ndarray] = None,
) -> np.ndarray:
    """``D (M @ dense)``: :func:`csr_product` with each output entry scaled by a dropout mask as written.

    The mask is :func:`~pdenets.nn.adjoint_diffusion.apply_dropout_mask_`'s, so that the product and the
    mask cost one pass over the output instead of two: ``mask = (seed, first_byte, itemsize, threshold,
    scale)``, output entry ``e`` (row-major) keeps (times ``scale``) where the unsigned integer of bytes
    ``first_byte + e·itemsize …`` of PCG64(seed)'s raw words is below ``threshold``, else is 0. The rows are
    split over the threads in contiguous runs, each starting from the generator jumped ahead to its first
    word (:mod:`~pdenets.operators.pcg64`): the same numbers as the product followed by the mask.
    ``out``: as :func:`csr_product`'s.
    """
    if not available():
        raise RuntimeError("the compiled CSR product needs numba: pip install numba (or pdenets[fast])")
    import torch

    from .pcg64 import jumped_states

    numba = numba_module()
    assert numba is not None  # available() said so
    seed, first_byte, itemsize, threshold, scale = mask
    dense = np.ascontiguousarray(dense)
    rows, width = indptr.shape[0] - 1, int(dense.shape[1])
    wanted = threads if threads is not None else torch.get_num_threads()
    parts = max(1, min(int(wanted), numba.config.NUMBA_NUM_THREADS, rows))
    numba.set_num_threads(parts)
    # runs of rows with equal shares of the stored entries
    row_bounds = np.searchsorted(indptr, np.linspace(0, indptr[-1], parts + 1)[1:-1]).astype(np.int64)
    row_bounds = np.concatenate([[0], np.clip(row_bounds, 0, rows), [rows]]).astype(np.int64)
    first_bytes = first_byte + row_bounds[:-1] * width * itemsize
    states = jumped_states(seed, first_bytes // 8)
    skips = ((first_bytes % 8) // itemsize).astype(np.int64)
    product = _masked_kernel(width)
    value = dense.dtype.type(scale)
    key = (-width, indptr.dtype.str, indices.dtype.str, dense.dtype.str)
    if key not in _WARMED:
        compile_apart(
            product,
            np.zeros(2, dtype=indptr.dtype),
            np.zeros(0, dtype=indices.dtype),
            np.zeros(0, dtype=dense.dtype),
            np.zeros((1, width), dtype=dense.dtype),
            np.zeros((1, width), dtype=dense.dtype),
            np.array([0, 1], dtype=np.int64),
            jumped_states(0, [0]),
            np.zeros(1, dtype=np.int64),
            1,
            1,
            value,
        )
        _WARMED.add(key)
    out = _output(rows, dense, out)
    product(
        indptr,
        indices,
        values.astype(dense.dtype, copy=False),
        dense,
        out,
        row_bounds,
        states,
        skips,
        int(itemsize),
        int(threshold),
        value,
    )
    return out


def _output(rows: int, dense: np.ndarray, out: Optional[np.ndarray]) -> np.ndarray:
    """``out`` checked to take a product of ``dense`` with ``rows`` rows, or a new array (2 MiB pages)."""
    if out is None:
        out = np.empty((rows, dense.shape[1]), dtype=dense.dtype)
        advise_huge_pages(out)
        return out
    if out.shape != (rows, dense.shape[1]) or out.dtype != dense.dtype:
        raise ValueError(
            f"out must be a {dense.dtype} array of shape {(rows, dense.shape[1])}, "
            f"got {out.dtype} {out.shape}"
        )
    if not (out.flags.c_contiguous and out.flags.writeable):
        raise ValueError("out must be a writeable C-contiguous array")
    if np.may_share_memory(out, dense):
        raise ValueError("out must not overlap the dense operand: the product reads it while writing out")
    return out


def available() -> bool:
    """Whether the compiled product can run here: ``numba`` importable and ``$PDENETS_COMPILED_SPMM`` not
    off (``0``, ``false``, ``off`` or ``no``, any case; another word is refused naming the variable)."""
    return environment_flag("PDENETS_COMPILED_SPMM", True) and numba_module() is not None


def csr_product(
    indptr: np.ndarray,
    indices: np.ndarray,
    values: np.ndarray,
    dense: np.ndarray,
    threads: Optional[int] = None,
    out: Optional[np.ndarray] = None,
) -> np.ndarray:
    """``M @ dense`` for ``M`` given by its CSR arrays; a C-contiguous array of ``dense``'s dtype.

    Args:
        indptr: row pointers ``p``, shape ``(n + 1,)`` (int32 or int64).
        indices: column indices ``j``, shape ``(nnz,)``, each in ``[0, dense.shape[0])`` (not checked:
            the caller's matrix is a checked CSR).
        values: the entries ``v``, shape ``(nnz,)``, of ``dense``'s dtype.
        dense: ``X``, C-contiguous ``(m, C)`` float32 or float64.
        threads: threads to split the rows over (default: ``torch.get_num_threads()``).
        out: an array to write ``Y`` into (C-contiguous, ``(n, C)``, ``dense``'s dtype, not overlapping
            ``dense``); default: a new one.

    Returns:
        ``Y = M X`` of shape ``(n, C)`` (``out`` where given).

    Raises:
        RuntimeError: ``numba`` is not installed (check :func:`available` first).
        ValueError: ``out`` of another shape or dtype, not writeable and C-contiguous, or overlapping
            ``dense``.
    """
    if not available():
        raise RuntimeError("the compiled CSR product needs numba: pip install numba (or pdenets[fast])")
    import torch

    numba = numba_module()
    assert numba is not None  # available() said so

    wanted = threads if threads is not None else torch.get_num_threads()
    numba.set_num_threads(max(1, min(int(wanted), numba.config.NUMBA_NUM_THREADS)))
    dense = np.ascontiguousarray(dense)
    product = _kernel(int(dense.shape[1]))
    key = (int(dense.shape[1]), indptr.dtype.str, indices.dtype.str, dense.dtype.str)
    if key not in _WARMED:
        _warm(product, indptr, indices, dense)
        _WARMED.add(key)
    out = _output(indptr.shape[0] - 1, dense, out)
    product(indptr, indices, values.astype(dense.dtype, copy=False), dense, out)
    return out
