"""SparseMatrix: one CSR copy, the same products through every kernel, its transpose kept (itself when
symmetric)."""

import numpy as np
import pytest
import torch

from pdenets.operators import sparse
from pdenets.operators.sparse import SparseMatrix

from ..conftest import random_symmetric_weights


def _matrix(symmetric: bool, device="cpu") -> torch.Tensor:
    weights = random_symmetric_weights(50, density=0.1, seed=4, device=device)
    return (weights if symmetric else torch.triu(weights, 1) + 0.5 * torch.tril(weights, -1)).to_sparse()


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_products_match_the_dense_matrix_through_every_kernel(symmetric, layout, monkeypatch, device):
    coo = _matrix(symmetric, device)
    matrix = SparseMatrix(coo if layout == "coo" else coo.to_sparse_csr())
    assert matrix._csr.crow_indices().dtype == torch.int32 and matrix.nnz == coo._nnz()
    dense = coo.to_dense()
    x = torch.randn(50, 6, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device)
    torch_kernel = matrix.product(x)
    monkeypatch.setattr(sparse, "SCIPY_MIN_OUTPUT", 1)  # every CPU product through SciPy (elsewhere: torch's)
    scipy_kernel = matrix.product(x)
    for result in (torch_kernel, scipy_kernel):
        torch.testing.assert_close(result, dense @ x, rtol=1e-13, atol=1e-13)
    # device: needs SparseMatrix._transposed to find a symmetric matrix its own transpose off the CPU too
    assert (matrix.T is matrix) == symmetric
    torch.testing.assert_close(matrix.T.to_dense(), dense.T, rtol=0, atol=0)
    assert matrix.T.T is matrix


def test_gradient_uses_the_transpose(device):
    coo = _matrix(symmetric=False, device=device)
    matrix = SparseMatrix(coo)
    x = torch.randn(50, 4, dtype=torch.float64).to(device).requires_grad_()
    upstream = torch.randn(50, 4, dtype=torch.float64).to(device)
    (grad,) = torch.autograd.grad(matrix.matmul(x), x, upstream)
    torch.testing.assert_close(grad, coo.to_dense().T @ upstream, rtol=1e-13, atol=1e-13)


@pytest.mark.cpu_only("SparseMatrix.scipy: a SciPy view sharing the memory of the stored CPU CSR")
def test_scipy_view_shares_the_stored_indices():
    matrix = SparseMatrix(_matrix(symmetric=True).to(torch.float32))
    view = matrix.scipy(np.float32)
    assert np.shares_memory(view.indices, matrix._csr.col_indices().numpy())
    assert np.shares_memory(view.data, matrix._csr.values().numpy())


@pytest.mark.cpu_only("the 64-bit index arrays are NumPy arrays shared with the CSR tensor")
def test_the_stored_32_bit_copy_lets_the_64_bit_indices_go():
    """``values()`` of a CSR tensor is a view whose base is the whole tensor: the stored copy must not keep
    it, or the 64-bit indices it replaces stay in memory beside it."""
    import gc
    import weakref

    csr = _matrix(symmetric=False).to_sparse_csr()
    indices = csr.col_indices().numpy().astype(np.int64)
    pointers = csr.crow_indices().numpy().astype(np.int64)
    given = torch.sparse_csr_tensor(
        torch.from_numpy(pointers), torch.from_numpy(indices), csr.values(), csr.shape, check_invariants=False
    )
    gone = [weakref.ref(indices), weakref.ref(pointers)]
    matrix = SparseMatrix(given)
    del given, indices, pointers
    gc.collect()
    assert [reference() is None for reference in gone] == [True, True]
    assert torch.equal(matrix.to_dense(), csr.to_dense())
