"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import (
    FewShotBatch,
    LaplacianShot,
    LaplacianShotSettings,
    NearestPrototype,
    knn_affinity,
    laplacian_energy,
    laplacian_shot,
)


def test_laplacian_shot_objective_decreases_and_converges(device):
    generator = torch.Generator().manual_seed(2)
    points = torch.randn(3, 30, 4, generator=generator, dtype=torch.float64).to(device)
    centres = torch.randn(3, 5, 4, generator=generator, dtype=torch.float64).to(device)
    unary = torch.cdist(points, centres)
    # a Gaussian kernel matrix is positive semi-definite: the bound is exact and E must not increase
    kernel = torch.exp(-torch.cdist(points, points).square())
    result = laplacian_shot(unary, kernel, lam=0.8, max_iterations=50, tolerance=1e-12)
    energies = torch.stack(result.energies)
    assert result.iterations > 3
    assert bool((energies[1:] <= energies[:-1] + 1e-10).all())
    assert float((energies[0] - energies[-1]).min()) > 0
    fixed = torch.softmax(-unary + 0.8 * torch.bmm(kernel, result.assignments), 2)
    assert torch.allclose(fixed, result.assignments, atol=1e-6)  # a fixed point of the update
    assert torch.allclose(laplacian_energy(result.assignments, unary, kernel, 0.8), energies[-1])


def test_knn_affinity_is_binary_without_self(device):
    points = torch.tensor([[[0.0], [1.0], [3.0], [10.0]]], device=device)
    affinity = knn_affinity(points, 3)[0]
    assert affinity.tolist() == [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 0]]
    assert torch.equal(affinity.diagonal(), torch.zeros(4, device=device))
    assert affinity.sum(1).tolist() == [2.0] * 4
    assert affinity[3].tolist() == [0.0, 1.0, 1.0, 0.0]


def _softmax(logits):
    shifted = np.exp(logits - logits.max(-1, keepdims=True))
    return shifted / shifted.sum(-1, keepdims=True)


def _energy(y, unary, affinity, lam):
    return (y * unary).sum() - lam / 2 * (y * (affinity @ y)).sum() + (y * np.log(y)).sum()


def test_one_bound_update_and_its_energy_equal_the_written_out_formulas():
    rng = np.random.default_rng(0)
    unary = rng.uniform(0, 3, size=(6, 3))
    affinity = (rng.uniform(size=(6, 6)) < 0.4).astype(float)  # binary, not symmetric, as the kNN graph
    np.fill_diagonal(affinity, 0)
    result = laplacian_shot(
        torch.from_numpy(unary)[None], torch.from_numpy(affinity)[None], lam=0.8, max_iterations=1
    )
    start = _softmax(-unary)
    expected = _softmax(-unary + 0.8 * affinity @ start)
    assert result.iterations == 1 and len(result.energies) == 2
    np.testing.assert_allclose(result.assignments[0].numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(
        [float(e[0]) for e in result.energies],
        [_energy(start, unary, affinity, 0.8), _energy(expected, unary, affinity, 0.8)],
        rtol=1e-12,
    )
    assert np.abs(expected - start).max() > 0.05  # the pairwise term moved the assignments


def test_a_converged_task_stops_while_the_others_go_on():
    generator = torch.Generator().manual_seed(1)
    points = torch.randn(2, 8, 3, generator=generator, dtype=torch.float64)
    unary = torch.rand(2, 8, 3, generator=generator, dtype=torch.float64) * 2
    affinity = torch.exp(-torch.cdist(points, points).square())
    affinity[0] = 0.0  # task 0 has no pairwise term: its first update changes nothing, E stays put
    result = laplacian_shot(unary, affinity, lam=1.0, max_iterations=50, tolerance=1e-10)
    assert 2 < result.iterations < 50
    assert torch.equal(result.assignments[0], torch.softmax(-unary[0], 1))
    assert all(float(e[0]) == float(result.energies[0][0]) for e in result.energies)
    alone = laplacian_shot(unary[1:], affinity[1:], lam=1.0, max_iterations=50, tolerance=1e-10)
    assert alone.iterations == result.iterations
    torch.testing.assert_close(result.assignments[1:], alone.assignments, rtol=0, atol=0)
    capped = laplacian_shot(unary, affinity, lam=1.0, max_iterations=2, tolerance=1e-10)
    assert capped.iterations == 2 and not torch.allclose(capped.assignments[1], result.assignments[1])


def _episode(queries=9, seed=0):
    rng = np.random.default_rng(seed)
    centres = 1.5 * rng.normal(size=(3, 4))
    labels = np.array([0, 0, 1, 2, 2])
    support = centres[labels] + rng.normal(size=(5, 4))
    query = centres[np.arange(queries) % 3] + rng.normal(size=(queries, 4))
    return FewShotBatch(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3
    )


def test_without_links_or_without_lambda_it_is_nearest_prototype():
    batch = _episode()
    nearest = NearestPrototype().predict_proba(batch)  # softmax(−‖q − m‖) to the support means
    for changes in ({"knn": 1}, {"knn": 3, "lam": 0.0}):
        plain = LaplacianShot(rectify=False, squared=False, **changes).predict_proba(batch)
        torch.testing.assert_close(plain, nearest, rtol=0, atol=1e-14)
    squared = LaplacianShot(rectify=False, knn=1).predict_proba(batch)
    torch.testing.assert_close(squared, batch.nearest_prototype_proba(2.0), rtol=0, atol=1e-14)
    linked = LaplacianShot(rectify=False, squared=False, knn=3, lam=2.0).predict_proba(batch)
    assert float((linked - nearest).abs().max()) > 1e-3
    assert LaplacianShot(rectify=False).reads_prototypes() and not LaplacianShot().reads_prototypes()


def test_permuting_the_queries_permutes_the_predictions():
    batch = _episode(queries=12, seed=2)
    order = torch.from_numpy(np.random.default_rng(3).permutation(12))
    direct = LaplacianShot(knn=3).predict_proba(batch)
    moved = FewShotBatch(batch.support, batch.support_labels, batch.query[:, order], 3)
    torch.testing.assert_close(
        LaplacianShot(knn=3).predict_proba(moved), direct[:, order], rtol=0, atol=1e-12
    )


def test_the_affinity_links_at_most_every_other_query_and_none_for_one_neighbour():
    points = torch.tensor([[[0.0], [1.0], [3.0]]], dtype=torch.float64)
    everyone = torch.ones(3, 3, dtype=torch.float64) - torch.eye(3, dtype=torch.float64)
    assert torch.equal(knn_affinity(points, 10)[0], everyone)
    assert torch.equal(knn_affinity(points, 1)[0], torch.zeros(3, 3, dtype=torch.float64))
    # each query's nearest other query; not symmetrized (2 links 1, 1 does not link 2)
    assert knn_affinity(points, 2)[0].tolist() == [[0, 1, 0], [1, 0, 0], [0, 1, 0]]


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"lam": -0.1}, ValueError, "lam must be >= 0, got -0.1"),
        ({"knn": 0}, ValueError, "knn must be an integer >= 1, got 0"),
        ({"knn": 2.0}, TypeError, "knn must be an integer, got float"),
        ({"iterations": 0}, ValueError, "iterations must be an integer >= 1, got 0"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        LaplacianShotSettings(**changes)


@pytest.mark.parametrize("offset", [0.0, 1e3])
def test_knn_affinity_picks_the_neighbours_of_the_difference_form_distances(offset):
    """320 points of 384 features (a 20-way 1-shot task with 15 queries a class), far from the origin or not:
    the product form on centred float64 points picks the neighbours the difference form does."""
    generator = torch.Generator().manual_seed(4)
    points = torch.randn(2, 320, 384, generator=generator) + offset
    distances = torch.cdist(points.double(), points.double(), compute_mode="donot_use_mm_for_euclid_dist")
    distances.diagonal(dim1=1, dim2=2).fill_(float("inf"))
    expected = torch.zeros_like(points[..., :320]).scatter_(
        2, distances.topk(6, 2, largest=False).indices, 1.0
    )
    affinity = knn_affinity(points, 7)
    assert affinity.dtype == torch.float32 and torch.equal(affinity, expected)
