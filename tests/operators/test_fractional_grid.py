"""The grid fractional Laplacian against the exact value on a Gaussian, the Fourier multiplier and its
limits."""

import math

import pytest
import torch

from pdenets.operators.fractional_grid import (
    five_point_laplacian,
    fractional_laplacian_grid,
    gaussian_fractional_laplacian,
    lattice_zeta,
    spectral_fractional_laplacian,
)


def _gaussian_grid(spacing, half_width=8.0, device="cpu"):
    axis = torch.arange(-half_width, half_width + spacing / 2, spacing, dtype=torch.float64, device=device)
    points = torch.stack(torch.meshgrid(axis, axis, indexing="ij"), dim=-1)
    return points, torch.exp(-(points**2).sum(-1) / 2)


def test_lattice_zeta_equals_a_brute_force_sum(device):
    exponent, radius = 2.5, 300
    k = torch.arange(-radius, radius + 1, dtype=torch.float64, device=device)
    squared = k[:, None] ** 2 + k[None, :] ** 2
    inside = (squared > 0) & (squared <= radius**2)
    brute = squared[inside].pow(-exponent).sum()
    tail = 2 * math.pi * radius ** (2 - 2 * exponent) / (2 * exponent - 2)  # ∫_{|x|>R} |x|^{-2a} dx
    assert lattice_zeta(exponent) == pytest.approx(float(brute) + tail, rel=1e-6)


@pytest.mark.parametrize("s", [0.25, 0.5, 0.75])
def test_spectral_operator_converges_as_the_period_grows(s, device):
    # the periodic grid adds the images of the slowly decaying tail |x|^{-2-2s}: error ~ L^{-2s}
    errors = []
    for half_width in (12.0, 24.0):
        points, values = _gaussian_grid(0.25, half_width, device)
        exact = gaussian_fractional_laplacian(points, s)
        errors.append(float((spectral_fractional_laplacian(values, s, spacing=0.25) - exact).abs().max()))
    assert errors[1] < 1e-3
    assert errors[1] < errors[0] * 2 ** (-2 * s) * 1.3


@pytest.mark.parametrize("s", [0.25, 0.5, 0.75])
def test_grid_operator_converges_to_the_exact_value(s, device):
    errors = []
    for spacing in (0.5, 0.25):
        points, values = _gaussian_grid(spacing, device=device)
        exact = gaussian_fractional_laplacian(points, s)
        got = fractional_laplacian_grid(values, s, spacing)
        errors.append(float((got - exact).abs().max() / exact.abs().max()))
    assert errors[1] < 0.03
    assert errors[1] < errors[0]


def test_s_to_one_is_the_local_laplacian(device):
    _, values = _gaussian_grid(0.25, device=device)
    local = -five_point_laplacian(values, 0.25)
    for s, tolerance in ((0.99, 0.03), (0.999, 0.003)):
        got = fractional_laplacian_grid(values, s, 0.25)
        assert float((got - local).abs().max() / local.abs().max()) < tolerance


def test_gaussian_closed_form_limits(device):
    origin = torch.zeros(1, 2, dtype=torch.float64, device=device)
    # s → 1: −Δ exp(−|x|²/2) = (2 − |x|²) exp(−|x|²/2) = 2 at the origin; s → 0: the function itself
    assert float(gaussian_fractional_laplacian(origin, 0.999999)) == pytest.approx(2.0, rel=1e-5)
    assert float(
        gaussian_fractional_laplacian(torch.tensor([[1.0, 1.0]], device=device), 1e-9)
    ) == pytest.approx(math.exp(-1), rel=1e-7)
