"""Nearest prototype: softmax of minus the (unsquared) distance to unequal-shot class means against NumPy,
inductive and permutation-equivariant, rigid-motion invariant, rectified prototypes, no settings."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import FewShotBatch, NearestPrototype, TIMSettings, rectified_prototypes


def _episode(queries=6, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = 2 * rng.normal(size=(3, dim))
    labels = np.array([0, 0, 0, 1, 2, 2])  # three shots, one, two
    support = centres[labels] + rng.normal(size=(6, dim))
    query = centres[np.arange(queries) % 3] + rng.normal(size=(queries, dim))
    return support, labels, query


def _batch(support, labels, query, rectify=False):
    return FewShotBatch(
        torch.from_numpy(support)[None],
        torch.from_numpy(labels)[None],
        torch.from_numpy(query)[None],
        3,
        rectify=rectify,
    )


def _softmax(logits):
    shifted = np.exp(logits - logits.max(1, keepdims=True))
    return shifted / shifted.sum(1, keepdims=True)


def test_probabilities_are_the_softmax_of_minus_the_distance_to_each_class_mean():
    support, labels, query = _episode()
    means = np.stack([support[labels == c].mean(0) for c in range(3)])
    distances = np.linalg.norm(query[:, None] - means[None], axis=2)
    ours = NearestPrototype().predict_proba(_batch(support, labels, query))[0].numpy()
    np.testing.assert_allclose(ours, _softmax(-distances), rtol=1e-12)
    assert np.abs(ours - _softmax(-(distances**2))).max() > 1e-2  # not the squared distance
    # the means weigh each class by its own count: the mean of all support points would answer otherwise
    pooled = np.stack([support[labels == c].sum(0) / 2 for c in range(3)])
    assert np.abs(ours - _softmax(-np.linalg.norm(query[:, None] - pooled[None], axis=2))).max() > 1e-2


def test_each_query_is_answered_alone_and_a_permutation_of_the_queries_permutes_the_answers():
    support, labels, query = _episode(queries=7, seed=1)
    method = NearestPrototype()
    together = method.predict_proba(_batch(support, labels, query))
    for i in range(7):
        alone = method.predict_proba(_batch(support, labels, query[i : i + 1]))
        torch.testing.assert_close(alone, together[:, i : i + 1], rtol=0, atol=1e-15)
    order = np.random.default_rng(2).permutation(7)
    permuted = method.predict_proba(_batch(support, labels, query[order]))
    torch.testing.assert_close(permuted, together[:, order], rtol=0, atol=1e-15)


def test_a_rigid_motion_changes_nothing_and_a_scaling_only_sharpens():
    support, labels, query = _episode(seed=3)
    rng = np.random.default_rng(4)
    rotation, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    shift = 5 * rng.normal(size=3)
    direct = NearestPrototype().predict_proba(_batch(support, labels, query))
    moved = NearestPrototype().predict_proba(
        _batch(support @ rotation + shift, labels, query @ rotation + shift)
    )
    torch.testing.assert_close(moved, direct, rtol=0, atol=1e-12)
    doubled = NearestPrototype().predict_proba(_batch(2 * support, labels, 2 * query))
    assert torch.equal(doubled.argmax(2), direct.argmax(2))
    expected = torch.softmax(2 * direct.log(), 2)  # softmax(−2d) from softmax(−d)
    torch.testing.assert_close(doubled, expected, rtol=0, atol=1e-12)


def test_a_rectified_batch_is_answered_from_its_rectified_prototypes():
    support, labels, query = _episode(queries=9, seed=5)
    assert NearestPrototype.uses_prototypes and not NearestPrototype.is_transductive
    plain = NearestPrototype().predict_proba(_batch(support, labels, query))
    rectified = NearestPrototype().predict_proba(_batch(support, labels, query, rectify=True))
    centres = rectified_prototypes(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3
    )
    expected = torch.softmax(-torch.cdist(torch.from_numpy(query)[None], centres), 2)
    torch.testing.assert_close(rectified, expected, rtol=0, atol=1e-12)
    assert float((rectified - plain).abs().max()) > 1e-2


def test_it_takes_no_setting():
    with pytest.raises(TypeError, match="unexpected keyword argument 'temperature'"):
        NearestPrototype(temperature=2.0)
    with pytest.raises(TypeError, match="^prototype takes PrototypeSettings, got TIMSettings$"):
        NearestPrototype(TIMSettings())
