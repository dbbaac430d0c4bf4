"""PCG64 in 64-bit words: the multiplier, the jumped states and the compiled step, each against NumPy's
``PCG64.random_raw`` and a big-integer re-derivation of O'Neill's XSL RR 128/64 written here."""

import numpy as np
import pytest

from pdenets.operators.pcg64 import MULTIPLIER, jumped_states, state_words, stepper

MASK64, MASK128 = (1 << 64) - 1, (1 << 128) - 1


def reference_words(state: int, increment: int, count: int):
    """Step ``s ← s·m + c (mod 2^128)``, then ``w = rotr64(s_high ⊕ s_low, s >> 122)``, in Python integers."""
    multiplier = (MULTIPLIER[0] << 64) | MULTIPLIER[1]
    words = []
    for _ in range(count):
        state = (state * multiplier + increment) & MASK128
        mixed, rotation = ((state >> 64) ^ state) & MASK64, state >> 122
        words.append(((mixed >> rotation) | (mixed << ((64 - rotation) & 63))) & MASK64)
    return words


def test_the_multiplier_is_numpys_and_the_written_step_draws_numpys_words():
    generator = np.random.PCG64(11)
    high, low, increment_high, increment_low = state_words(generator)
    expected = reference_words((high << 64) | low, (increment_high << 64) | increment_low, 6)
    assert [int(word) for word in generator.random_raw(6)] == expected


@pytest.mark.parametrize("first", [0, 1, 5, 1000])
def test_a_jumped_state_starts_where_numpy_is_after_that_many_words(first):
    (state,) = jumped_states(seed=3, first_words=[first])
    generator = np.random.PCG64(3)
    generator.random_raw(first)
    assert tuple(int(word) for word in state) == state_words(generator)
    # the next word from the jumped state is the stream's word number `first`
    high, low, increment_high, increment_low = (int(word) for word in state)
    stream = np.random.PCG64(3).random_raw(first + 1)
    assert reference_words((high << 64) | low, (increment_high << 64) | increment_low, 1)[0] == int(
        stream[-1]
    )


def test_jumped_states_of_several_threads_keep_their_order_and_another_seed_differs():
    states = jumped_states(seed=3, first_words=[0, 8, 4])
    assert states.shape == (3, 4) and states.dtype == np.uint64
    assert np.array_equal(states[[0, 2, 1]], jumped_states(seed=3, first_words=[0, 4, 8]))
    assert not np.array_equal(states, jumped_states(seed=4, first_words=[0, 8, 4]))
    assert jumped_states(seed=3, first_words=[]).shape == (0, 4)


def test_the_compiled_step_draws_numpys_words_including_the_carry_of_the_low_word():
    pytest.importorskip("numba")
    step = stepper()
    for seed in (0, 7, 2**40 + 3):
        generator = np.random.PCG64(seed)
        high, low, increment_high, increment_low = (np.uint64(word) for word in state_words(generator))
        words = []
        for _ in range(50):  # 50 steps of a random low word carry into the high word about half the time
            high, low, word = step(high, low, increment_high, increment_low)
            high, low = np.uint64(high), np.uint64(low)  # as a kernel holds them (a Python int is int64)
            words.append(int(word))
        assert words == [int(word) for word in np.random.PCG64(seed).random_raw(50)]
