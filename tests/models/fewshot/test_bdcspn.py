"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import math

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import (
    BDCSPN,
    BDCSPNSettings,
    FewShotBatch,
    rectified_prototypes,
)
from pdenets.models.fewshot.bdcspn import bdcspn_prototypes


def test_bd_cspn_rectifies_with_a_true_weighted_mean(device):
    support = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], device=device)
    query = torch.tensor([[[3.0, 3.0], [5.0, 1.0], [1.0, 1.0]]], device=device)
    labels = torch.tensor([[0, 1]], device=device)
    points = torch.cat([support, query], 1)[0]
    scores = (
        10 * torch.nn.functional.normalize(points, dim=1) @ torch.nn.functional.normalize(support[0], dim=1).T
    )
    assigned, weights = scores.argmax(1), scores.softmax(1)
    expected = torch.stack(
        [
            (weights[assigned == c, c, None] * points[assigned == c]).sum(0) / weights[assigned == c, c].sum()
            for c in range(2)
        ]
    )
    assert torch.allclose(rectified_prototypes(support, labels, query, 2, weighted_mean=True)[0], expected)


def _cos(a, b):
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def _weighted(members, prototype, temperature):
    """Σ_z exp(T cos(z, m)) z / Σ_z exp(T cos(z, m)) over the members of a class."""
    weights = np.array([math.exp(temperature * _cos(z, prototype)) for z in members])
    return (weights[:, None] * np.array(members)).sum(0) / weights.sum()


def test_rectified_prototypes_by_hand_with_and_without_the_balanced_share():
    s0, s1 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    q0, q1, q2 = np.array([2.0, 0.5]), np.array([3.0, 1.0]), np.array([0.2, 3.0])
    support = torch.from_numpy(np.stack([s0, s1]))[None]
    labels = torch.tensor([[0, 1]])
    temperature = 2.0
    # two queries, both nearest class 0 by cosine; without a share class 1 keeps its support point alone
    two = torch.from_numpy(np.stack([q0, q1]))[None]
    free = bdcspn_prototypes(support, labels, two, 2, temperature, share=None)[0].numpy()
    np.testing.assert_allclose(free[0], _weighted([s0, q0, q1], s0, temperature), rtol=1e-12)
    np.testing.assert_allclose(free[1], s1, rtol=0, atol=0)
    # a share of one: (q0, class 0) is the most similar pair, so q1 goes to class 1, its next class
    assert _cos(q0, s0) > _cos(q1, s0) > _cos(q1, s1)
    shared = bdcspn_prototypes(support, labels, two, 2, temperature, share=1)[0].numpy()
    np.testing.assert_allclose(shared[0], _weighted([s0, q0], s0, temperature), rtol=1e-12)
    np.testing.assert_allclose(shared[1], _weighted([s1, q1], s1, temperature), rtol=1e-12)
    # three queries and a share of one: q2 takes class 1 first, q1 is left out of every class
    three = torch.from_numpy(np.stack([q0, q1, q2]))[None]
    left_out = bdcspn_prototypes(support, labels, three, 2, temperature, share=1)[0].numpy()
    np.testing.assert_allclose(left_out[0], _weighted([s0, q0], s0, temperature), rtol=1e-12)
    np.testing.assert_allclose(left_out[1], _weighted([s1, q2], s1, temperature), rtol=1e-12)
    none = bdcspn_prototypes(support, labels, three, 2, temperature, share=0)[0]
    torch.testing.assert_close(none, support[0], rtol=0, atol=0)


def _episode(queries=9, dim=4, seed=0):
    rng = np.random.default_rng(seed)
    centres = 1.5 * rng.normal(size=(3, dim)) + 1.0
    labels = np.array([0, 1, 1, 2])
    support = centres[labels] + rng.normal(size=(4, dim))
    query = centres[np.arange(queries) % 3] + rng.normal(size=(queries, dim))
    return support, labels, query


def _batch(support, labels, query):
    return FewShotBatch(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3
    )


def test_a_rotation_of_every_feature_changes_nothing_a_translation_does():
    support, labels, query = _episode()
    rotation, _ = np.linalg.qr(np.random.default_rng(5).normal(size=(4, 4)))
    for method in (BDCSPN(), BDCSPN(temperature=10.0, shift=False, balanced_share=False)):
        direct = method.predict_proba(_batch(support, labels, query))
        rotated = method.predict_proba(_batch(support @ rotation, labels, query @ rotation))
        torch.testing.assert_close(rotated, direct, rtol=0, atol=1e-12)
        moved = method.predict_proba(_batch(support + 2.0, labels, query + 2.0))
        assert float((moved - direct).abs().max()) > 1e-3  # cosines see the origin


def test_permuting_the_queries_permutes_the_predictions():
    support, labels, query = _episode(queries=10, seed=1)  # 10 queries, 3 classes: a share of 3, one left out
    order = np.random.default_rng(2).permutation(10)
    for method in (BDCSPN(), BDCSPN.preset("paper")):
        direct = method.predict_proba(_batch(support, labels, query))
        permuted = method.predict_proba(_batch(support, labels, query[order]))
        torch.testing.assert_close(permuted, direct[:, order], rtol=0, atol=1e-12)


def test_the_shift_and_the_temperature_each_change_the_answer():
    support, labels, query = _episode(queries=6, seed=3)
    query = query + np.array([0.8, -0.5, 0.3, 0.0])  # the queries sit off the support: Δ is not small
    batch = _batch(support, labels, query)
    default = BDCSPN().predict_proba(batch)
    assert float((BDCSPN(shift=False).predict_proba(batch) - default).abs().max()) > 1e-3
    sharp = BDCSPN(temperature=10.0).predict_proba(batch)
    assert float(sharp.max(2).values.mean()) > float(default.max(2).values.mean()) + 0.05


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"temperature": 0.0}, ValueError, "temperature must be > 0, got 0.0"),
        ({"temperature": -1.0}, ValueError, "temperature must be > 0"),
        ({"temperature": None}, TypeError, "temperature must be a real number, got NoneType"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        BDCSPNSettings(**changes)
