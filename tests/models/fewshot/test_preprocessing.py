"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import (
    centre_and_normalize,
    cross_domain_shift,
    prototypes,
    rectified_prototypes,
    standardize_scale,
)


def test_preprocessing_formulas(device):
    support = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], device=device)
    query = torch.tensor([[[3.0, 3.0], [5.0, 1.0], [1.0, 1.0]]], device=device)
    shifted = cross_domain_shift(support, query)
    assert torch.allclose(shifted.mean(1), support.mean(1))
    labels = torch.tensor([[0, 1]], device=device)
    assert torch.equal(prototypes(support, labels, 2), support)
    # rectification by hand: T = 10, cosine to each prototype, argmax assignment, class softmax weight, mean
    points = torch.cat([support, query], 1)[0]
    scores = (
        10 * torch.nn.functional.normalize(points, dim=1) @ torch.nn.functional.normalize(support[0], dim=1).T
    )
    assigned = scores.argmax(1)
    weights = scores.softmax(1)
    expected = torch.stack(
        [(weights[assigned == c, c, None] * points[assigned == c]).mean(0) for c in range(2)]
    )
    assert torch.allclose(rectified_prototypes(support, labels, query, 2)[0], expected)


def test_the_unit_is_the_root_mean_square_distance_of_the_support_to_its_mean():
    rng = np.random.default_rng(0)
    support = rng.normal(size=(2, 5, 3)) * np.array([1.0, 40.0])[:, None, None] + 3.0
    query = rng.normal(size=(2, 4, 3)) * 10
    units = [np.sqrt(((s - s.mean(0)) ** 2).sum(1).mean()) for s in support]
    ours_support, ours_query = standardize_scale(torch.from_numpy(support), torch.from_numpy(query))
    for t, unit in enumerate(units):
        np.testing.assert_allclose(ours_support[t].numpy(), support[t] / unit, rtol=1e-13)
        np.testing.assert_allclose(ours_query[t].numpy(), query[t] / unit, rtol=1e-13)
    # any positive factor reads alike, and the queries never set the unit
    scaled = standardize_scale(torch.from_numpy(support * 1e6), torch.from_numpy(query[:, :1] * 1e6))
    torch.testing.assert_close(scaled[0], ours_support, rtol=1e-12, atol=0)
    torch.testing.assert_close(scaled[1], ours_query[:, :1], rtol=1e-12, atol=0)


def test_coinciding_support_points_take_their_norm_and_zero_ones_keep_the_features():
    support = torch.tensor([[[3.0, 4.0]] * 3, [[0.0, 0.0]] * 3], dtype=torch.float64)
    query = torch.tensor([[[6.0, 8.0]], [[2.0, -1.0]]], dtype=torch.float64)
    ours_support, ours_query = standardize_scale(support, query)
    torch.testing.assert_close(ours_support[0], support[0] / 5, rtol=0, atol=1e-15)
    torch.testing.assert_close(ours_query[0], query[0] / 5, rtol=0, atol=1e-15)
    torch.testing.assert_close(ours_support[1], support[1], rtol=0, atol=0)
    torch.testing.assert_close(ours_query[1], query[1], rtol=0, atol=0)


def test_a_query_off_the_supports_scale_is_refused_naming_its_task():
    support = torch.tensor([[[0.0, 0.0], [1.0, 0.0]]] * 2, dtype=torch.float64)  # unit 1/2
    query = torch.tensor([[[1e14, 0.0]], [[1e16, 0.0]]], dtype=torch.float64)  # 2e14 < 2^50 < 2e16 units
    with pytest.raises(ValueError, match=r"^task 1: a query lies more than 2\^50 times the support's spread"):
        standardize_scale(support, query)
    standardize_scale(support, query[:1].expand(2, -1, -1))  # 2e14 units: accepted


def test_centring_subtracts_the_base_mean_and_unit_length_keeps_zero_vectors_at_zero():
    features = torch.tensor([[[4.0, 5.0], [1.0, 1.0], [-2.0, 1.0]]], dtype=torch.float64)
    mean = torch.tensor([1.0, 1.0], dtype=torch.float64)
    expected = torch.tensor([[[0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]]], dtype=torch.float64)
    torch.testing.assert_close(centre_and_normalize(features, mean), expected, rtol=0, atol=1e-15)
    torch.testing.assert_close(centre_and_normalize(features, mean, normalize=False), features - mean)
    torch.testing.assert_close(
        centre_and_normalize(features, None, normalize=False), features, rtol=0, atol=0
    )
    tiny = centre_and_normalize(torch.tensor([[3e-30, -4e-30], [0.0, 0.0]]))  # squares underflow in float32
    torch.testing.assert_close(tiny, torch.tensor([[0.6, -0.8], [0.0, 0.0]]), rtol=1e-6, atol=0)


def test_class_means_count_each_class_and_a_class_without_support_is_zero():
    support = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0], [0.0, 1.0]]], dtype=torch.float64)
    labels = torch.tensor([[0, 0, 0, 2]])
    expected = torch.tensor([[[3.0, 5.0], [0.0, 0.0], [0.0, 1.0]]], dtype=torch.float64)
    torch.testing.assert_close(prototypes(support, labels, 3), expected, rtol=0, atol=0)


def _rectified(support, labels, query, temperature):
    """Written out: T cos to the support means, argmax class, class softmax weight, sum over the count."""
    means = np.stack([support[labels == c].mean(0) for c in range(3)])
    points = np.concatenate([support, query])
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    scores = temperature * unit(points) @ unit(means).T
    weights = np.exp(scores - scores.max(1, keepdims=True))
    weights /= weights.sum(1, keepdims=True)
    assigned = scores.argmax(1)
    return np.stack([(weights[assigned == c, c, None] * points[assigned == c]).mean(0) for c in range(3)])


def test_rectification_at_another_temperature_follows_it_and_is_symmetric_in_rotations_and_query_order():
    rng = np.random.default_rng(1)
    centres = 2 * rng.normal(size=(3, 4))
    labels = np.array([0, 1, 1, 2])
    support = centres[labels] + 0.5 * rng.normal(size=(4, 4))
    query = centres[np.arange(9) % 3] + 0.5 * rng.normal(size=(9, 4))
    args = (torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3)
    warm = rectified_prototypes(*args, temperature=1.0)[0].numpy()
    np.testing.assert_allclose(warm, _rectified(support, labels, query, 1.0), rtol=1e-12)
    assert np.abs(warm - rectified_prototypes(*args)[0].numpy()).max() > 1e-2  # the default T = 10 differs
    rotation, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    rotated = rectified_prototypes(
        torch.from_numpy(support @ rotation)[None], args[1], torch.from_numpy(query @ rotation)[None], 3
    )[0].numpy()
    np.testing.assert_allclose(rotated, rectified_prototypes(*args)[0].numpy() @ rotation, atol=1e-12)
    order = rng.permutation(9)
    shuffled = rectified_prototypes(args[0], args[1], torch.from_numpy(query[order])[None], 3)
    torch.testing.assert_close(shuffled, rectified_prototypes(*args), rtol=0, atol=1e-13)
