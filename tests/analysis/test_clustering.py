"""K-means finds well-separated clusters exactly, never ends above the objective it started from, is seeded,
and survives copies of one point; typicality is the inverse mean distance to the nearest points of the
same cluster (computed here by brute force), 0 for a cluster of one; bad input is refused in one line."""

import pytest
import torch

from pdenets.analysis.clustering import kmeans, typicality


def _blobs(sizes=(40, 25, 10), spread=0.3, seed=0):
    generator = torch.Generator().manual_seed(seed)
    centres = torch.tensor([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]], dtype=torch.float64)
    points = torch.cat(
        [
            centre + spread * torch.randn(size, 2, generator=generator, dtype=torch.float64)
            for centre, size in zip(centres, sizes)
        ]
    )
    truth = torch.cat([torch.full((size,), index) for index, size in enumerate(sizes)])
    return points, truth


def _objective(points, labels, centres):
    return float(((points - centres[labels]) ** 2).sum())


def test_kmeans_finds_separated_clusters_and_lowers_the_objective_it_started_from():
    points, truth = _blobs()
    labels, centres = kmeans(points, 3, seed=0)
    pairs = {(int(t), int(c)) for t, c in zip(truth, labels)}
    assert len(pairs) == 3 and len({c for _, c in pairs}) == 3  # one cluster a blob, exactly
    for cluster in range(3):
        assert torch.allclose(centres[cluster], points[labels == cluster].mean(0))
    one, _ = kmeans(points, 3, seed=0, max_iterations=1)
    one_centres = torch.stack([points[one == c].mean(0) for c in range(3)])
    assert _objective(points, labels, centres) <= _objective(points, one, one_centres) + 1e-12


def test_kmeans_is_seeded_and_keeps_the_best_of_its_restarts():
    generator = torch.Generator().manual_seed(1)
    points = torch.randn(200, 3, generator=generator, dtype=torch.float64)
    first, centres = kmeans(points, 8, seed=3)
    again, _ = kmeans(points, 8, seed=3)
    other, _ = kmeans(points, 8, seed=4)
    assert torch.equal(first, again) and not torch.equal(first, other)
    single = [kmeans(points, 8, seed=seed, restarts=1) for seed in range(6)]
    best, best_centres = kmeans(points, 8, seed=0, restarts=6)
    assert _objective(points, best, best_centres) <= min(_objective(points, *run) for run in single) * 1.05


def test_kmeans_takes_copies_of_one_point_and_as_many_clusters_as_points():
    points = torch.tensor([[1.0, 1.0]] * 5 + [[4.0, 0.0]], dtype=torch.float64)
    labels, centres = kmeans(points, 2, seed=0)
    assert len(set(labels[:5].tolist())) == 1 and labels[5] != labels[0]
    labels, _ = kmeans(points, 6, seed=0)  # more clusters than distinct points: some stay empty
    assert labels.shape == (6,) and bool((labels >= 0).all() & (labels < 6).all())


def test_typicality_is_the_inverse_mean_distance_to_the_nearest_of_the_cluster():
    points, truth = _blobs(sizes=(12, 7, 1))
    values = typicality(points, truth, n_top=4)
    for index in range(20):
        same = torch.nonzero(truth == truth[index]).flatten()
        same = same[same != index]
        if len(same) == 0:
            assert values[index] == 0.0  # a cluster of one: nothing around it
            continue
        distances = (points[same] - points[index]).norm(dim=1).sort().values[: min(4, len(same))]
        assert float(values[index]) == pytest.approx(1.0 / float(distances.mean()), rel=1e-9)
    assert typicality(torch.zeros(3, 2), torch.zeros(3, dtype=torch.long)).max() > 1e300  # copies: finite


def test_bad_points_clusters_and_neighbours_are_refused():
    points = torch.randn(5, 2)
    for bad, match in (
        (torch.ones(5), "an \\(N, d\\) floating matrix"),
        (torch.ones(5, 2, dtype=torch.long), "floating matrix"),
        (torch.tensor([[0.0, float("nan")]]), "NaN or infinite"),
    ):
        with pytest.raises(ValueError, match=match):
            kmeans(bad, 1)
    for clusters in (0, 6, True, 2.0):
        with pytest.raises(ValueError, match=r"num_clusters must be a whole number in \[1, 5\]"):
            kmeans(points, clusters)
    with pytest.raises(ValueError, match="restarts and max_iterations"):
        kmeans(points, 2, restarts=0)
    with pytest.raises(ValueError, match=r"assignments must be \(5,\)"):
        typicality(points, torch.zeros(4, dtype=torch.long))
    with pytest.raises(ValueError, match="n_top must be a whole number ≥ 1"):
        typicality(points, torch.zeros(5, dtype=torch.long), n_top=0)
