"""Noise injection is the heat equation at t = σ²; dropout is a diffusion term with coefficient p/(1−p)·h²."""

import math

import pytest
import torch
from torch import nn

from pdenets.nn import (
    RandomizedSmoothing,
    gaussian_smoothing,
    sine_heat_solution,
)


class Sine(nn.Module):
    def __init__(self, omega):
        super().__init__()
        self.omega = omega

    def forward(self, x):
        return torch.sin(x @ self.omega).unsqueeze(-1)


def test_smoothed_sine_matches_the_heat_semigroup_within_the_monte_carlo_bound(device):
    omega = torch.tensor([1.5, -0.5, 2.0], dtype=torch.float64, device=device)
    x = torch.randn(6, 3, dtype=torch.float64).to(device)
    sigma = 0.6
    smooth = RandomizedSmoothing(Sine(omega), sigma=sigma, num_samples=40_000, confidence=0.999)
    smooth = smooth.to(device).eval()
    # the noise is drawn where x is, with a generator of that device (on the CPU: the one used so far)
    estimate = smooth.estimate(x, generator=torch.Generator(device=device).manual_seed(0))
    exact = sine_heat_solution(x, omega, smooth.diffusion_time).unsqueeze(-1)
    error = (estimate.mean - exact).abs()
    assert (error <= estimate.half_width).all()
    # the bound is the Monte Carlo error's scale, not vacuous: σ-noise changes the value far more than it
    assert estimate.half_width.max() < 0.02
    assert (
        sine_heat_solution(x, omega, 0.0).unsqueeze(-1) - exact
    ).abs().max() > 10 * estimate.half_width.max()
    # a wrong diffusion time (t = σ instead of σ²) is outside the interval
    assert (
        (estimate.mean - sine_heat_solution(x, omega, sigma).unsqueeze(-1)).abs() > estimate.half_width
    ).any()


def test_closed_form_solves_the_heat_equation_with_one_half(device):
    omega = torch.tensor([0.7, 1.3], dtype=torch.float64, device=device)
    x = torch.randn(4, 2, dtype=torch.float64).to(device)
    t, step = 0.3, 1e-4
    time_derivative = (sine_heat_solution(x, omega, t + step) - sine_heat_solution(x, omega, t - step)) / (
        2 * step
    )
    laplacian = torch.zeros(4, dtype=torch.float64, device=device)
    for axis in range(2):
        shift = torch.zeros(2, dtype=torch.float64, device=device)
        shift[axis] = 1e-3
        laplacian += (
            sine_heat_solution(x + shift, omega, t)
            - 2 * sine_heat_solution(x, omega, t)
            + sine_heat_solution(x - shift, omega, t)
        ) / 1e-6
    torch.testing.assert_close(time_derivative, 0.5 * laplacian, atol=1e-5, rtol=1e-4)


def test_probability_output_uses_hoeffding_and_stays_in_the_simplex(device):
    model = nn.Linear(3, 4).double().to(device)
    smooth = RandomizedSmoothing(model, sigma=0.5, num_samples=500, output="probabilities").to(device).eval()
    estimate = smooth.estimate(torch.randn(2, 3, dtype=torch.float64).to(device))
    torch.testing.assert_close(estimate.mean.sum(-1), torch.ones(2, dtype=torch.float64, device=device))
    expected = math.sqrt(math.log(2 / 0.01) / (2 * 500))
    torch.testing.assert_close(
        estimate.half_width, torch.full((2, 4), expected, dtype=torch.float64, device=device)
    )


def test_linear_model_is_unchanged_by_smoothing_and_training_mode_injects_noise(device):
    model = nn.Linear(3, 2).double().to(device)
    x = torch.randn(5, 3, dtype=torch.float64).to(device)
    smooth = RandomizedSmoothing(model, sigma=1.0, num_samples=2000).to(device).eval()
    # the noise is drawn where x is, with a generator of that device (on the CPU: the one used so far)
    estimate = smooth.estimate(x, generator=torch.Generator(device=device).manual_seed(1))
    assert ((estimate.mean - model(x)).abs() <= estimate.half_width).all()
    smooth.train()
    assert not torch.allclose(smooth(x), model(x))
    torch.testing.assert_close(RandomizedSmoothing(model, sigma=0.0).to(device).eval()(x), model(x))


def test_smoothing_bad_inputs(device):
    with pytest.raises(ValueError, match="sigma"):
        RandomizedSmoothing(nn.Linear(2, 2), sigma=-1.0)
    with pytest.raises(ValueError, match="num_samples"):
        RandomizedSmoothing(nn.Linear(2, 2), sigma=1.0, num_samples=1)
    with pytest.raises(TypeError, match="model must be an nn.Module"):
        RandomizedSmoothing(lambda x: x, sigma=1.0)
    with pytest.raises(ValueError, match="one output row per input row"):
        gaussian_smoothing(lambda z: z.sum(), torch.zeros(1, 2, device=device), sigma=1.0, num_samples=10)
    with pytest.raises(ValueError, match="non-finite"):
        gaussian_smoothing(
            lambda z: z.sum(1) / 0 * 0, torch.zeros(1, 2, device=device), sigma=1.0, num_samples=10
        )
    with pytest.raises(ValueError, match="bounds"):
        gaussian_smoothing(
            lambda z: z.sum(1), torch.zeros(1, 2, device=device), sigma=1.0, num_samples=10, bounds=(1.0, 0.0)
        )
