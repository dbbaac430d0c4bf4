"""Line-shape and optimal-transport scores against their definitions, brute force and scipy."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import wasserstein_distance

from pdenets.analysis.transport import (
    line_shape_ratio,
    line_shape_score,
    optimal_assignment,
    optimal_transport_score,
    segment_lengths,
    segment_proportions,
    theorem1_lower_bound,
    track_distance,
    wasserstein2_squared,
)

#: why the optimal-transport tests run on the CPU alone
EXACT_ASSIGNMENT_ON_THE_CPU = (
    "the exact assignment behind OTS and W2 runs on NumPy cost matrices (lap, scipy.optimize, POT)"
)


def test_straight_tracks_score_one_whatever_the_segment_lengths(device):
    start, direction = torch.randn(5, 1, 7, dtype=torch.float64), torch.randn(5, 1, 7, dtype=torch.float64)
    start, direction = start.to(device), direction.to(device)
    times = torch.tensor([0.0, 0.1, 0.15, 0.7, 1.0, 3.0], dtype=torch.float64, device=device)[None, :, None]
    tracks = start + times * direction
    ones = torch.ones(5, dtype=torch.float64, device=device)
    torch.testing.assert_close(line_shape_ratio(tracks), ones)
    torch.testing.assert_close(line_shape_score(tracks), ones)


def test_zigzag_values_from_the_definitions(device):
    # up-right, down-right, ... : segments (1, ±1); LSR = n√2 / n = √2 for even n; LSS from the unit steps
    zigzag = torch.tensor(
        [[0.0, 0.0], [1.0, 1.0], [2.0, 0.0], [3.0, 1.0], [4.0, 0.0]], dtype=torch.float64, device=device
    )
    assert float(line_shape_ratio(zigzag)) == pytest.approx(math.sqrt(2))
    assert float(line_shape_score(zigzag)) == pytest.approx(math.sqrt(2))
    # one long last segment hides the zigzag from LSR but not from LSS (the paper's reason for LSS)
    long_last = torch.tensor(
        [[0.0, 0.0], [0.1, 0.1], [0.2, 0.0], [100.0, 0.0]], dtype=torch.float64, device=device
    )
    lsr, lss = float(line_shape_ratio(long_last)), float(line_shape_score(long_last))
    units = torch.tensor([[1, 1], [1, -1], [1, 0]], dtype=torch.float64, device=device)
    units = units / units.norm(dim=1, keepdim=True)
    assert lsr < 1.002 and lss == pytest.approx(3 / float(units.sum(0).norm()))
    torch.testing.assert_close(
        segment_proportions(long_last), segment_lengths(long_last)[0] / segment_lengths(long_last).sum()
    )


def test_degenerate_tracks_follow_the_conventions_and_never_give_nan(device):
    still = torch.zeros(1, 4, 3, dtype=torch.float64, device=device)
    assert float(line_shape_ratio(still)) == 1.0 and float(line_shape_score(still)) == 1.0
    # a zero-length middle segment
    paused = torch.tensor([[[0.0], [1.0], [1.0], [2.0]]], dtype=torch.float64, device=device)
    assert float(line_shape_score(paused)) == 1.0 and float(line_shape_ratio(paused)) == 1.0
    loop = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]], dtype=torch.float64, device=device)
    assert math.isinf(float(line_shape_ratio(loop))) and math.isinf(float(line_shape_score(loop)))
    with pytest.raises(ValueError, match="at least two points"):
        line_shape_score(torch.zeros(3, 1, 2, device=device))
    with pytest.raises(ValueError, match="NaN"):
        line_shape_ratio(torch.tensor([[[0.0], [float("nan")]]], device=device))


@pytest.mark.cpu_only(EXACT_ASSIGNMENT_ON_THE_CPU)
def test_ots_is_one_for_the_identity_and_a_monotone_map_in_one_dimension():
    x = torch.randn(200, 5, dtype=torch.float64)
    assert optimal_transport_score(x, x) == 1.0
    line = torch.randn(300, dtype=torch.float64)
    assert optimal_transport_score(line, torch.exp(line) + 2 * line) == 1.0
    assert optimal_transport_score(line, -line) < 0.05  # decreasing: the optimal map reverses the order


@pytest.mark.cpu_only(EXACT_ASSIGNMENT_ON_THE_CPU)
@pytest.mark.parametrize("seed", range(5))
def test_assignment_and_w2_equal_a_brute_force_search_over_permutations(seed):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(6, 3, dtype=torch.float64, generator=generator)
    y = torch.randn(6, 3, dtype=torch.float64, generator=generator)
    cost = ((x[:, None] - y[None]) ** 2).sum(-1).numpy()
    best = min(itertools.permutations(range(6)), key=lambda perm: cost[np.arange(6), perm].sum())
    score, assignment = optimal_transport_score(x, y, return_assignment=True)
    assert assignment.tolist() == list(best)
    assert score == np.mean(np.asarray(best) == np.arange(6))
    assert wasserstein2_squared(x, y) == pytest.approx(cost[np.arange(6), best].mean())


@pytest.mark.cpu_only(EXACT_ASSIGNMENT_ON_THE_CPU)
def test_w2_in_one_dimension_is_the_sorted_matching_and_agrees_with_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=400), rng.gamma(2.0, size=400)
    assert wasserstein2_squared(x, y) == pytest.approx(np.mean((np.sort(x) - np.sort(y)) ** 2))
    # the optimal assignment in 1-D is the same for every convex cost: its |·| mean is scipy's W1
    _, assignment = optimal_transport_score(x, y, return_assignment=True)
    assert np.mean(np.abs(x - y[assignment])) == pytest.approx(wasserstein_distance(x, y))


@pytest.mark.cpu_only(EXACT_ASSIGNMENT_ON_THE_CPU)
def test_w2_in_two_dimensions_agrees_with_pot_and_every_solver_finds_the_optimum():
    ot = pytest.importorskip("ot")
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(150, 2)), rng.normal(loc=1.0, size=(150, 2)) * [2.0, 0.5]
    weights = np.full(150, 1 / 150)
    reference = ot.emd2(weights, weights, ot.dist(x, y))  # squared Euclidean cost
    for solver in ("scipy", "pot", "lapjv", "auto"):
        assert wasserstein2_squared(x, y, solver=solver) == pytest.approx(reference, rel=1e-10)


def test_theorem1_bound_holds_on_straight_tracks_of_an_optimal_map(device):
    generator = torch.Generator().manual_seed(1)
    matrix = torch.randn(3, 3, dtype=torch.float64, generator=generator).to(device)
    # T = ∇(½ xᵀAx) with A ≻ 0: optimal
    spd = matrix @ matrix.T + 0.1 * torch.eye(3, dtype=torch.float64, device=device)
    points = torch.randn(40, 3, dtype=torch.float64, generator=generator).to(device)
    images = points @ spd
    # the exact assignment works on NumPy cost matrices: the points go to the CPU for it
    assert optimal_transport_score(points.cpu(), images.cpu()) == 1.0
    times = torch.linspace(0, 1, 201, dtype=torch.float64, device=device)[None, :, None]
    tracks = (1 - times) * points[:, None] + times * images[:, None]
    for p, q in itertools.combinations(range(12), 2):
        bound = theorem1_lower_bound(points[p], points[q], images[p], images[q])
        assert track_distance(tracks[p], tracks[q]) >= bound - 1e-12
    assert theorem1_lower_bound(points[0], points[0], images[0], images[0]) == 0.0
    # tight when ⟨ΔT, Δx⟩ = 0: |Δx| = 3, |ΔT| = 4 gives 3·4/5, attained at t = 9/25 on the straight tracks
    x_p, x_q, t_p, t_q = (
        torch.tensor(v, dtype=torch.float64, device=device)
        for v in ([3.0, 0.0], [0.0, 0.0], [0.0, 4.0], [0.0, 0.0])
    )
    assert theorem1_lower_bound(x_p, x_q, t_p, t_q) == pytest.approx(2.4)
    grid = torch.linspace(0, 1, 26, dtype=torch.float64, device=device)[:, None]
    assert track_distance((1 - grid) * x_p + grid * t_p, (1 - grid) * x_q + grid * t_q) == pytest.approx(2.4)


def test_solvers_and_bad_inputs(device):
    cost = np.array([[4.0, 1.0, 3.0], [2.0, 0.0, 5.0], [3.0, 2.0, 2.0]])
    assert optimal_assignment(cost).tolist() == [1, 0, 2]
    with pytest.raises(ValueError, match="solver must be one of"):
        optimal_assignment(cost, "hungarian")
    with pytest.raises(ValueError, match="square"):
        optimal_assignment(np.ones((2, 3)))
    # the optimal-transport functions refuse bad tensors before the assignment, wherever the tensors are
    with pytest.raises(ValueError, match="same shape"):
        optimal_transport_score(torch.randn(5, 3).to(device), torch.randn(5, 4).to(device))
    with pytest.raises(ValueError, match="at least 2 points"):
        optimal_transport_score(torch.randn(1, 3).to(device), torch.randn(1, 3).to(device))
    with pytest.raises(ValueError, match="NaN"):
        wasserstein2_squared(
            torch.tensor([[0.0], [float("nan")]], device=device), torch.zeros(2, 1, device=device)
        )
    with pytest.raises(ValueError, match="same shape"):
        track_distance(torch.zeros(3, 2, device=device), torch.zeros(4, 2, device=device))


def test_nonsense_inputs_are_refused_before_any_large_allocation(monkeypatch, device):
    zeros, ones = torch.zeros(3, device=device), torch.ones(3, device=device)
    with pytest.raises(ValueError, match="x_q hold NaN"):
        theorem1_lower_bound(zeros, torch.tensor([0.0, float("nan"), 1.0], device=device), zeros, ones)
    with pytest.raises(ValueError, match="image_p and image_q must have the same shape"):
        theorem1_lower_bound(zeros, ones, zeros, torch.ones(4, device=device))
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", "10M")  # 2,000 points: two 32 MB cost matrices
    with pytest.raises(
        ValueError, match="exact assignment of 2000 points needs .* more than the memory budget"
    ):
        optimal_transport_score(torch.randn(2000, 2).to(device), torch.randn(2000, 2).to(device))
