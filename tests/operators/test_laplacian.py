import pytest
import torch

from pdenets.operators import (
    DiffusionOperator,
    UnstableStepSizeError,
    check_step_size,
    graph_laplacian,
    knn_gaussian_weights,
    stability_bound,
    symmetric_normalize,
)

from ..conftest import cycle_weights, random_symmetric_weights


def test_laplacian_rows_sum_to_zero_and_sparse_equals_dense():
    weights = random_symmetric_weights(50, 0.2)
    dense = graph_laplacian(weights, sparse=False)
    sparse = graph_laplacian(weights.to_sparse())
    assert torch.allclose(sparse.to_dense(), dense)
    assert torch.allclose(dense.sum(1), torch.zeros(50, dtype=torch.float64), atol=1e-12)
    assert torch.linalg.eigvalsh(dense).min() > -1e-12  # positive semi-definite


def test_zero_eigenvalue_multiplicity_counts_components():
    block = cycle_weights(5)
    weights = torch.block_diag(block, block, block)
    eigenvalues = torch.linalg.eigvalsh(graph_laplacian(weights, sparse=False))
    assert int((eigenvalues.abs() < 1e-10).sum()) == 3


def test_stability_bound_values():
    assert stability_bound(cycle_weights(6)) == pytest.approx(0.5)  # 1/d, d = 2
    with_loops = cycle_weights(6) + 3 * torch.eye(6, dtype=torch.float64)
    assert stability_bound(with_loops) == pytest.approx(0.5)  # self weights do not count
    assert stability_bound(torch.zeros(3, 3)) == float("inf")
    row_normalized = knn_gaussian_weights(torch.randn(50, 2), 10, sigma=0.5, include_self=True, normalization="row")
    assert stability_bound(row_normalized) >= 1.0  # paper's gamma = 1 is admissible


def test_norm_does_not_grow_at_the_bound():
    """γ = γ_max: symmetric W keeps ‖X‖₂, any W keeps ‖X‖∞ (rows of I − γL are convex weights)."""
    weights = symmetric_normalize(random_symmetric_weights(80, 0.1, seed=5))
    bound = stability_bound(weights)
    features = torch.randn(80, 3, dtype=torch.float64)
    operator = DiffusionOperator(weights, bound)
    current = features
    for _ in range(200):
        following = operator.apply(current)
        assert following.norm() <= current.norm() * (1 + 1e-12)
        current = following

    directed = knn_gaussian_weights(torch.randn(80, 2, dtype=torch.float64), 6, sigma=0.5, normalization="none")
    operator = DiffusionOperator(directed, stability_bound(directed))
    current = features
    for _ in range(200):
        following = operator.apply(current)
        assert following.abs().max() <= current.abs().max() * (1 + 1e-12)
        current = following


def test_above_the_bound_diffusion_blows_up_and_is_refused():
    """On an even cycle the bound is sharp: γ = 1.05 / d makes the mode (−1)^i grow."""
    weights = cycle_weights(10)
    bound = stability_bound(weights)
    with pytest.raises(UnstableStepSizeError, match="exceeds the stability bound"):
        DiffusionOperator(weights, 1.05 * bound)
    with pytest.raises(UnstableStepSizeError):
        check_step_size(1.05 * bound, weights)
    operator = DiffusionOperator(weights, 1.05 * bound, check_stability=False)
    features = torch.randn(10, 1, dtype=torch.float64)
    assert operator.apply(features, 300).norm() > 100 * features.norm()


@pytest.mark.parametrize("step_size", [0.0, -0.1, float("nan"), float("inf")])
def test_non_positive_step_size_is_refused(step_size):
    with pytest.raises(ValueError, match="step_size"):
        DiffusionOperator(cycle_weights(4), step_size)
