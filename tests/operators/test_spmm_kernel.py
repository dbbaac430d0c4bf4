"""The compiled CSR product equals SciPy's, and large CPU products go through it."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from pdenets.operators import SparseMatrix, spmm_kernel
from pdenets.operators import sparse as sparse_module

pytestmark = pytest.mark.skipif(spmm_kernel.numba_module() is None, reason="numba is not installed")


@pytest.mark.cpu_only("the compiled numba CSR kernel (spmm_kernel.csr_product) on NumPy arrays")
@pytest.mark.parametrize(
    "dtype, width, index_type",
    [(np.float32, 64, np.int32), (np.float64, 5, np.int64), (np.float32, 1, np.int64)],
)
def test_product_equals_scipy(dtype, width, index_type):
    generator = np.random.default_rng(width)
    matrix = sp.random(50, 40, density=0.1, format="lil", random_state=3, dtype=dtype)
    matrix[7] = 0  # an empty row gives a zero row
    matrix = matrix.tocsr()
    matrix.eliminate_zeros()
    dense = generator.standard_normal((40, width)).astype(dtype)
    indptr, indices = matrix.indptr.astype(index_type), matrix.indices.astype(index_type)
    out = spmm_kernel.csr_product(indptr, indices, matrix.data, dense)
    assert out.dtype == dtype and out.shape == (50, width) and out.flags.c_contiguous
    np.testing.assert_allclose(out, matrix @ dense, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-6)
    assert not out[7].any()
    for threads in (1, 2):  # the rows split over threads: each row's sum is computed alike
        again = spmm_kernel.csr_product(indptr, indices, matrix.data, dense, threads=threads)
        np.testing.assert_array_equal(again, out)


@pytest.mark.cpu_only("SparseMatrix routes large CPU products to the compiled numba CSR kernel")
def test_large_products_take_the_compiled_kernel(monkeypatch):
    calls = []
    original = spmm_kernel.csr_product

    def counted(*args, **kwargs):
        calls.append(args[3].shape)
        return original(*args, **kwargs)

    monkeypatch.setattr(spmm_kernel, "csr_product", counted)
    monkeypatch.setattr(sparse_module, "SCIPY_MIN_OUTPUT", 100)  # "large" from 100 output entries
    weights = torch.tensor([[0.0, 2.0, 0.0], [1.0, 0.0, 3.0], [0.0, 0.0, 4.0]])
    matrix = SparseMatrix(weights.to_sparse())
    features = torch.randn(3, 40, requires_grad=True)
    out = matrix.matmul(features)
    torch.testing.assert_close(out, weights @ features)
    out.sum().backward()
    torch.testing.assert_close(features.grad, weights.T @ torch.ones(3, 40))
    assert calls == [(3, 40), (3, 40)]  # forward and the transposed backward
    matrix.product(torch.randn(3, 20))  # 60 output entries: below the threshold, torch's kernel
    assert len(calls) == 2
    wide = torch.randn(3, sparse_module.COMPILED_MAX_COLUMNS + 1)
    torch.testing.assert_close(matrix.product(wide), weights @ wide)  # too wide: SciPy
    assert len(calls) == 2


@pytest.mark.cpu_only("PDENETS_COMPILED_SPMM switches the compiled numba CSR kernel of CPU products")
def test_the_kernel_can_be_turned_off(monkeypatch):
    """Every spelling of off turns it off (``false`` and ``off`` used to leave it on); a word that is neither
    is refused naming the variable."""
    for off in ("0", "false", "OFF", " No "):
        monkeypatch.setenv("PDENETS_COMPILED_SPMM", off)
        assert not spmm_kernel.available(), off
    for on in ("1", "true", "On", "YES", ""):
        monkeypatch.setenv("PDENETS_COMPILED_SPMM", on)
        assert spmm_kernel.available(), on
    monkeypatch.setenv("PDENETS_COMPILED_SPMM", "disabled")
    with pytest.raises(
        ValueError, match=r"^\$PDENETS_COMPILED_SPMM='disabled' is not valid: expected 1/true"
    ):
        spmm_kernel.available()


@pytest.mark.cpu_only("compiling the numba CSR kernel")
def test_compiling_a_kernel_keeps_nothing_of_its_callers_alive(monkeypatch):
    # numba's compiler leaves a reference cycle holding the frames it ran under; compiled on first use
    # inside an epoch it kept the caller's activation (4.7 GiB at 20 M nodes) alive to the end of the
    # backward pass. With the cyclic collector off, the caller's tensor must die with its frame.
    import gc
    import weakref

    monkeypatch.setattr(spmm_kernel, "_WARMED", set())
    spmm_kernel._kernel.cache_clear()  # a kernel compiled afresh in this test
    indptr, indices = np.array([0, 1, 2], dtype=np.int64), np.array([1, 0], dtype=np.int64)
    values = np.array([2.0, 3.0], dtype=np.float32)

    def caller():
        activation = torch.ones(100, 13)  # held by this frame only
        out = spmm_kernel.csr_product(indptr, indices, values, np.ones((2, 13), dtype=np.float32))
        assert out.shape == (2, 13) and out[0, 0] == 2.0
        return weakref.ref(activation)

    gc.collect()
    gc.disable()
    try:
        held = caller()
        assert held() is None
    finally:
        gc.enable()


@pytest.mark.cpu_only("madvise on a NumPy array")
def test_huge_page_advice_leaves_the_array_alone():
    array = np.zeros((1 << 24) // 4 * 5, dtype=np.float32)  # 80 MiB: advised
    spmm_kernel.advise_huge_pages(array)
    array[::4096] = 1.0
    assert float(array.sum()) == array[::4096].size
    spmm_kernel.advise_huge_pages(np.zeros(3))  # small: nothing to do
