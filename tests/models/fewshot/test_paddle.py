"""PADDLE: the first assignment in closed form, two block-minimisation rounds with unequal shots against
NumPy, invariance to similarity transforms and query order, coinciding prototypes, the refused settings."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import PADDLE, FewShotBatch, PADDLESettings


def _episode(shots=(3, 1, 2), queries=8, dim=3, seed=0):
    """One float64 task: ``shots[c]`` support points of class ``c``, ``queries`` queries near the classes."""
    rng = np.random.default_rng(seed)
    centres = 2 * rng.normal(size=(len(shots), dim))
    labels = np.repeat(np.arange(len(shots)), shots)
    support = centres[labels] + rng.normal(size=(len(labels), dim))
    query = centres[np.arange(queries) % len(shots)] + rng.normal(size=(queries, dim))
    return support, labels, query


def _batch(support, labels, query, ways=3):
    return FewShotBatch(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], ways
    )


def _softmax(logits):
    shifted = np.exp(logits - logits.max(1, keepdims=True))
    return shifted / shifted.sum(1, keepdims=True)


def test_the_first_assignment_is_a_softmax_at_the_support_means_with_tau_set_by_their_spread():
    # prototypes (0, 0), (4, 0) and (0, 3): squared distances 16, 9 and 25, mean 50/3, so τ = κ · 3/50
    support = np.array([[-1.0, 0.0], [1.0, 0.0], [4.0, 0.0], [0.0, 3.0]])
    labels = np.array([0, 0, 1, 2])
    query = np.array([[1.0, 1.0], [3.0, 0.5], [0.5, 2.0]])
    tau = 40.0 * 3 / 50
    squared = ((query[:, None] - np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 3.0]])[None]) ** 2).sum(2)
    expected = _softmax(-tau / 2 * squared)
    batch = _batch(support, labels, query)
    for iterations in (0, 1):  # the first round has no proportions yet: the same assignment
        ours = PADDLE(temperature=40.0, iterations=iterations).predict_proba(batch)[0].numpy()
        np.testing.assert_allclose(ours, expected, rtol=1e-12, atol=1e-15)
    assert (
        np.abs(PADDLE(temperature=40.0, iterations=2).predict_proba(batch)[0].numpy() - expected).max() > 1e-4
    )


@pytest.mark.parametrize("lam", [None, 3.0])
def test_two_rounds_with_unequal_shots_equal_the_written_out_block_minimisation(lam):
    support, labels, query = _episode()
    ways, count = 3, len(query)
    centres = np.stack([support[labels == c].mean(0) for c in range(ways)])
    spread = ((centres[:, None] - centres[None]) ** 2).sum() / (ways * (ways - 1))
    tau = 30.0 / spread
    factor = (count - ways if lam is None else lam) / count  # default λ = Q − C
    prior = np.zeros(ways)
    for _ in range(2):
        u = _softmax(-tau / 2 * ((query[:, None] - centres[None]) ** 2).sum(2) + prior)
        prior = factor * (np.log(u.mean(0) + 1e-6) + 1)
        centres = np.stack(
            [
                (support[labels == c].sum(0) + u[:, c] @ query) / ((labels == c).sum() + u[:, c].sum())
                for c in range(ways)
            ]
        )
    ours = PADDLE(temperature=30.0, iterations=2, lam=lam).predict_proba(_batch(support, labels, query))
    np.testing.assert_allclose(ours[0].numpy(), u, rtol=1e-9, atol=1e-12)


def test_rotating_translating_and_scaling_the_features_changes_nothing_and_queries_permute():
    support, labels, query = _episode(dim=4, seed=1)
    rng = np.random.default_rng(2)
    rotation, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    shift = rng.normal(size=4) * 10

    def move(x):
        return 3.7 * x @ rotation + shift

    direct = PADDLE().predict_proba(_batch(support, labels, query))
    moved = PADDLE().predict_proba(_batch(move(support), labels, move(query)))
    torch.testing.assert_close(moved, direct, rtol=0, atol=1e-9)
    order = rng.permutation(len(query))
    permuted = PADDLE().predict_proba(_batch(support, labels, query[order]))
    torch.testing.assert_close(permuted, direct[:, order], rtol=0, atol=1e-10)
    assert float((direct - direct.mean(2, keepdim=True)).abs().max()) > 0.1  # not uniform


def test_coinciding_prototypes_give_a_finite_uniform_answer():
    support = np.ones((4, 2))  # every class's prototype is (1, 1): no spread to set τ by
    query = np.array([[0.0, 1.0], [2.0, 3.0], [1.0, 1.0], [5.0, -1.0]])
    ours = PADDLE().predict_proba(_batch(support, np.array([0, 0, 1, 1]), query, ways=2))
    torch.testing.assert_close(ours, torch.full((1, 4, 2), 0.5, dtype=torch.float64), rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"lam": -1.0}, ValueError, "lam must be >= 0, got -1.0"),
        ({"lam": float("nan")}, ValueError, "lam must be finite"),
        ({"temperature": 0.0}, ValueError, "temperature must be > 0"),
        ({"iterations": -1}, ValueError, "iterations must be an integer >= 0"),
        ({"iterations": 10.0}, TypeError, "iterations must be an integer, got float"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        PADDLESettings(**changes)
