"""NonlocalBlock: its stages against their formula and, for the diffusion operators, against a NumPy
computation written here; fast and naive paths, subsampled keys, pixel-permutation equivariance, a constant
image left unchanged, bad arguments, and mixed precision."""

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from pdenets.nn import HamiltonianBlock, NonlocalBlock
from pdenets.operators.nonlocal_ops import NONLOCAL_OPERATORS, nonlocal_apply


def _randomize_batch_norm(module, seed=0):
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g, dtype=m.running_mean.dtype))
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g, dtype=m.running_var.dtype) + 0.5)
            m.weight.data.copy_(torch.randn(m.weight.shape, generator=g, dtype=m.weight.dtype))
    return module


# ----------------------------------------------------------------------------------------
# nonlocal block


def _strips(x):
    return x.flatten(2).transpose(1, 2)


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
def test_nonlocal_block_follows_its_stage_formula(operator, device):
    torch.manual_seed(4)
    block = _randomize_batch_norm(
        NonlocalBlock(
            6, operator=operator, stages=3, step_size=0.2, lam=0.3, s=0.4, subsample=2, path="naive"
        ).double()
    )
    block = block.to(device).eval()
    x = torch.randn(2, 6, 6, 4, dtype=torch.float64).to(device)
    theta = _strips(block.theta(x))
    phi = _strips(F.max_pool2d(block.phi(x), 2))  # keys subsampled, queries not

    def term(u):
        t = nonlocal_apply(theta, phi, _strips(F.max_pool2d(u, 2)), _strips(u), operator, lam=0.3, s=0.4)
        return t.transpose(1, 2).reshape(u.shape)

    stage = x
    for outer in block.outer:  # B_m = X + h 𝒦_m[T(B_{m−1})], the kernel fixed from X
        stage = x + 0.2 * outer(term(stage))
    torch.testing.assert_close(block(x), stage, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
def test_nonlocal_block_fast_equals_naive(operator, device):
    torch.manual_seed(5)
    naive = NonlocalBlock(8, operator=operator, subsample=2, path="naive").double().to(device)
    fast = NonlocalBlock(8, operator=operator, subsample=2, path="fast").double().to(device)
    fast.load_state_dict(naive.state_dict())
    x = torch.randn(2, 8, 8, 6, dtype=torch.float64).to(device).requires_grad_()
    x_fast = x.detach().clone().requires_grad_()
    out_naive, out_fast = naive(x), fast(x_fast)
    torch.testing.assert_close(out_fast, out_naive, rtol=1e-10, atol=1e-12)
    weights = torch.randn(out_naive.shape, dtype=out_naive.dtype).to(device)
    (out_naive * weights).sum().backward()
    (out_fast * weights).sum().backward()
    torch.testing.assert_close(x_fast.grad, x.grad, rtol=1e-9, atol=1e-11)
    for (name, p), q in zip(naive.named_parameters(), fast.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-9, atol=1e-11, msg=name)


@pytest.mark.parametrize("operator", ["fractional", "log"])
def test_nonlocal_block_gradcheck_and_constant_image(operator, device):
    torch.manual_seed(6)
    block = NonlocalBlock(4, operator=operator, subsample=1, batch_norm=False).double().to(device)
    x = torch.randn(1, 4, 3, 3, dtype=torch.float64).to(device).requires_grad_()
    assert torch.autograd.gradcheck(block, (x,))
    constant = torch.ones(1, 4, 4, 4, dtype=torch.float64, device=device, requires_grad=True)  # distances 0
    out = block(constant)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(constant.grad).all()


def test_nonlocal_block_bad_arguments(device):
    with pytest.raises(ValueError, match="0 < s < 1"):
        NonlocalBlock(4, operator="fractional", s=1.0)
    with pytest.raises(ValueError, match="n/2"):
        NonlocalBlock(4, operator="inverse-fractional", s=1.0)
    with pytest.raises(ValueError, match="operator"):
        NonlocalBlock(4, operator="gauss")
    block = NonlocalBlock(4, subsample=4).to(device)
    with pytest.raises(ValueError, match="smaller than the subsampling"):
        block(torch.randn(1, 4, 2, 8).to(device))
    with pytest.raises(ValueError, match=r"expects \(B, 4, H, W\)"):
        block(torch.randn(1, 3, 8, 8).to(device))


# ----------------------------------------------------------------------------------------
# mixed precision (``--amp``): the blocks inside torch.autocast


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
def test_under_autocast_the_hamiltonian_step_takes_bfloat16_and_the_nonlocal_block_computes_in_float32(
    operator, device
):
    """A half-precision input outside autocast is refused by name; inside it, the Verlet step (convolutions
    only) runs in autocast's dtype close to float32, and the nonlocal block returns exactly its float32
    forward."""
    torch.manual_seed(6)
    hamiltonian = HamiltonianBlock(4, batch_norm=False).to(device)
    nonlocal_block = NonlocalBlock(4, operator=operator, subsample=2).to(device)
    x = torch.randn(2, 4, 8, 8).to(device)
    half = x.to(torch.bfloat16)
    for block, name in ((hamiltonian, "HamiltonianBlock"), (nonlocal_block, "NonlocalBlock")):
        with pytest.raises(TypeError, match=f"input to {name} has dtype torch.bfloat16"):
            block(half)
    kind = torch.device(device).type
    with torch.no_grad(), torch.autocast(kind, dtype=torch.bfloat16):
        stepped = hamiltonian(half)
        diffused = nonlocal_block(half)
    assert stepped.dtype == torch.bfloat16
    with torch.no_grad():
        reference = hamiltonian(half.float())
    assert float((stepped.float() - reference).abs().max()) < 0.05 * float(reference.abs().max())
    assert diffused.dtype == torch.float32
    with torch.no_grad():
        torch.testing.assert_close(diffused, nonlocal_block(half.float()), rtol=0, atol=0)


# ----------------------------------------------------------------------------------------
# the diffusion operators computed independently


def _set_conv(conv, weight, bias):
    with torch.no_grad():
        conv.weight.copy_(torch.tensor(weight, dtype=conv.weight.dtype).reshape(conv.weight.shape))
        conv.bias.copy_(torch.tensor(bias, dtype=conv.bias.dtype))


def _hand_set_block(operator, normalizer, subsample, path):
    block = NonlocalBlock(
        2,
        operator=operator,
        stages=1,
        step_size=0.3,
        lam=0.7,
        subsample=subsample,
        normalizer=normalizer,
        path=path,
        batch_norm=False,
    ).double()
    _set_conv(block.theta, [[0.8, -0.5]], [0.1])
    _set_conv(block.phi, [[-0.3, 0.9]], [-0.2])
    _set_conv(block.outer[0][0], [[1.0, 0.5], [-0.4, 1.2]], [0.05, -0.1])
    return block


def _reference(x, operator, normalizer, subsample):
    """One stage, ``X + h ReLU(W T + c)``, with ``T_i = (1/𝒩_i) Σ_j ω_ij (V_j − X_i)`` over pooled keys."""
    lam, h = 0.7, 0.3
    channels, height, width = x.shape
    strips = x.reshape(channels, -1).T  # (N, C)
    theta = strips @ np.array([0.8, -0.5]) + 0.1
    phi_map = np.tensordot(np.array([-0.3, 0.9]), x, axes=1) - 0.2  # (H, W)
    pooled_height, pooled_width = height // subsample, width // subsample

    def pool(image):  # p × p max-pooling, the keys' and values' subsampling
        cut = image[..., : pooled_height * subsample, : pooled_width * subsample]
        blocks = cut.reshape(*cut.shape[:-2], pooled_height, subsample, pooled_width, subsample)
        return blocks.max(axis=(-3, -1))

    phi = pool(phi_map).reshape(-1)  # (M,)
    values = pool(x).reshape(channels, -1).T  # (M, C)
    scores = lam * np.outer(theta, phi)  # (N, M)
    kernel = scores if operator == "diffusion-dot" else np.exp(scores)
    norm = kernel.sum(1, keepdims=True) if normalizer == "row-sum" else phi.size
    term = (kernel @ values - kernel.sum(1, keepdims=True) * strips) / norm  # Σ_j ω_ij (V_j − X_i) / 𝒩_i
    outer = np.maximum(term @ np.array([[1.0, 0.5], [-0.4, 1.2]]).T + np.array([0.05, -0.1]), 0)
    return x + h * outer.T.reshape(channels, height, width)


@pytest.mark.parametrize("path", ["fast", "naive"])
@pytest.mark.parametrize(
    "operator, normalizer, subsample, size",
    [
        ("diffusion-dot", "count", 1, (1, 3)),
        ("diffusion-dot", "count", 2, (2, 4)),
        ("diffusion-dot", "row-sum", 2, (4, 4)),
        ("diffusion-gaussian", "count", 1, (2, 3)),
        ("diffusion-gaussian", "row-sum", 2, (4, 5)),  # an odd width: the last column is no key
    ],
)
def test_the_diffusion_operators_match_a_numpy_computation_of_one_stage(
    operator, normalizer, subsample, size, path
):
    block = _hand_set_block(operator, normalizer, subsample, path)
    x = np.random.default_rng(0).normal(size=(2, *size))
    with torch.no_grad():
        out = block(torch.tensor(x)[None])[0].numpy()
    np.testing.assert_allclose(out, _reference(x, operator, normalizer, subsample), rtol=1e-12, atol=1e-13)
    assert np.abs(out - x).max() > 1e-2  # the stage moved the image


@pytest.mark.parametrize("operator", ["diffusion-dot", "fractional", "log"])
def test_without_subsampling_the_block_commutes_with_any_permutation_of_the_pixels(operator):
    """The embeddings are 1×1 convolutions and every pixel meets every other: the order of the pixels does
    not matter."""
    torch.manual_seed(3)
    block = _randomize_batch_norm(NonlocalBlock(4, operator=operator, subsample=1, stages=2).double()).eval()
    x = torch.randn(2, 4, 1, 7, dtype=torch.float64)
    order = torch.randperm(7, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        torch.testing.assert_close(block(x[..., order]), block(x)[..., order], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("operator", ["diffusion-dot", "diffusion-gaussian"])
@pytest.mark.parametrize("batch_norm", [False, True])
def test_a_fresh_diffusion_block_leaves_a_constant_image_unchanged(operator, batch_norm):
    """``V_j − X_i = 0`` everywhere: the term vanishes, the fresh 𝒦 (zero bias, batch norm at its initial
    statistics) maps 0 to 0, and every stage returns ``X``."""
    block = NonlocalBlock(3, operator=operator, stages=3, batch_norm=batch_norm).double().eval()
    constant = (
        torch.full((1, 3, 4, 6), 0.0, dtype=torch.float64) + torch.tensor([0.5, -2.0, 3.0])[:, None, None]
    )
    with torch.no_grad():
        assert torch.equal(block(constant), constant)
        assert not torch.equal(block(constant + torch.randn(1, 3, 4, 6, dtype=torch.float64)), constant)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"stages": 0}, "stages"),
        ({"step_size": 0.0}, "step_size"),
        ({"lam": -1.0}, "lam"),
        ({"subsample": 0}, "subsample"),
        ({"normalizer": "sum"}, "normalizer must be one of"),
        ({"path": "quick"}, "path must be one of"),
        ({"operator": "inverse-fractional", "s": 1.5, "n": 3}, None),  # 1.5 < n/2 = 1.5 is false
    ],
)
def test_bad_settings_are_refused_when_the_block_is_built(settings, message):
    with pytest.raises(ValueError, match=message or "0 < s < n/2 = 1.5, got s=1.5"):
        NonlocalBlock(4, **settings)


def test_an_integer_input_is_refused_and_the_settings_are_shown():
    block = NonlocalBlock(4, operator="log", stages=3, step_size=0.5, lam=0.2, subsample=1)
    with pytest.raises(TypeError, match="input to NonlocalBlock must be float32 or float64, got torch.int64"):
        block(torch.ones(1, 4, 3, 3, dtype=torch.long))
    assert (
        "channels=4, operator='log', stages=3, step_size=0.5, lam=0.2, s=0.5, subsample=1, path='fast'"
        in repr(block)
    )
