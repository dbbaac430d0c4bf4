"""Diffusion steps with an adjoint backward: equal to autograd through the stored steps, masks redrawn
exactly."""

import pytest
import torch

from pdenets.nn import DiffusionLayer
from pdenets.nn.adjoint_diffusion import adjoint_diffusion, apply_dropout_mask_
from pdenets.nn.dropout import fast_dropout
from pdenets.operators import DiffusionOperator, knn_gaussian_weights

from ..conftest import cycle_weights


def asymmetric_operator(num_nodes=12, dense=False, seed=0, device="cpu"):
    # a non-symmetric A (row-normalized kNN weights) so that a forgotten transpose shows
    generator = torch.Generator().manual_seed(seed)
    weights = knn_gaussian_weights(
        torch.randn(num_nodes, 3, generator=generator, dtype=torch.float64).to(device),
        n_top=4,
        sigma=1.0,
        normalization="row",
    )
    weights = weights.to_dense() if dense else weights.to_sparse()
    return DiffusionOperator(weights, step_size=0.4)


def reference(operator, features, seeds, p, before):
    """The steps as plain autograd sees them, with the masks the seeds give."""
    matrix = operator.matrix().to_dense().to(features.dtype)
    out = features.reshape(features.shape[0], -1)
    for seed in seeds:
        if before and seed is not None:
            out = out * apply_dropout_mask_(torch.ones_like(out), seed, p)
        out = matrix @ out
        if not before and seed is not None:
            out = out * apply_dropout_mask_(torch.ones_like(out), seed, p)
    return out.reshape(features.shape)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("p,position", [(0.0, "after"), (0.25, "after"), (0.25, "before"), (0.35, "before")])
def test_values_and_gradients_equal_autograd_through_the_same_steps(dense, p, position, device):
    operator = asymmetric_operator(dense=dense, device=device)
    features = torch.randn(12, 2, 3, dtype=torch.float64).to(device).requires_grad_()
    seeds = [11 * k + 3 if p > 0 else None for k in range(5)]
    ours = adjoint_diffusion(operator, features, 5, dropout=p, dropout_position=position, seeds=seeds)
    expected = reference(operator, features, seeds, p, position == "before")
    weights = torch.randn(expected.shape, dtype=expected.dtype).to(device)
    (grad_ours,) = torch.autograd.grad((ours * weights).sum(), features)
    (grad_expected,) = torch.autograd.grad((expected * weights).sum(), features)
    assert ours.shape == features.shape
    torch.testing.assert_close(ours, expected, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad_ours, grad_expected, rtol=1e-12, atol=1e-12)
    if p > 0:  # the masks did something
        assert not torch.allclose(ours, adjoint_diffusion(operator, features, 5))


@pytest.mark.parametrize("position", ["after", "before"])
def test_gradcheck_with_and_without_dropout(position, device):
    operator = asymmetric_operator(device=device)
    features = torch.randn(12, 3, dtype=torch.float64).to(device).requires_grad_()
    for p in (0.0, 0.5):
        seeds = [5, 6, 7] if p else None

        def function(x):
            return adjoint_diffusion(operator, x, 3, dropout=p, dropout_position=position, seeds=seeds)

        assert torch.autograd.gradcheck(function, (features,))


@pytest.mark.cpu_only("fast_dropout's NumPy PCG64 masks, redrawn in chunks by apply_dropout_mask_ on the CPU")
@pytest.mark.parametrize("p", [0.25, 0.35, 0.999])
def test_cpu_masks_are_fast_dropouts_masks_drawn_in_chunks(p, monkeypatch):
    import pdenets.nn.adjoint_diffusion as module

    monkeypatch.setattr(
        module, "MASK_CHUNK_ENTRIES", 40
    )  # many chunks: the byte stream must continue exactly
    features = torch.randn(101, 7)
    torch.manual_seed(3)
    expected = fast_dropout(features, p)
    torch.manual_seed(3)
    seed = int(torch.randint(0, 2**62, (1,)).item())
    assert torch.equal(apply_dropout_mask_(features.clone(), seed, p), expected)


@pytest.mark.cpu_only("the two backwards draw the same masks only on the CPU (fast_dropout's NumPy masks)")
@pytest.mark.parametrize("position", ["after", "before"])
def test_layer_gives_the_stored_backwards_numbers_with_the_same_torch_seed(position):
    weights = cycle_weights(30)
    features = torch.randn(30, 8, dtype=torch.float64)
    results = {}
    for backward in ("autograd", "adjoint"):
        layer = DiffusionLayer(
            step_size=0.3,
            num_steps=6,
            weights=weights,
            dropout=0.25,
            dropout_position=position,
            backward=backward,
        )
        x = features.clone().requires_grad_()
        torch.manual_seed(7)
        out = layer(x)
        (out.square().sum()).backward()
        results[backward] = (out.detach(), x.grad)
    torch.testing.assert_close(results["adjoint"][0], results["autograd"][0], rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(results["adjoint"][1], results["autograd"][1], rtol=1e-12, atol=1e-12)


def test_masks_differ_between_steps_and_between_calls(device):
    operator = DiffusionOperator(cycle_weights(40, device=device), step_size=0.25)
    x = torch.ones(40, 16, device=device, requires_grad=True)
    torch.manual_seed(0)
    first = adjoint_diffusion(operator, x, 1, dropout=0.5)
    second = adjoint_diffusion(operator, x, 1, dropout=0.5)
    assert not torch.equal(first, second)
    seeds_seen = []
    import pdenets.nn.adjoint_diffusion as module

    original = module.apply_dropout_mask_

    def spy(features, seed, p, row_offset=0):
        seeds_seen.append(seed)
        return original(features, seed, p, row_offset)

    module.apply_dropout_mask_ = spy
    try:
        adjoint_diffusion(operator, x, 4, dropout=0.5).sum().backward()
    finally:
        module.apply_dropout_mask_ = original
    forward, backward = seeds_seen[:4], seeds_seen[4:]
    assert len(set(forward)) == 4 and backward == forward[::-1]  # each step its own mask, redrawn in reverse


def test_nothing_of_the_forward_is_kept_but_seeds(device):
    operator = DiffusionOperator(cycle_weights(50, device=device), step_size=0.25)
    x = torch.randn(50, 4).to(device).requires_grad_()
    out = adjoint_diffusion(operator, x, 20, dropout=0.5)
    node = out.grad_fn
    assert node.saved_tensors == () and len(node.seeds) == 20
    assert not any(
        isinstance(getattr(node, name), torch.Tensor) for name in ("operator", "seeds", "p", "before")
    )


def test_bad_requests(device):
    operator = DiffusionOperator(cycle_weights(10, device=device), step_size=0.25)
    with pytest.raises(ValueError, match="rows but the graph has 10 nodes"):
        adjoint_diffusion(operator, torch.randn(9, 2).to(device), 2)
    with pytest.raises(ValueError, match="one seed per step"):
        adjoint_diffusion(operator, torch.randn(10, 2).to(device), 2, dropout=0.5, seeds=[1])
    with pytest.raises(ValueError, match="dropout_position"):
        adjoint_diffusion(operator, torch.randn(10, 2).to(device), 2, dropout_position="middle")
    with pytest.raises(ValueError, match="backward"):
        DiffusionLayer(step_size=0.25, weights=cycle_weights(10, device=device), backward="stored")


def test_a_second_derivative_is_refused_at_the_first_backward_naming_the_autograd_layer(device):
    weights = cycle_weights(6, torch.float32, device=device)
    layer = DiffusionLayer(step_size=0.25, num_steps=3, weights=weights).to(device)
    x = torch.randn(6, 2).to(device).requires_grad_()
    with pytest.raises(RuntimeError) as caught:
        torch.autograd.grad(layer(x).pow(2).sum(), x, create_graph=True)
    assert str(caught.value) == (
        "the adjoint diffusion backward is first order only and cannot build a graph for a "
        'second derivative (create_graph=True): build the layer with backward="autograd"'
    )
    stored = DiffusionLayer(step_size=0.25, num_steps=3, weights=weights, backward="autograd").to(device)
    (gradient,) = torch.autograd.grad(stored(x).pow(2).sum(), x, create_graph=True)
    gradient.sum().backward()  # the advised layer gives the second derivative
    (first,) = torch.autograd.grad(layer(x).pow(2).sum(), x)  # a first derivative still works
    assert torch.allclose(first, gradient.detach())
