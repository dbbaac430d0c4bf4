"""HamiltonianBlock (Verlet step, exact inverse, volume preservation) and NonlocalBlock (stages, subsampling,
paths)."""

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
