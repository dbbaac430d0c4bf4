"""Diffusion paths against NumPy steps and brute-force L, D; the collapse to group means; medians by hand."""

import numpy as np
import pytest
import torch

from pdenets.analysis.diffusion_path import (
    DiffusionPath,
    diffusion_path,
    edges_between_groups,
    path_statistics,
    ratio_path,
)
from pdenets.operators import UnstableStepSizeError


def _two_clusters(seed=0):
    """Two groups of 4 and 5 points in R^3, each a connected random-weight graph, no edge between them."""
    rng = np.random.default_rng(seed)
    points = np.concatenate([rng.normal(size=(4, 3)), rng.normal(size=(5, 3)) + 4.0])
    groups = np.array([0] * 4 + [1] * 5)
    weights = np.zeros((9, 9))
    for members in (range(0, 4), range(4, 9)):
        members = list(members)
        for a in members:
            for b in members:
                if a < b:
                    weights[a, b] = weights[b, a] = rng.uniform(0.2, 1.0)
    return points, groups, weights


def _measure(points, groups):
    """L and D by brute force over all pairs."""
    gaps = np.linalg.norm(points[:, None] - points[None], axis=-1)
    same = groups[:, None] == groups[None]
    return gaps[~same].min(), gaps[same].max()


def test_each_step_is_one_explicit_euler_step_and_l_d_are_the_brute_force_ones(device):
    points, groups, weights = _two_clusters()
    gamma = 0.1
    path = diffusion_path(
        torch.from_numpy(points).to(device),
        torch.from_numpy(groups),  # on the CPU: moved to the points' device
        torch.from_numpy(weights).to_sparse().to(device),
        gamma,
        6,
        keep=[2, 6],
    )
    step = np.eye(9) - gamma * (np.diag(weights.sum(1)) - weights)
    current, expected_distance, expected_diameter, kept = points, [], [], {0: points}
    for s in range(7):
        if s:
            current = step @ current
        if s in (2, 6):
            kept[s] = current
        distance, diameter = _measure(current, groups)
        expected_distance.append(distance)
        expected_diameter.append(diameter)
    np.testing.assert_allclose(path.distance, expected_distance, rtol=1e-12)
    np.testing.assert_allclose(path.diameter, expected_diameter, rtol=1e-12)
    assert sorted(path.positions) == [0, 2, 6]
    for s, value in kept.items():
        np.testing.assert_allclose(path.positions[s], value, rtol=1e-12, atol=1e-14)
    # the diameter shrinks at every step (each group is connected and gamma is below the bound)
    assert all(later < earlier for earlier, later in zip(path.diameter, path.diameter[1:]))


def test_groups_collapse_to_their_means_which_diffusion_preserves(device):
    """Proposition 1's limit: D → 0 while L tends to the distance of the group means (L = Λ − W is
    symmetric, so every component keeps its mean)."""
    points, groups, weights = _two_clusters(seed=1)
    path = diffusion_path(
        torch.from_numpy(points).to(device),
        torch.from_numpy(groups).to(device),
        torch.from_numpy(weights).to(device),
        0.2,
        300,
        keep=[300],
    )
    means = [points[groups == g].mean(0) for g in (0, 1)]
    final = path.positions[300]
    for g in (0, 1):
        np.testing.assert_allclose(final[groups == g], np.broadcast_to(means[g], final[groups == g].shape))
    assert path.diameter[-1] < 1e-10 * path.diameter[0]
    assert path.distance[-1] == pytest.approx(np.linalg.norm(means[0] - means[1]), rel=1e-9)
    ratios = ratio_path(path.distance, path.diameter)
    assert ratios[-1] > 1e9 * ratios[0]


def test_no_step_measures_the_raw_points_and_the_dtype_is_kept():
    points, groups, weights = _two_clusters()
    single = torch.from_numpy(points).float()
    path = diffusion_path(single, torch.from_numpy(groups), torch.from_numpy(weights).float(), 0.1, 0)
    distance, diameter = _measure(points.astype(np.float32).astype(np.float64), groups)
    assert len(path.distance) == len(path.diameter) == 1 and list(path.positions) == [0]
    assert path.positions[0].dtype == np.float32
    assert path.distance[0] == pytest.approx(distance, rel=1e-6)
    assert path.diameter[0] == pytest.approx(diameter, rel=1e-6)
    with pytest.raises(UnstableStepSizeError):
        diffusion_path(torch.from_numpy(points), torch.from_numpy(groups), torch.from_numpy(weights), 10.0, 1)


def test_ratios_and_the_medians_over_paths_by_hand():
    ratios = ratio_path([1.0, 3.0, 2.0], [4.0, 2.0, 0.0])
    assert ratios[:2].tolist() == [0.25, 1.5] and np.isfinite(ratios[2]) and ratios[2] == 2.0 / 1e-300
    paths = {
        7: ([1.0, 2.0, 3.0], [2.0, 1.0, 1.0]),
        8: ([1.0, 1.0, 1.0], [1.0, 4.0, 0.5]),
        9: ([2.0, 6.0, 0.5], [1.0, 2.0, 0.25]),
    }
    statistics = path_statistics(paths, [0, 2])
    # step 0: L/D = 0.5, 1, 2; step 2: 3, 2, 2
    assert statistics["L_over_D_median"] == {"step_0": 1.0, "step_2": 2.0}
    assert statistics["L_over_D_per_seed"] == {
        "7": {"step_0": 0.5, "step_2": 3.0},
        "8": {"step_0": 1.0, "step_2": 2.0},
        "9": {"step_0": 2.0, "step_2": 2.0},
    }
    assert statistics["D_median"] == {"step_0": 1.0, "step_2": 0.5}
    assert statistics["L_median"] == {"step_0": 1.0, "step_2": 1.0}
    # an even number of paths: the mean of the middle two
    two = path_statistics({0: ([1.0], [1.0]), 1: ([3.0], [1.0])}, [0])
    assert two["L_over_D_median"] == {"step_0": 2.0} and two["L_median"] == {"step_0": 2.0}
    assert DiffusionPath().distance == [] and DiffusionPath().positions == {}


def test_edges_between_groups_count_stored_entries_in_each_direction():
    rows = torch.tensor([0, 1, 1, 2, 3, 0, 2])
    cols = torch.tensor([1, 0, 2, 1, 3, 3, 0])
    weights = torch.sparse_coo_tensor(torch.stack([rows, cols]), torch.ones(7), (4, 4))
    groups = torch.tensor([0, 0, 1, 1])
    # cross entries: (1, 2), (2, 1), (0, 3), (2, 0); (0, 1), (1, 0), (3, 3) stay inside a group
    assert edges_between_groups(weights, groups) == 4
    assert edges_between_groups(weights, torch.zeros(4, dtype=torch.long)) == 0
    assert edges_between_groups(weights, torch.arange(4)) == 6
    # a duplicated entry is one stored entry once coalesced
    doubled = torch.sparse_coo_tensor(torch.tensor([[1, 1], [2, 2]]), torch.ones(2), (4, 4))
    assert edges_between_groups(doubled, groups) == 1
