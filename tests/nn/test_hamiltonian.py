"""HamiltonianBlock: the Verlet step against its formula (with the adjoint convolution, and in closed form for
a pointwise kernel), its exact inverse, volume preservation, the halves' roles, and bad inputs."""

import numpy as np
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


def _pointwise(conv, weight, bias):
    """A 3×3 kernel with only its centre tap: ``K z = w z + b`` and ``Kᵀ u = w u`` at every pixel."""
    with torch.no_grad():
        conv.weight.zero_()
        conv.weight[0, 0, 1, 1] = weight
        conv.bias.fill_(bias)


def test_a_pointwise_kernel_gives_the_verlet_step_in_closed_form():
    h, (w1, b1), (w2, b2) = 0.25, (1.5, -0.2), (-0.7, 0.3)
    block = HamiltonianBlock(2, step_size=h, batch_norm=False).double()
    _pointwise(block.conv1, w1, b1)
    _pointwise(block.conv2, w2, b2)
    rng = np.random.default_rng(0)
    y, z = rng.normal(size=(2, 3, 4)), rng.normal(size=(2, 3, 4))
    y1 = y + h * w1 * np.maximum(w1 * z + b1, 0)  # the bias is not part of the adjoint Kᵀ
    z1 = z - h * w2 * np.maximum(w2 * y1 + b2, 0)
    x = torch.tensor(np.stack([y, z], axis=1))
    with torch.no_grad():
        out = block(x).numpy()
    np.testing.assert_allclose(out[:, 0], y1, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(out[:, 1], z1, rtol=1e-14, atol=1e-15)
    with torch.no_grad():
        np.testing.assert_allclose(block.inverse(torch.tensor(out)).numpy(), x.numpy(), rtol=0, atol=1e-14)


def test_the_first_half_moves_by_the_second_alone_linearly_in_the_step_size():
    """``Y_{j+1} − Y_j = h K_1ᵀσ(K_1 Z_j + b_1)`` does not depend on ``Y`` and doubles with ``h``; the second
    half, evaluated at the moved ``Y``, does not double."""
    generator = torch.Generator().manual_seed(0)
    small = HamiltonianBlock(4, step_size=0.3, batch_norm=False).double()
    large = HamiltonianBlock(4, step_size=0.6, batch_norm=False).double()
    large.load_state_dict(small.state_dict())
    with torch.no_grad():
        for conv in (small.conv1, small.conv2, large.conv1, large.conv2):
            conv.bias.fill_(0.1)
        x = torch.randn(2, 4, 5, 5, generator=generator, dtype=torch.float64)
        other = x.clone()
        other[:, :2] = torch.randn(2, 2, 5, 5, generator=generator, dtype=torch.float64)  # another Y, same Z
        moved_small, moved_large = small(x) - x, large(x) - x
        torch.testing.assert_close(moved_large[:, :2], 2 * moved_small[:, :2], rtol=1e-13, atol=1e-14)
        torch.testing.assert_close((small(other) - other)[:, :2], moved_small[:, :2], rtol=0, atol=1e-14)
        assert float((moved_large[:, 2:] - 2 * moved_small[:, 2:]).abs().max()) > 1e-3


def test_a_fresh_block_has_zero_biases_so_a_zero_second_half_leaves_the_first_unchanged():
    block = HamiltonianBlock(4, step_size=0.5, batch_norm=False).double()
    assert all(not conv.bias.detach().any() for conv in (block.conv1, block.conv2))
    x = torch.cat(
        [torch.randn(1, 2, 4, 4, dtype=torch.float64), torch.zeros(1, 2, 4, 4, dtype=torch.float64)], 1
    )
    with torch.no_grad():
        out = block(x)
    assert torch.equal(out[:, :2], x[:, :2]) and float(out[:, 2:].abs().max()) > 0
    assert repr(block).startswith("HamiltonianBlock(\n  channels=4, step_size=0.5")


def test_a_block_inverts_a_stack_of_blocks_taken_in_reverse_order():
    torch.manual_seed(7)
    blocks = [HamiltonianBlock(6, step_size=0.4).double().eval() for _ in range(3)]
    x = torch.randn(2, 6, 5, 5, dtype=torch.float64)
    with torch.no_grad():
        out = x
        for block in blocks:
            out = block(out)
        for block in reversed(blocks):
            out = block.inverse(out)
    torch.testing.assert_close(out, x, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: HamiltonianBlock(0), ValueError, "channels"),
        (
            lambda: HamiltonianBlock(3),
            ValueError,
            "channels must be even \\(split into Y and Z halves\\), got 3",
        ),
        (lambda: HamiltonianBlock(4, step_size=-0.1), ValueError, "step_size"),
        (
            lambda: HamiltonianBlock(2)(torch.ones(1, 2, 3, 3, dtype=torch.long)),
            TypeError,
            "must be float32 or float64",
        ),
        (
            lambda: HamiltonianBlock(2)(torch.ones(2, 3, 3)),
            ValueError,
            "expects \\(B, 2, H, W\\), got \\(2, 3, 3\\)",
        ),
        (lambda: HamiltonianBlock(2).inverse(torch.ones(1, 4, 3, 3)), ValueError, "expects \\(B, 2, H, W\\)"),
    ],
    ids=["no channels", "odd", "negative step", "integers", "no batch", "inverse of another width"],
)
def test_bad_settings_and_inputs_are_refused_by_name(make, error, message):
    with pytest.raises(error, match=message):
        make()
