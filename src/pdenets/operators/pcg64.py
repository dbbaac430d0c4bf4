"""NumPy's PCG64 stepped inside compiled kernels: its raw 64-bit words, from states jumped ahead per thread.

PCG64 (O'Neill's "XSL RR 128/64", NumPy's ``np.random.PCG64``) keeps a 128-bit state ``s`` and increment
``c``; each word is

$$
    s \\leftarrow s \\cdot m + c \\pmod{2^{128}}, \\qquad
    w = \\operatorname{rotr}_{64}\\big(s_{\\text{high}} \\oplus s_{\\text{low}},\\ s \\gg 122\\big),
$$

with ``m`` the multiplier below. A kernel holds ``s`` and ``c`` as two 64-bit words each and steps them
itself, so a thread that starts from :func:`jumped_states` draws, word for word, what ``random_raw`` draws
from that point of the stream (PCG64 jumps ahead in ``O(log n)``). The dropout masks of
:mod:`pdenets.nn.mask_kernel` and the masked product of :mod:`~pdenets.operators.spmm_kernel` use it.

Examples:
    >>> import numpy as np
    >>> states = jumped_states(seed=5, first_words=[0, 3])
    >>> states.shape, states.dtype
    ((2, 4), dtype('uint64'))
    >>> reference = np.random.PCG64(5)
    >>> _ = reference.advance(3)
    >>> tuple(int(word) for word in states[1]) == state_words(reference)
    True
"""

from __future__ import annotations

import functools
from typing import Callable, Iterable, Tuple

import numpy as np

__all__ = ["MULTIPLIER", "jumped_states", "state_words", "stepper"]

#: PCG64's 128-bit multiplier, high and low words
MULTIPLIER = (0x2360ED051FC65DA4, 0x4385DF649FCCF645)


def state_words(generator: np.random.PCG64) -> Tuple[int, int, int, int]:
    """``(state high, state low, increment high, increment low)`` of a PCG64, as 64-bit words."""
    state = generator.state["state"]
    value, increment = int(state["state"]), int(state["inc"])
    low = (1 << 64) - 1
    return value >> 64, value & low, increment >> 64, increment & low


def jumped_states(seed: int, first_words: Iterable[int]) -> np.ndarray:
    """``(len(first_words), 4)`` uint64: PCG64(seed)'s :func:`state_words` jumped ahead to each first word."""
    states = []
    for first in first_words:
        generator = np.random.PCG64(seed)
        generator.advance(int(first))
        states.append(state_words(generator))
    return np.array(states, dtype=np.uint64).reshape(-1, 4)


@functools.lru_cache(maxsize=None)
def stepper() -> Callable:
    """A compiled ``step(high, low, increment_high, increment_low) -> (high, low, word)`` (needs numba)."""
    import numba  # the caller checked that it is installed

    uint64 = numba.uint64
    multiplier_high, multiplier_low = uint64(MULTIPLIER[0]), uint64(MULTIPLIER[1])

    @numba.njit(inline="always")
    def multiply_high(a, b):  # pragma: no cover - compiled; the high word of the 128-bit a·b
        low32 = uint64(0xFFFFFFFF)
        a_low, a_high, b_low, b_high = a & low32, a >> uint64(32), b & low32, b >> uint64(32)
        middle = ((a_low * b_low) >> uint64(32)) + ((a_low * b_high) & low32) + ((a_high * b_low) & low32)
        return (
            a_high * b_high
            + ((a_low * b_high) >> uint64(32))
            + ((a_high * b_low) >> uint64(32))
            + (middle >> uint64(32))
        )

    @numba.njit(inline="always")
    def step(high, low, increment_high, increment_low):  # pragma: no cover - compiled
        new_high = high * multiplier_low + low * multiplier_high + multiply_high(low, multiplier_low)
        new_low = low * multiplier_low
        low = new_low + increment_low
        high = new_high + increment_high + (uint64(1) if low < new_low else uint64(0))
        rotation = high >> uint64(58)
        mixed = high ^ low
        return high, low, (mixed >> rotation) | (mixed << ((uint64(64) - rotation) & uint64(63)))

    return step
