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


def test_laplacian_rows_sum_to_zero_and_sparse_equals_dense(device):
    weights = random_symmetric_weights(50, 0.2, device=device)
    dense = graph_laplacian(weights, sparse=False)
    sparse = graph_laplacian(weights.to_sparse())
    assert torch.allclose(sparse.to_dense(), dense)
    assert torch.allclose(dense.sum(1), torch.zeros(50, dtype=torch.float64, device=device), atol=1e-12)
    assert torch.linalg.eigvalsh(dense).min() > -1e-12  # positive semi-definite


def test_zero_eigenvalue_multiplicity_counts_components(device):
    block = cycle_weights(5, device=device)
    weights = torch.block_diag(block, block, block)
    eigenvalues = torch.linalg.eigvalsh(graph_laplacian(weights, sparse=False))
    assert int((eigenvalues.abs() < 1e-10).sum()) == 3


def test_stability_bound_values(device):
    assert stability_bound(cycle_weights(6, device=device)) == pytest.approx(0.5)  # 1/d, d = 2
    with_loops = cycle_weights(6, device=device) + 3 * torch.eye(6, dtype=torch.float64, device=device)
    assert stability_bound(with_loops) == pytest.approx(0.5)  # self weights do not count
    assert stability_bound(torch.zeros(3, 3, device=device)) == float("inf")
    row_normalized = knn_gaussian_weights(
        torch.randn(50, 2).to(device), 10, sigma=0.5, include_self=True, normalization="row"
    )
    assert stability_bound(row_normalized) >= 1.0  # paper's gamma = 1 is admissible


def test_norm_does_not_grow_at_the_bound(device):
    """γ = γ_max: symmetric W keeps ‖X‖₂, any W keeps ‖X‖∞ (rows of I − γL are convex weights)."""
    weights = symmetric_normalize(random_symmetric_weights(80, 0.1, seed=5, device=device))
    bound = stability_bound(weights)
    features = torch.randn(80, 3, dtype=torch.float64).to(device)
    operator = DiffusionOperator(weights, bound)
    current = features
    for _ in range(200):
        following = operator.apply(current)
        assert following.norm() <= current.norm() * (1 + 1e-12)
        current = following

    directed = knn_gaussian_weights(
        torch.randn(80, 2, dtype=torch.float64).to(device), 6, sigma=0.5, normalization="none"
    )
    operator = DiffusionOperator(directed, stability_bound(directed))
    current = features
    for _ in range(200):
        following = operator.apply(current)
        assert following.abs().max() <= current.abs().max() * (1 + 1e-12)
        current = following


def test_above_the_bound_diffusion_blows_up_and_is_refused(device):
    """On an even cycle the bound is sharp: γ = 1.05 / d makes the mode (−1)^i grow."""
    weights = cycle_weights(10, device=device)
    bound = stability_bound(weights)
    with pytest.raises(UnstableStepSizeError, match="exceeds the stability bound"):
        DiffusionOperator(weights, 1.05 * bound)
    with pytest.raises(UnstableStepSizeError):
        check_step_size(1.05 * bound, weights)
    operator = DiffusionOperator(weights, 1.05 * bound, check_stability=False)
    features = torch.randn(10, 1, dtype=torch.float64).to(device)
    assert operator.apply(features, 300).norm() > 100 * features.norm()


@pytest.mark.parametrize("step_size", [0.0, -0.1, float("nan"), float("inf")])
def test_non_positive_step_size_is_refused(step_size, device):
    with pytest.raises(ValueError, match="step_size"):
        DiffusionOperator(cycle_weights(4, device=device), step_size)


def _star(leaves: int, device) -> torch.Tensor:
    """GCN-normalized star: a hub whose off-diagonal row sum far exceeds 1."""
    from pdenets.operators import gcn_normalize

    edges = torch.stack(
        [torch.zeros(leaves, dtype=torch.long, device=device), torch.arange(1, leaves + 1, device=device)]
    )
    edges = torch.cat([edges, edges.flip(0)], dim=1)
    return gcn_normalize((edges, None), leaves + 1, dtype=torch.float64).to_dense()


def test_spectral_bound_is_exact_for_symmetric_weights(device):
    weights = _star(30, device)
    gershgorin = stability_bound(weights)
    spectral = stability_bound(weights, method="spectral")
    laplacian = graph_laplacian(weights, sparse=False)
    assert spectral == pytest.approx(2 / torch.linalg.eigvalsh(laplacian).max().item())
    assert spectral > 1.9 * gershgorin  # hubs make Gershgorin pessimistic
    # between the two bounds: accepted (symmetric W) and truly non-expansive in the 2-norm
    step = (gershgorin + spectral) / 2
    operator = DiffusionOperator(weights, step)
    features = torch.randn(31, 2, dtype=torch.float64).to(device)
    assert operator.apply(features, 200).norm() <= features.norm() * (1 + 1e-12)
    # just above the spectral bound: refused, and it does blow up
    with pytest.raises(UnstableStepSizeError, match="2/lambda_max"):
        DiffusionOperator(weights, 1.02 * spectral)
    assert (
        DiffusionOperator(weights, 1.02 * spectral, check_stability=False).apply(features, 2000).norm()
        > 10 * features.norm()
    )


def test_spectral_bound_large_graph_uses_lanczos_and_matches_dense(device):
    from pdenets.operators.laplacian import largest_laplacian_eigenvalue

    weights = random_symmetric_weights(2100, 0.003, seed=4, device=device)
    dense_value = torch.linalg.eigvalsh(graph_laplacian(weights, sparse=False)).max().item()
    assert largest_laplacian_eigenvalue(weights.to_sparse()) == pytest.approx(dense_value, rel=1e-6)


def test_non_symmetric_weights_use_gershgorin_only(device):
    weights = _star(10, device)
    weights[0, 1] = 0.0  # break symmetry
    with pytest.raises(ValueError, match="symmetric"):
        stability_bound(weights, method="spectral")
    with pytest.raises(UnstableStepSizeError, match="not symmetric"):
        DiffusionOperator(weights, 1.5 * stability_bound(weights))
    with pytest.raises(ValueError, match="method"):
        stability_bound(weights, method="exact")
