"""Diffusion followed by a linear read-out in one function: the chain's numbers in two arrays a pass.

The reference is the chain written out with plain autograd: dense ``A``, the masks the seeds give, and
``F.linear``; it shares no code with the fused function's steps.
"""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from pdenets.models import DiffResNet
from pdenets.nn import DiffusionLayer
from pdenets.nn import adjoint_diffusion as adjoint_module
from pdenets.nn.adjoint_diffusion import adjoint_diffusion, adjoint_diffusion_readout, apply_dropout_mask_
from pdenets.nn.diffusion import has_hooks
from pdenets.operators import DiffusionOperator, knn_gaussian_weights, sparse, spmm_kernel

compiled = pytest.mark.skipif(not spmm_kernel.available(), reason="needs numba (the compiled product)")


def operator_of(num_nodes=40, node_order="given", dense=False, seed=0):
    # a non-symmetric A (row-normalized kNN weights): a forgotten transpose shows
    generator = torch.Generator().manual_seed(seed)
    points = torch.randn(num_nodes, 3, generator=generator, dtype=torch.float64)
    weights = knn_gaussian_weights(points, n_top=5, sigma=1.0, normalization="row")
    weights = weights.to_dense() if dense else weights.to_sparse()
    return DiffusionOperator(weights, step_size=0.4, node_order=node_order)


def chain(operator, features, weight, bias, seeds, p, before):
    """``linear(X_r)`` with plain autograd through dense steps and the seeds' masks (drawn on the rows in
    the order the operator stores them)."""
    matrix = operator.matrix().to_dense().to(features.dtype)

    def mask(seed):
        drawn = apply_dropout_mask_(torch.ones_like(features.detach()), seed, p)
        return drawn if operator.position is None else drawn[operator.position.long()]

    out = features
    for seed in seeds:
        if before and seed is not None:
            out = out * mask(seed)
        out = matrix @ out
        if not before and seed is not None:
            out = out * mask(seed)
    return F.linear(out, weight, bias)


@pytest.fixture
def kernel_on_small_graphs(monkeypatch):
    """The compiled product (the one that writes into a spare array) on graphs of a few dozen nodes."""
    monkeypatch.setattr(sparse, "SCIPY_MIN_OUTPUT", 1)


def leaves(num_nodes=40, width=6, classes=3, seed=1):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(num_nodes, width, generator=generator, dtype=torch.float64)
    weight = torch.randn(classes, width, generator=generator, dtype=torch.float64)
    bias = torch.randn(classes, generator=generator, dtype=torch.float64)
    return x.requires_grad_(), weight.requires_grad_(), bias.requires_grad_()


def gradients(output, inputs, seed=5):
    upstream = torch.randn(output.shape, generator=torch.Generator().manual_seed(seed), dtype=output.dtype)
    return torch.autograd.grad((output * upstream).sum(), inputs)


@pytest.mark.parametrize("layout", ["sparse", "dense", "compiled", "compiled-rcm"])
@pytest.mark.parametrize("p,position", [(0.0, "after"), (0.3, "after"), (0.3, "before")])
@pytest.mark.parametrize("consume", [False, True])
def test_value_and_gradients_are_the_chains(layout, p, position, consume, request):
    if layout.startswith("compiled"):
        if not spmm_kernel.available():
            pytest.skip("needs numba (the compiled product)")
        request.getfixturevalue("kernel_on_small_graphs")
    operator = operator_of(node_order="rcm" if layout == "compiled-rcm" else "given", dense=layout == "dense")
    assert (operator.order is not None) == (layout == "compiled-rcm")
    seeds = [7 * k + 1 if p > 0 else None for k in range(5)]
    x, weight, bias = leaves()
    expected = chain(operator, x, weight, bias, seeds, p, position == "before")
    expected_grads = gradients(expected, (x, weight, bias))
    # the read-out's input is made here, as a network makes its activation (consume: its memory is reused)
    activation = x * 1.0
    ours = adjoint_diffusion_readout(
        operator, activation, 5, weight, bias, dropout=p, dropout_position=position, seeds=seeds,
        consume_input=consume,
    )  # fmt: skip
    ours_grads = gradients(ours, (x, weight, bias))
    if layout.startswith("compiled"):  # the product that takes a spare array: it took the input's memory
        assert torch.equal(activation, x) != consume
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)
    for got, want in zip(ours_grads, expected_grads):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    if p > 0:  # the masks did something
        assert not torch.allclose(ours, chain(operator, x, weight, bias, [None] * 5, p, False))


@compiled
def test_the_steps_write_into_two_arrays_and_never_into_an_input_they_do_not_own(
    kernel_on_small_graphs, monkeypatch
):
    operator = operator_of()
    written = []
    original = sparse.SparseMatrix.product

    def recording(self, dense, out=None):
        result = original(self, dense, out)
        written.append(result.data_ptr())
        return result

    monkeypatch.setattr(sparse.SparseMatrix, "product", recording)
    x = torch.randn(40, 6, dtype=torch.float64)
    kept = x.clone()
    adjoint_module._steps(operator, x, [None] * 6, 0.0, False, transpose=False, owned=False)
    assert torch.equal(x, kept)  # not the caller's to write into
    assert len(set(written)) == 2 and x.data_ptr() not in written
    written.clear()
    result = adjoint_module._steps(operator, x, [None] * 6, 0.0, False, transpose=False, owned=True)
    assert len(set(written)) == 2 and x.data_ptr() in written  # the input's memory is one of the two
    assert result.data_ptr() == x.data_ptr()  # six steps: the last one wrote into the input's memory
    torch.testing.assert_close(result, torch.linalg.matrix_power(operator.matrix().to_dense(), 6) @ kept)


@compiled
def test_a_users_gradient_and_input_are_left_intact(kernel_on_small_graphs):
    operator = operator_of(node_order="rcm")
    x = torch.randn(40, 6, dtype=torch.float64, requires_grad=True)
    kept = x.detach().clone()
    upstream = torch.randn(40, 6, dtype=torch.float64)
    upstream_kept = upstream.clone()
    adjoint_diffusion(operator, x, 5, dropout=0.3, dropout_position="before").backward(upstream)
    assert torch.equal(upstream, upstream_kept) and torch.equal(x.detach(), kept)
    # a tensor autograd saved (the output of exp) shares its memory: consume_input leaves it intact
    source = torch.randn(40, 6, dtype=torch.float64, requires_grad=True)
    saved = torch.exp(source)
    saved_kept = saved.detach().clone()
    weight = torch.randn(3, 6, dtype=torch.float64)
    out = adjoint_diffusion_readout(operator, saved, 5, weight, consume_input=True)
    assert torch.equal(saved.detach(), saved_kept)
    (grad,) = torch.autograd.grad(out.sum(), source)
    matrix = torch.linalg.matrix_power(operator.matrix().to_dense(), 5)
    torch.testing.assert_close(grad, saved_kept * (matrix.t() @ weight.sum(0).expand(40, 6)))


def test_a_network_gives_the_chains_numbers_and_leaves_a_hooked_activation_intact():
    torch.manual_seed(0)
    weights = operator_of(60).matrix()
    net = DiffResNet(6, 3, block="graph", num_steps=4, step_size=0.2, weights=weights, dropout=0.2).double()
    x = torch.randn(60, 6, dtype=torch.float64)

    def loss_and_grads():
        torch.manual_seed(9)  # the same masks on both paths
        loss = net(x).logsumexp(1).sum()
        return [loss.detach()] + list(torch.autograd.grad(loss, list(net.parameters())))

    fused = loss_and_grads()
    seen = []
    handle = net.blocks[-1].register_forward_hook(lambda module, inputs, output: seen.append(output))
    assert has_hooks(net.blocks[-1])
    chained = loss_and_grads()
    handle.remove()
    for got, want in zip(fused, chained):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)
    torch.manual_seed(9)
    torch.testing.assert_close(seen[0], net.blocks[-1](net.input_map(x) if net.input_map else x))


def test_hooks_anywhere_on_the_path_choose_the_chain():
    layer = DiffusionLayer(step_size=0.3, weights=operator_of(20).matrix(), dropout=0.1)
    readout = torch.nn.Linear(4, 2).double()
    x = torch.randn(20, 4, dtype=torch.float64, requires_grad=True)
    calls = []
    handle = readout.register_forward_hook(lambda module, inputs, output: calls.append(1))
    layer.read_out(x, readout).sum().backward()
    assert calls == [1]  # the hook ran: the modules were called
    handle.remove()
    assert not has_hooks(layer, readout)
    handle = torch.nn.modules.module.register_module_forward_hook(lambda *args: None)
    try:
        assert has_hooks(layer, readout)
    finally:
        handle.remove()


@compiled
def test_a_spare_array_that_cannot_take_the_product_is_refused():
    indptr = np.array([0, 1, 2], dtype=np.int32)
    indices = np.array([1, 0], dtype=np.int32)
    values = np.array([2.0, 3.0], dtype=np.float32)
    dense = np.eye(2, dtype=np.float32)
    np.testing.assert_array_equal(
        spmm_kernel.csr_product(indptr, indices, values, dense, out=np.full((2, 2), 9, np.float32)),
        [[0, 2], [3, 0]],
    )
    for out, message in [
        (np.zeros((3, 2), np.float32), "shape"),
        (np.zeros((2, 2), np.float64), "float32"),
        (np.zeros((2, 4), np.float32)[:, ::2], "C-contiguous"),
        (dense, "overlap"),
    ]:
        with pytest.raises(ValueError, match=message):
            spmm_kernel.csr_product(indptr, indices, values, dense, out=out)


def test_a_readout_needs_two_dimensional_features():
    with pytest.raises(ValueError, match="2-D"):
        adjoint_diffusion_readout(operator_of(10), torch.randn(10, 2, 3), 2, torch.randn(1, 6))
