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


def _affine_jump(state: int, increment: int, steps: int) -> int:
    """``steps`` applications of ``s ← s·m + c (mod 2^128)`` by squaring the affine map (independent of
    NumPy's ``advance``)."""
    multiplier = (MULTIPLIER[0] << 64) | MULTIPLIER[1]
    scale, shift = 1, 0  # the composed map s ↦ scale·s + shift
    power_scale, power_shift = multiplier, increment  # the map applied 2^k times
    while steps:
        if steps & 1:
            scale, shift = (power_scale * scale) & MASK128, (power_scale * shift + power_shift) & MASK128
        power_scale, power_shift = (
            (power_scale * power_scale) & MASK128,
            (power_scale * power_shift + power_shift) & MASK128,
        )
        steps >>= 1
    return (scale * state + shift) & MASK128


@pytest.mark.parametrize("first", [0, 1, 2**33 + 7, 2**70 + 3, 2**127 + 1])
def test_jumps_far_beyond_a_64_bit_count_land_on_the_affine_composition_of_the_step(first):
    generator = np.random.PCG64(9)
    high, low, increment_high, increment_low = state_words(generator)
    expected = _affine_jump((high << 64) | low, (increment_high << 64) | increment_low, first)
    (jumped,) = jumped_states(seed=9, first_words=[first])
    assert (int(jumped[0]) << 64) | int(jumped[1]) == expected
    assert (int(jumped[2]), int(jumped[3])) == (increment_high, increment_low)  # the stream is kept


def _state_before(after: int, increment: int) -> int:
    """The state whose step gives ``after`` (the multiplier is odd, hence invertible modulo 2^128)."""
    multiplier = (MULTIPLIER[0] << 64) | MULTIPLIER[1]
    return ((after - increment) * pow(multiplier, -1, 1 << 128)) & MASK128


# states after the step chosen at the edges: rotation 0, 1 and 63 (the top 6 bits), and the low word's sum
# overflowing (a carry into the high word) or not
EDGE_STATES = [
    ("rotation 0, carry", (0 << 122) | (0x0123456789ABCDEF << 64) | 5, (1 << 64) | ((1 << 64) - 3)),
    ("rotation 1, no carry", (1 << 122) | ((1 << 64) - 1), (7 << 64) | 1),
    ("rotation 63, carry", (63 << 122) | (0x55 << 64) | 0, (3 << 64) | ((1 << 63) + 1)),
    ("rotation 63, no carry", MASK128, (0xDEADBEEF << 64) | 0xB),
    ("rotation 32, carry into a zero low word", (32 << 122) | (0xFFFF << 64), (5 << 64) | 1),
]


@pytest.mark.parametrize("name, after, increment", EDGE_STATES, ids=[case[0] for case in EDGE_STATES])
def test_numpy_and_the_written_step_agree_at_the_rotation_and_carry_edges(name, after, increment):
    """From a state set by hand, NumPy's next word is the step written here; the state after it is the chosen
    one, whatever its rotation or the low word's carry."""
    rotation, carried = after >> 122, (after & MASK64) < (increment & MASK64)  # the case is what it says
    assert name.startswith(f"rotation {rotation},") and carried == ("no carry" not in name)
    before = _state_before(after, increment)
    generator = np.random.PCG64()
    generator.state = {
        "bit_generator": "PCG64",
        "state": {"state": before, "inc": increment},
        "has_uint32": 0,
        "uinteger": 0,
    }
    assert state_words(generator) == (before >> 64, before & MASK64, increment >> 64, increment & MASK64)
    (word,) = reference_words(before, increment, 1)
    assert int(generator.random_raw()) == word
    assert state_words(generator)[:2] == (after >> 64, after & MASK64)


@pytest.mark.parametrize(
    "after, increment", [case[1:] for case in EDGE_STATES], ids=[c[0] for c in EDGE_STATES]
)
def test_the_compiled_step_at_the_rotation_and_carry_edges(after, increment):
    pytest.importorskip("numba")
    before = _state_before(after, increment)
    words = [np.uint64(before >> 64), np.uint64(before & MASK64), np.uint64(increment >> 64)]
    high, low, word = stepper()(*words, np.uint64(increment & MASK64))
    assert (int(high), int(low)) == (after >> 64, after & MASK64)
    assert int(word) == reference_words(before, increment, 1)[0]
