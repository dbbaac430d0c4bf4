"""Nonlocal PIDE operators: constants, kernels and terms against entry-wise references, fast == naive."""

import math

import pytest
import torch

from pdenets.operators.nonlocal_ops import (
    EULER_GAMMA,
    NONLOCAL_OPERATORS,
    NORMALIZERS,
    fractional_constant,
    inverse_fractional_constant,
    log_constant,
    nonlocal_apply,
    nonlocal_kernel,
)


def _inputs(n=7, m=5, d=3, c=2, batch=2, seed=0, requires_grad=False, device="cpu"):
    g = torch.Generator().manual_seed(seed)
    tensors = [
        torch.randn(batch, rows, cols, generator=g, dtype=torch.float64).to(device)
        for rows, cols in ((n, d), (m, d), (m, c), (n, c))
    ]
    return [t.requires_grad_(requires_grad) for t in tensors]


# ----------------------------------------------------------------------------------------
# constants


def test_constants_have_their_closed_forms(device):  # Python floats: the same on every device
    assert fractional_constant(1, 0.5) == pytest.approx(1 / math.pi, rel=1e-14)  # (−Δ)^{1/2} on R: 1/π P.V.∫
    assert fractional_constant(2, 0.5) == pytest.approx(1 / (2 * math.pi), rel=1e-14)
    assert inverse_fractional_constant(3, 1.0) == pytest.approx(
        1 / (4 * math.pi), rel=1e-14
    )  # Newton potential
    assert inverse_fractional_constant(2, 0.5) == pytest.approx(
        1 / (2 * math.pi), rel=1e-14
    )  # Riesz potential
    assert log_constant(2) == pytest.approx(1 / (4 * math.pi), rel=1e-14)  # −(1/2π) log r = c_2 (−2 log r)


def test_fractional_constant_tends_to_the_local_laplacian_scaling(device):  # Python floats, as above
    # c_{2,s} ~ 4(1 − s)/π as s → 1 (the singular integral becomes −Δ)
    for s in (0.99, 0.999, 0.9999):
        assert fractional_constant(2, s) / (4 * (1 - s) / math.pi) == pytest.approx(1.0, abs=3 * (1 - s))


@pytest.mark.parametrize(
    "call",
    [
        lambda: fractional_constant(2, 1.0),
        lambda: fractional_constant(2, 0.0),
        lambda: inverse_fractional_constant(2, 1.0),
    ],
)
def test_constants_refuse_orders_outside_their_range(call, device):  # Python floats, as above
    with pytest.raises(ValueError, match="needs 0 < s"):
        call()


# ----------------------------------------------------------------------------------------
# kernels and terms against entry-wise loops


def _reference(theta, phi, values, centres, operator, normalizer, lam, s, n=2):
    """T_i of the operator table, one entry at a time in Python floats."""
    batch, rows, _ = theta.shape
    out = torch.zeros_like(centres)
    constant = {
        "fractional": fractional_constant(n, s),
        "inverse-fractional": inverse_fractional_constant(n, s),
        "log": log_constant(n),
    }.get(operator, 1.0)
    for b in range(batch):
        for i in range(rows):
            weights = []
            for j in range(phi.shape[1]):
                dot = float(theta[b, i] @ phi[b, j])
                distance = float((theta[b, i] - phi[b, j]).norm())
                weights.append(
                    {
                        "diffusion-dot": lam * dot,
                        "diffusion-gaussian": math.exp(lam * dot),
                        "fractional": lam / distance ** (n + 2 * s),
                        "inverse-fractional": lam / distance ** (n - 2 * s),
                        "log": -2 * lam * math.log(distance) - EULER_GAMMA,
                    }[operator]
                )
            norm = sum(weights) if normalizer == "row-sum" else phi.shape[1]
            total = torch.zeros(centres.shape[-1], dtype=torch.float64, device=centres.device)
            for j, w in enumerate(weights):
                if operator.startswith("diffusion"):
                    total += w * (values[b, j] - centres[b, i])
                elif operator == "fractional":
                    total += w * (centres[b, i] - values[b, j])
                else:
                    total += w * values[b, j]
            out[b, i] = constant * total / norm
    return out


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
@pytest.mark.parametrize("normalizer", NORMALIZERS)
@pytest.mark.parametrize("path", ["naive", "fast"])
def test_terms_match_the_entrywise_definition(operator, normalizer, path, device):
    theta, phi, values, centres = _inputs(device=device)
    got = nonlocal_apply(
        theta, phi, values, centres, operator, lam=0.7, s=0.3, normalizer=normalizer, path=path, chunk_rows=3
    )
    expected = _reference(theta, phi, values, centres, operator, normalizer, lam=0.7, s=0.3)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
@pytest.mark.parametrize("normalizer", NORMALIZERS)
def test_fast_path_equals_naive_path_forward_and_backward(operator, normalizer, device):
    naive_inputs = _inputs(n=23, m=11, d=4, c=3, requires_grad=True, seed=1, device=device)
    fast_inputs = [t.detach().clone().requires_grad_() for t in naive_inputs]
    naive = nonlocal_apply(*naive_inputs, operator, normalizer=normalizer, path="naive")
    fast = nonlocal_apply(*fast_inputs, operator, normalizer=normalizer, path="fast", chunk_rows=5)
    torch.testing.assert_close(fast, naive, rtol=1e-10, atol=1e-12)
    weights = torch.randn(naive.shape, dtype=naive.dtype).to(device)
    (naive * weights).sum().backward()
    (fast * weights).sum().backward()
    for a, b in zip(naive_inputs, fast_inputs):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("operator", NONLOCAL_OPERATORS)
@pytest.mark.parametrize("path", ["naive", "fast"])
def test_gradcheck(operator, path, device):
    inputs = _inputs(n=4, m=3, d=2, c=2, batch=1, requires_grad=True, seed=2, device=device)
    assert torch.autograd.gradcheck(lambda *t: nonlocal_apply(*t, operator, path=path, chunk_rows=3), inputs)


def test_kernel_exponents_and_signs(device):
    theta = torch.tensor([[[0.0, 0.0]]], dtype=torch.float64, device=device)
    phi = torch.tensor([[[2.0, 0.0]]], dtype=torch.float64, device=device)  # distance 2
    assert float(nonlocal_kernel(theta, phi, "fractional", lam=1.0, s=0.25)) == pytest.approx(2**-2.5)
    assert float(nonlocal_kernel(theta, phi, "inverse-fractional", lam=1.0, s=0.25)) == pytest.approx(2**-1.5)
    assert float(nonlocal_kernel(theta, phi, "log", lam=0.5)) == pytest.approx(-math.log(2) - EULER_GAMMA)
    # the fractional Laplacian of a bump is positive at its top: T_i > 0 where X_i exceeds every V_j
    values = torch.zeros(1, 1, 1, dtype=torch.float64, device=device)
    centres = torch.ones(1, 1, 1, dtype=torch.float64, device=device)
    assert float(nonlocal_apply(theta, phi, values, centres, "fractional")) > 0


@pytest.mark.parametrize("operator", ["fractional", "inverse-fractional", "log"])
@pytest.mark.parametrize("path", ["naive", "fast"])
def test_equal_embeddings_give_finite_values_and_gradients(operator, path, device):
    theta, phi, values, centres = _inputs(n=4, m=4, d=3, c=2, batch=1, seed=3, device=device)
    phi = phi.clone()
    phi[0, 1] = theta[0, 2]  # a zero distance: the singular entry is dropped
    theta.requires_grad_()
    phi.requires_grad_()
    kernel = nonlocal_kernel(theta, phi, operator)
    assert float(kernel[0, 2, 1].detach()) == 0.0
    out = nonlocal_apply(theta, phi, values, centres, operator, path=path, chunk_rows=2)
    out.sum().backward()
    assert torch.isfinite(out).all() and torch.isfinite(theta.grad).all() and torch.isfinite(phi.grad).all()


def test_constant_input_map_is_finite_everywhere(device):
    # a constant image: every query equals every key, every singular kernel entry is 0
    theta = torch.ones(1, 9, 4, dtype=torch.float64, device=device, requires_grad=True)
    phi = torch.ones(1, 3, 4, dtype=torch.float64, device=device, requires_grad=True)
    values = torch.ones(1, 3, 2, dtype=torch.float64, device=device)
    centres = torch.ones(1, 9, 2, dtype=torch.float64, device=device)
    for operator in ("fractional", "inverse-fractional", "log"):
        out = nonlocal_apply(theta, phi, values, centres, operator, normalizer="row-sum", path="fast")
        out.sum().backward()
        assert torch.equal(out, torch.zeros_like(out)) and torch.isfinite(theta.grad).all()


def test_bad_arguments_are_named(device):
    theta, phi, values, centres = _inputs(device=device)
    with pytest.raises(ValueError, match="operator"):
        nonlocal_apply(theta, phi, values, centres, "fractonal")
    with pytest.raises(ValueError, match="normalizer"):
        nonlocal_apply(theta, phi, values, centres, "log", normalizer="sum")
    with pytest.raises(ValueError, match="shapes do not fit"):
        nonlocal_apply(theta, phi[..., :2], values, centres, "log")
    with pytest.raises(TypeError, match="theta"):
        nonlocal_apply(theta.long(), phi, values, centres, "log")


@pytest.mark.cpu_only(
    "PyTorch's fused flash-attention CPU kernel in float32 (CUDA's takes half precision only)"
)
def test_embedded_gaussian_runs_pytorchs_fused_cpu_kernel():
    # the fused (flash) kernel keeps memory O(N); it refuses mixed widths and strided inputs, which the
    # operator pads and copies: forcing the backend raises if the math fallback would run instead
    from torch.nn.attention import SDPBackend, sdpa_kernel

    theta, phi, values, centres = (t.float() for t in _inputs(n=40, m=12, d=3, c=5, seed=4))
    strided = torch.randn(2, 5, 12).transpose(1, 2)  # values as NonlocalBlock passes them: a transposed view
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        fast = nonlocal_apply(theta, phi, strided, centres, "diffusion-gaussian", normalizer="row-sum")
    naive = nonlocal_apply(
        theta, phi, strided, centres, "diffusion-gaussian", normalizer="row-sum", path="naive"
    )
    torch.testing.assert_close(fast, naive, rtol=1e-5, atol=1e-6)
