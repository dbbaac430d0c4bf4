import math

import numpy as np
import pytest
import torch

from pdenets.operators import (
    DiffusionOperator,
    UnstableStepSizeError,
    diffuse,
    graph_laplacian,
    heat_semigroup,
    knn_gaussian_weights,
)

from ..conftest import cycle_weights, random_symmetric_weights


@pytest.mark.parametrize("layout", ["dense", "sparse", "edge_list"])
def test_r_steps_equal_matrix_power(layout, device):
    weights = random_symmetric_weights(40, 0.2, seed=2, device=device)
    graph = {
        "dense": weights,
        "sparse": weights.to_sparse(),
        "edge_list": (weights.nonzero().T, weights[weights != 0]),
    }[layout]
    step_size = 0.9 / weights.sum(1).max().item()
    features = torch.randn(40, 3, 2, dtype=torch.float64).to(device)
    propagation = torch.eye(40, dtype=torch.float64, device=device) - step_size * graph_laplacian(
        weights, sparse=False
    )
    expected = torch.einsum("ij,jab->iab", torch.linalg.matrix_power(propagation, 7), features)
    ours = diffuse(features, graph, step_size=step_size, num_steps=7, num_nodes=40)
    assert torch.allclose(ours, expected, atol=1e-12)


def test_cycle_fourier_modes_are_exact_eigenfunctions(device):
    """On C_n, cos(2πkj/n) has eigenvalue λ_k = 2 − 2cos(2πk/n): r Euler steps multiply it by (1 − γλ_k)^r,
    the heat flow by e^{−λ_k t}."""
    n, k, step_size, steps = 16, 3, 0.2, 25
    weights = cycle_weights(n, device=device)
    nodes = torch.arange(n, dtype=torch.float64, device=device)
    mode = torch.cos(2 * math.pi * k * nodes / n)[:, None]
    eigenvalue = 2 - 2 * math.cos(2 * math.pi * k / n)
    euler = diffuse(mode, weights.to_sparse(), step_size=step_size, num_steps=steps)
    assert torch.allclose(euler, (1 - step_size * eigenvalue) ** steps * mode, atol=1e-13)
    time = step_size * steps
    assert torch.allclose(
        heat_semigroup(mode, weights, time), math.exp(-eigenvalue * time) * mode, atol=1e-13
    )


def test_explicit_euler_converges_to_heat_flow_at_first_order(device):
    weights = cycle_weights(20, device=device)
    features = torch.randn(20, 2, dtype=torch.float64).to(device)
    exact = heat_semigroup(features, weights, 1.0)
    errors = []
    for steps in (10, 20, 40, 80):
        approx = diffuse(features, weights, step_size=1.0 / steps, num_steps=steps)
        errors.append((approx - exact).norm().item())
    ratios = [errors[i] / errors[i + 1] for i in range(3)]
    assert all(1.8 < r < 2.2 for r in ratios)  # error ∝ γ


def test_symmetric_diffusion_conserves_the_mean(device):
    weights = random_symmetric_weights(30, 0.3, device=device)
    features = torch.randn(30, 4, dtype=torch.float64).to(device)
    out = diffuse(features, weights.to_sparse(), step_size=0.5 / weights.sum(1).max().item(), num_steps=50)
    assert torch.allclose(out.sum(0), features.sum(0), atol=1e-12)


def test_sparse_and_dense_paths_agree_and_gradcheck(device):
    weights = knn_gaussian_weights(
        torch.randn(25, 2, dtype=torch.float64).to(device), 5, sigma=1.0, normalization="row"
    )
    features = torch.randn(25, 3, dtype=torch.float64).to(device).requires_grad_()
    sparse_op = DiffusionOperator(weights, 0.8)
    dense_op = DiffusionOperator(weights.to_dense(), 0.8)
    assert torch.allclose(sparse_op.apply(features, 4), dense_op.apply(features, 4), atol=1e-14)
    assert torch.autograd.gradcheck(lambda x: sparse_op.apply(x, 3), (features,))
    assert torch.autograd.gradgradcheck(lambda x: sparse_op.apply(x, 2), (features,))
    assert torch.autograd.gradcheck(lambda x: dense_op.apply(x, 3), (features,))


def test_operator_follows_feature_dtype_and_caches_matrices(device):
    operator = DiffusionOperator(cycle_weights(6, device=device).to_sparse(), 0.25)
    single = operator.apply(torch.ones(6, 1, device=device), 2)
    assert single.dtype == torch.float32
    first = operator.propagation.scipy(np.float32)
    assert operator.propagation.scipy(np.float32) is first
    double = operator.apply(torch.ones(6, 1, dtype=torch.float64, device=device), 2)
    # rows of I − γL sum to 1
    assert torch.allclose(double, torch.ones(6, 1, dtype=torch.float64, device=device))


def test_sparse_matrix_product_matches_scipy_and_dense(device):
    from pdenets.operators import SparseMatrix

    weights = random_symmetric_weights(30, 0.2, device=device)
    weights[0, 5] = 0.7  # not symmetric: the backward must use the transpose
    matrix = SparseMatrix(weights.to_sparse())
    dense = torch.randn(30, 5, dtype=torch.float64).to(device).requires_grad_()
    result = matrix.matmul(dense)
    assert torch.allclose(result, weights @ dense)
    assert np.allclose(result.detach().cpu().numpy(), matrix.scipy(np.float64) @ dense.detach().cpu().numpy())
    assert torch.autograd.gradcheck(matrix.matmul, (dense,))
    wide = torch.randn(30, 300, dtype=torch.float64).to(device)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)  # the SciPy route on the CPU
        single = matrix.matmul(wide)
    finally:
        torch.set_num_threads(threads)
    assert torch.allclose(single, weights @ wide)
    with pytest.raises(ValueError, match="cannot multiply"):
        matrix.matmul(torch.randn(29, 5, dtype=torch.float64).to(device))


@pytest.mark.parametrize(
    "features, steps, message",
    [
        (torch.randn(5, 2, dtype=torch.float64), 1, "5 rows but the graph has 6"),
        (torch.randn(6, 2, dtype=torch.float64), -1, "num_steps"),
        (torch.full((6, 2), float("nan"), dtype=torch.float64), 1, "NaN/inf"),
    ],
)
def test_bad_inputs(features, steps, message, device):
    with pytest.raises(ValueError, match=message):
        diffuse(features.to(device), cycle_weights(6, device=device), step_size=0.25, num_steps=steps)


def test_heat_semigroup_needs_symmetric_weights(device):
    with pytest.raises(ValueError, match="symmetric"):
        heat_semigroup(
            torch.ones(3, 1, dtype=torch.float64, device=device),
            torch.tensor([[0, 1, 0], [0, 0, 1], [1, 0, 0]], dtype=torch.float64, device=device),
            1.0,
        )


def test_sparse_operator_keeps_one_csr_and_is_its_own_transpose(device):
    """A sparse A is stored once (the CSR of its products, 32-bit indices); a symmetric A is its own
    transpose."""
    weights = random_symmetric_weights(30, density=0.2, device=device).to_sparse()
    operator = DiffusionOperator(weights, step_size=0.05)
    assert operator._matrix is None and operator.propagation._csr.col_indices().dtype == torch.int32
    # device: needs SparseMatrix._transposed to find a symmetric matrix its own transpose off the CPU too
    # (it compares the CSR with its transpose only in the SciPy branch, on the CPU)
    assert operator.propagation.T is operator.propagation
    dense = DiffusionOperator(weights.to_dense(), step_size=0.05).matrix()
    torch.testing.assert_close(operator.matrix().to_dense(), dense, rtol=0, atol=1e-15)
    directed = DiffusionOperator(torch.triu(weights.to_dense(), 1).to_sparse(), step_size=0.05)
    assert directed.propagation.T is not directed.propagation
    torch.testing.assert_close(
        directed.propagation.T.to_dense(), directed.matrix().to_dense().T, rtol=0, atol=0
    )


def test_gradient_reaches_sparse_weights_that_require_it(device):
    """Weights with requires_grad get the same gradient whether they are given dense or sparse (a sparse
    tensor's gradient lives on its stored entries)."""
    base = random_symmetric_weights(12, density=0.3, device=device)
    features = torch.randn(12, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    grads = []
    for sparse in (False, True):
        weights = base.clone().requires_grad_(True)
        operator = DiffusionOperator(
            weights.to_sparse() if sparse else weights, step_size=0.1, check_stability=False
        )
        operator.apply(features, 3).square().sum().backward()
        grads.append(weights.grad)
    stored = base != 0
    assert grads[1][stored].abs().sum() > 0
    torch.testing.assert_close(grads[1][stored], grads[0][stored], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_csr_weights_build_the_same_operator_without_a_coo_copy(dtype, device):
    """CPU CSR weights take the CSR-only construction (elsewhere the general one): the same A, bound and
    products as from COO."""
    weights = random_symmetric_weights(40, density=0.15, seed=3, device=device).to(dtype)
    weights[5, 5] = 5.0  # a heavy self-loop: the bound counts only the off-diagonal degree
    from_coo = DiffusionOperator(weights.to_sparse(), step_size=0.1)
    from_csr = DiffusionOperator(weights.to_sparse_csr(), step_size=0.1)
    # device: needs SparseMatrix._transposed to find a symmetric matrix its own transpose off the CPU too
    assert from_csr._matrix is None and from_csr.propagation.T is from_csr.propagation
    assert from_csr.bound == pytest.approx(from_coo.bound, rel=1e-6)
    tolerance = 1e-6 if dtype == torch.float32 else 1e-14
    torch.testing.assert_close(
        from_csr.matrix().to_dense(), from_coo.matrix().to_dense(), rtol=tolerance, atol=tolerance
    )
    x = torch.randn(40, 3, dtype=dtype, generator=torch.Generator().manual_seed(1)).to(device)
    torch.testing.assert_close(from_csr.apply(x, 5), from_coo.apply(x, 5), rtol=tolerance, atol=tolerance)
    with pytest.raises(ValueError, match="negative entries"):
        DiffusionOperator((-weights).to_sparse_csr(), step_size=0.1)
    with pytest.raises(UnstableStepSizeError):  # beyond the Gershgorin bound: the general path decides
        DiffusionOperator(weights.to_sparse_csr(), step_size=10.0)


@pytest.mark.parametrize("layout", ["dense", "sparse given order", "sparse rcm order"])
def test_power_is_r_products_of_the_matrix_and_of_its_transpose(layout):
    """On a directed graph (``A ≠ Aᵀ``), in float64: ``power(X, r)`` is ``A^r X`` and with ``transpose``
    ``(Aᵀ)^r X``, whatever order the rows are stored in; ``r = 0`` gives ``X``; a negative ``r`` is
    refused."""
    generator = torch.Generator().manual_seed(5)
    weights = torch.rand(30, 30, generator=generator, dtype=torch.float64)
    weights = weights * (torch.rand(30, 30, generator=generator, dtype=torch.float64) < 0.15)
    weights.fill_diagonal_(0.0)
    graph = weights if layout == "dense" else weights.to_sparse()
    order = "rcm" if "rcm" in layout else "given"
    operator = DiffusionOperator(graph, step_size=0.05, node_order=order)
    matrix = operator.matrix()
    matrix = matrix.to_dense() if matrix.is_sparse else matrix
    assert not torch.allclose(matrix, matrix.T)
    features = torch.randn(30, 4, generator=generator, dtype=torch.float64)
    for transpose in (False, True):
        step = matrix.T if transpose else matrix
        expected = torch.linalg.matrix_power(step, 3) @ features
        assert torch.allclose(operator.power(features, 3, transpose=transpose), expected, atol=1e-12)
    assert torch.equal(operator.power(features, 0), features)
    with pytest.raises(ValueError, match="num_steps"):
        operator.power(features, -1)
