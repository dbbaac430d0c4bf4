"""The compiled dropout masks are NumPy's masks, bit for bit, wherever a block of rows starts."""

import numpy as np
import pytest
import torch

from pdenets.nn import adjoint_diffusion as adjoint_module
from pdenets.nn import mask_kernel
from pdenets.nn.adjoint_diffusion import apply_dropout_mask_
from pdenets.nn.dropout import _keep_mask, keep_threshold

pytestmark = [
    pytest.mark.skipif(not mask_kernel.available(), reason="numba is not installed"),
    pytest.mark.cpu_only("the compiled dropout masks of apply_dropout_mask_ (PCG64 bytes, CPU)"),
]


def _both(features, seed, p, row_offset, monkeypatch):
    """(compiled, NumPy) results of the same mask."""
    compiled, plain = features.clone(), features.clone()
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 0)
    apply_dropout_mask_(compiled, seed, p, row_offset)
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 1 << 62)
    apply_dropout_mask_(plain, seed, p, row_offset)
    return compiled, plain


@pytest.mark.parametrize("p", [0.25, 0.35, 0.999])  # one, two and four bytes per entry
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "rows, columns, row_offset", [(301, 64, 0), (301, 37, 1), (97, 5, 3), (40, 3, 11), (1, 3, 11)]
)
def test_compiled_masks_are_numpys(p, dtype, rows, columns, row_offset, monkeypatch):
    features = torch.randn(rows, columns, dtype=dtype, generator=torch.Generator().manual_seed(rows))
    features[0, 0], features[-1, -1] = float("inf"), -2.0  # 0·inf is NaN in both, −0 kept in both
    compiled, plain = _both(features, 1234 + rows, p, row_offset, monkeypatch)
    assert torch.equal(compiled.isnan(), plain.isnan())
    assert torch.equal(compiled.nan_to_num(), plain.nan_to_num())
    assert torch.equal(compiled.signbit(), plain.signbit())


def test_compiled_masks_match_an_independent_draw(monkeypatch):
    # the reference: fast_dropout's whole-matrix mask of the same seed (NumPy, no row blocks), rows 3…
    rows, columns, p, seed = 50, 24, 0.25, 77
    dtype, threshold, keep = keep_threshold(p)
    whole = _keep_mask((rows + 3, columns), seed, dtype, threshold)[3:]
    expected = torch.from_numpy(np.where(whole, np.float32(1 / keep), np.float32(0)))
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 0)
    out = apply_dropout_mask_(torch.ones(rows, columns), seed, p, row_offset=3)
    assert torch.equal(out, expected)


def test_masks_do_not_depend_on_the_threads(monkeypatch):
    features = torch.randn(513, 19)
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 0)
    results = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(torch, "get_num_threads", lambda threads=threads: threads)
        results.append(apply_dropout_mask_(features.clone(), 5, 0.35, 2))
    assert torch.equal(results[0], results[1]) and torch.equal(results[0], results[2])


def test_large_masks_take_the_compiled_pass(monkeypatch):
    calls = []
    original = mask_kernel.apply_mask
    monkeypatch.setattr(mask_kernel, "apply_mask", lambda *args: calls.append(args) or original(*args))
    apply_dropout_mask_(torch.ones(mask_kernel.MIN_ENTRIES // 64, 64), 3, 0.25)
    apply_dropout_mask_(torch.ones(10, 64), 3, 0.25)  # small: NumPy's pass
    assert len(calls) == 1
    assert adjoint_module.mask_kernel is mask_kernel


@pytest.mark.parametrize("p", [0.25, 0.35, 0.999])
@pytest.mark.parametrize("width, row_offset, threads", [(64, 0, 2), (7, 3, 3), (5, 1, 1), (13, 0, 2)])
def test_a_masked_product_is_the_product_then_the_mask(p, width, row_offset, threads, monkeypatch):
    import scipy.sparse as sp

    from pdenets.nn.adjoint_diffusion import _mask_of
    from pdenets.operators import spmm_kernel

    matrix = sp.random(211, 150, density=0.05, format="csr", random_state=width, dtype=np.float32)
    dense = np.random.default_rng(width).standard_normal((150, width)).astype(np.float32)
    indptr, indices = matrix.indptr.astype(np.int32), matrix.indices.astype(np.int32)
    reference = torch.from_numpy(spmm_kernel.csr_product(indptr, indices, matrix.data, dense))
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 1 << 62)  # NumPy's masks: an independent draw
    apply_dropout_mask_(reference, 21, p, row_offset)
    mask = _mask_of(21, p, row_offset, reference)
    fused = spmm_kernel.masked_csr_product(indptr, indices, matrix.data, dense, mask, threads=threads)
    assert torch.equal(torch.from_numpy(fused), reference)


@pytest.mark.parametrize("position", ["before", "after"])
def test_fused_steps_give_the_numbers_of_separate_ones(position, monkeypatch):
    # the adjoint diffusion of a large graph fuses each mask into the product before it; forced here on a
    # small one, value and gradient equal the steps with the masks applied after each product
    from pdenets.nn.adjoint_diffusion import adjoint_diffusion
    from pdenets.operators import DiffusionOperator, SparseMatrix
    from pdenets.operators import sparse as sparse_module

    monkeypatch.setattr(sparse_module, "SCIPY_MIN_OUTPUT", 0)  # the compiled kernel for every product
    monkeypatch.setattr(mask_kernel, "MIN_ENTRIES", 0)
    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(0, 400, (2, 2400), generator=generator)
    weights = torch.sparse_coo_tensor(edges, torch.rand(2400, generator=generator), (400, 400))
    operator = DiffusionOperator((weights + weights.t()).coalesce().to_sparse_csr(), 0.05)
    features = torch.randn(400, 9, generator=generator)
    results = []
    for fuse in (True, False):
        if not fuse:
            monkeypatch.setattr(SparseMatrix, "masked_product", lambda self, dense, mask, out=None: None)
        torch.manual_seed(4)
        x = features.clone().requires_grad_()
        out = adjoint_diffusion(operator, x, 5, dropout=0.35, dropout_position=position)
        (out * torch.linspace(-1, 1, 9)).square().sum().backward()
        results.append((out.detach(), x.grad))
    assert torch.equal(results[0][0], results[1][0]) and torch.equal(results[0][1], results[1][1])
    # the masks were there: the last mask is on the output (after) or on the gradient (before)
    zeros = max(float((tensor == 0).float().mean()) for tensor in results[0])
    assert zeros > 0.2
