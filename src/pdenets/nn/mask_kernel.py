"""Dropout masks of large feature matrices drawn and applied in one compiled pass (optional: needs ``numba``).

:func:`~pdenets.nn.adjoint_diffusion.apply_dropout_mask_` multiplies ``X`` in place by the mask of a seed,

$$
    X_{e} \\leftarrow X_{e} \\cdot \\begin{cases} 1/q & u_e < t \\\\ 0 & \\text{otherwise} \\end{cases}
$$

where entry ``e`` (row-major) reads the unsigned integer ``u_e`` made of bytes ``e·s … e·s + s − 1`` of the
raw 64-bit output of NumPy's PCG64 seeded with the seed (``s`` = 1, 2 or 4 bytes, threshold ``t``, keep
probability ``q``: :func:`~pdenets.nn.dropout.keep_threshold`). In NumPy that takes a drawn array of words,
a boolean mask and a float mask per chunk, one thread: 16 % of a 1,048,576-node Diff-ResNet epoch. Here
each thread takes a contiguous run of words, starts from the generator's state jumped ahead to its first
word (PCG64 jumps in O(log n)), steps PCG64's 128-bit recurrence itself (two 64-bit words) and scales the
entries each word covers, so nothing but ``X`` is touched. The bytes are the same, so the masks are the
same, bit for bit.

Examples:
    >>> import numpy as np
    >>> x = np.ones((2, 8), dtype=np.float32)
    >>> if available():
    ...     apply_mask(x, seed=7, first_byte=0, itemsize=1, threshold=192, scale=4 / 3)
    >>> words = np.random.PCG64(7).random_raw(2)
    >>> expected = np.where(words.view(np.uint8).reshape(2, 8) < 192, np.float32(4 / 3), np.float32(0))
    >>> bool((x == expected).all()) if available() else True
    True
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ..operators.pcg64 import jumped_states, stepper
from ..operators.spmm_kernel import compile_apart, numba_module

__all__ = ["available", "apply_mask", "MIN_ENTRIES"]

#: entries from which the compiled pass is used (below it NumPy's chunked pass is as fast)
MIN_ENTRIES = 1 << 20


def available() -> bool:
    """Whether ``numba`` is importable (the masks are the same either way)."""
    return numba_module() is not None


@functools.lru_cache(maxsize=None)
def _kernel() -> Callable:
    numba = numba_module()
    assert numba is not None  # the caller checked available()
    uint64 = numba.uint64
    step = stepper()

    @numba.njit(parallel=True, nogil=True, boundscheck=False, cache=False)
    def masked(  # pragma: no cover - compiled
        flat: np.ndarray,
        states: np.ndarray,
        first_words: np.ndarray,
        word_counts: np.ndarray,
        skip: int,
        itemsize: int,
        threshold: int,
        scale: float,
    ) -> None:
        units = 8 // itemsize
        bits = uint64(8 * itemsize)
        mask = (uint64(1) << bits) - uint64(1)
        limit = uint64(threshold)
        zero = scale - scale
        count = flat.shape[0]
        for part in numba.prange(states.shape[0]):
            high, low = states[part, 0], states[part, 1]
            increment_high, increment_low = states[part, 2], states[part, 3]
            for word_index in range(first_words[part], first_words[part] + word_counts[part]):
                high, low, word = step(high, low, increment_high, increment_low)
                first = (word_index * 8 - skip) // itemsize  # exact: skip is a multiple of itemsize
                if first >= 0 and first + units <= count:  # every unit of the word is an entry
                    for unit in range(units):
                        drawn = (word >> (uint64(unit) * bits)) & mask
                        flat[first + unit] = flat[first + unit] * (scale if drawn < limit else zero)
                else:  # the first or last word of the run
                    for unit in range(units):
                        if 0 <= first + unit < count:
                            drawn = (word >> (uint64(unit) * bits)) & mask
                            flat[first + unit] = flat[first + unit] * (scale if drawn < limit else zero)

    return masked


def _warm(kernel: Callable, dtype: np.dtype) -> None:
    """Compile for ``dtype`` on a thread of its own (:func:`~pdenets.operators.spmm_kernel.compile_apart`)."""
    compile_apart(
        kernel,
        np.ones(8, dtype=dtype),
        jumped_states(0, [0]),
        np.zeros(1, np.int64),
        np.ones(1, np.int64),
        0,
        1,
        128,
        dtype.type(2),
    )


@functools.lru_cache(maxsize=None)
def _compiled(dtype: np.dtype) -> Callable:
    kernel = _kernel()
    _warm(kernel, np.dtype(dtype))
    return kernel


def apply_mask(
    features: np.ndarray, seed: int, first_byte: int, itemsize: int, threshold: int, scale: float
) -> None:
    """Multiply the C-contiguous ``features`` in place by the mask of bytes ``first_byte …`` of PCG64(seed).

    Args:
        features: any shape, float32 or float64, C-contiguous; its entries in row-major order take the
            units ``first_byte / itemsize, …`` of the stream.
        seed: the PCG64 seed.
        first_byte: the byte of the stream the first entry starts at (a multiple of ``itemsize``).
        itemsize: bytes per entry (1, 2 or 4).
        threshold: keep where the unit is below it.
        scale: the kept entries' factor ``1/q``.
    """
    import torch

    numba = numba_module()
    assert numba is not None  # the caller checked available()
    flat = features.reshape(-1)
    count = flat.shape[0]
    if count == 0:
        return
    kernel = _compiled(flat.dtype)
    skip = first_byte % 8
    words = (skip + count * itemsize + 7) // 8
    parts = max(1, min(int(torch.get_num_threads()), numba.config.NUMBA_NUM_THREADS, words))
    numba.set_num_threads(parts)
    bounds = np.linspace(0, words, parts + 1).astype(np.int64)
    kernel(
        flat,
        jumped_states(seed, first_byte // 8 + bounds[:-1]),
        bounds[:-1].copy(),
        np.diff(bounds),
        skip,
        itemsize,
        threshold,
        flat.dtype.type(scale),
    )
