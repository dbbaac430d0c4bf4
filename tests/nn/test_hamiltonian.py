"""HamiltonianBlock (Verlet step, exact inverse, volume preservation) and NonlocalBlock (stages, subsampling,
paths)."""

import pytest
import torch
from torch.nn import functional as F

from pdenets.nn import HamiltonianBlock


def _randomize_batch_norm(module, seed=0):
    g = torch.Generator().manual_seed(seed)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g, dtype=m.running_mean.dtype))
            m.running_var.copy_(torch.rand(m.running_var.shape, generator=g, dtype=m.running_var.dtype) + 0.5)
            m.weight.data.copy_(torch.randn(m.weight.shape, generator=g, dtype=m.weight.dtype))
    return module


# ----------------------------------------------------------------------------------------
# Hamiltonian block


def test_verlet_step_matches_its_formula_with_the_adjoint_convolution(device):
    torch.manual_seed(0)
    block = HamiltonianBlock(6, step_size=0.3, batch_norm=False).double().to(device)
    x = torch.randn(2, 6, 5, 4, dtype=torch.float64).to(device)
    y, z = x[:, :3], x[:, 3:]

    def adjoint(conv, u):  # Kᵀ u = the vector–Jacobian product of the (bias-free) convolution
        probe = torch.zeros_like(u, requires_grad=True)
        return torch.autograd.grad(F.conv2d(probe, conv.weight, padding=1), probe, u)[0]

    y1 = y + 0.3 * adjoint(block.conv1, F.relu(block.conv1(z)))
    z1 = z - 0.3 * adjoint(block.conv2, F.relu(block.conv2(y1)))
    torch.testing.assert_close(block(x), torch.cat([y1, z1], 1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("batch_norm", [False, True])
def test_inverse_is_exact_and_minus_h_is_not(batch_norm, device):
    torch.manual_seed(1)
    block = _randomize_batch_norm(HamiltonianBlock(8, step_size=0.5, batch_norm=batch_norm).double())
    block = block.to(device).eval()
    x = torch.randn(3, 8, 6, 6, dtype=torch.float64).to(device)
    out = block(x)
    torch.testing.assert_close(block.inverse(out), x, rtol=0, atol=1e-12)
    torch.testing.assert_close(block(block.inverse(x)), x, rtol=0, atol=1e-12)
    block.step_size = -0.5  # running the step backwards evaluates K1 at Z_{j+1}: not the inverse
    with torch.no_grad():
        assert float((block(out) - x).abs().max()) > 1e-3


def test_verlet_step_preserves_volume(device):
    # each half-step is a shear (Y += f(Z), Z −= g(Y)): the Jacobian determinant is exactly 1
    torch.manual_seed(2)
    block = HamiltonianBlock(2, step_size=0.8, batch_norm=False).double().to(device)
    x = torch.randn(1, 2, 3, 3, dtype=torch.float64).to(device)
    jacobian = torch.autograd.functional.jacobian(lambda v: block(v.view(1, 2, 3, 3)).flatten(), x.flatten())
    assert float(torch.linalg.det(jacobian)) == pytest.approx(1.0, abs=1e-10)
    assert (
        float((jacobian - torch.eye(18, dtype=torch.float64, device=device)).abs().max()) > 1e-2
    )  # and is not the identity


def test_hamiltonian_gradcheck_and_bad_input(device):
    torch.manual_seed(3)
    block = HamiltonianBlock(4, batch_norm=False).double().to(device)
    x = torch.randn(1, 4, 3, 3, dtype=torch.float64).to(device).requires_grad_()
    assert torch.autograd.gradcheck(block, (x,))
    with pytest.raises(ValueError, match="even"):
        HamiltonianBlock(5)
    with pytest.raises(ValueError, match=r"expects \(B, 4, H, W\)"):
        block(torch.randn(1, 6, 3, 3, dtype=torch.float64).to(device))
    with pytest.raises(ValueError, match="step_size"):
        HamiltonianBlock(4, step_size=0.0)
