"""Noise injection is the heat equation at t = σ²; dropout is a diffusion term with coefficient p/(1−p)·h²."""

import math

import pytest
import torch
from torch import nn

from pdenets.nn import (
    RandomizedSmoothing,
    dropout_diffusion_coefficients,
    dropout_readout_variance,
    dropout_second_order_mean,
    gaussian_smoothing,
    sine_heat_solution,
)
from pdenets.nn.dropout import fast_dropout


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


def _dropout_samples(hidden, p, count, generator_seed=0):
    torch.manual_seed(generator_seed)
    return fast_dropout(hidden.expand(count, -1).contiguous(), p)


@pytest.mark.parametrize("p", [0.25, 0.5])
def test_readout_variance_matches_monte_carlo(p, device):
    hidden = torch.randn(16, dtype=torch.float64).to(device)
    weight = torch.randn(3, 16, dtype=torch.float64).to(device)
    samples = _dropout_samples(hidden, p, 200_000) @ weight.T
    predicted = dropout_readout_variance(hidden, weight, p)
    # the sample variance of n draws has relative standard error ≈ sqrt(2/n) (≈0.3 %; allow 5 σ plus kurtosis)
    torch.testing.assert_close(samples.var(0), predicted, rtol=0.03, atol=0)
    torch.testing.assert_close(
        samples.mean(0), weight @ hidden, atol=5 * predicted.sqrt().max() / 400, rtol=0
    )
    assert not torch.allclose(samples.var(0), predicted * (1 - p), rtol=0.03)  # the 1/(1−p) scaling matters


def test_second_order_mean_is_exact_for_quadratics(device):
    hidden = torch.randn(10, dtype=torch.float64).to(device)
    matrix = torch.randn(10, 10, dtype=torch.float64).to(device)

    def quadratic(v):
        return v @ matrix @ v + v.sum()

    p = 0.5
    predicted = dropout_second_order_mean(quadratic, hidden, p)
    exact = quadratic(hidden) + (p / (1 - p)) * (torch.diagonal(matrix) * hidden.square()).sum()
    torch.testing.assert_close(predicted, exact)
    samples = _dropout_samples(hidden, p, 400_000)
    monte_carlo = torch.einsum("bi,ij,bj->b", samples, matrix, samples) + samples.sum(1)
    standard_error = monte_carlo.std() / math.sqrt(monte_carlo.numel())
    assert abs(monte_carlo.mean() - predicted) < 5 * standard_error
    assert (
        abs(monte_carlo.mean() - quadratic(hidden)) > 5 * standard_error
    )  # the diffusion term is what is seen


def test_second_order_mean_reduces_the_bias_of_a_smooth_network(device):
    torch.manual_seed(3)
    net = nn.Sequential(nn.Linear(12, 8), nn.Tanh(), nn.Linear(8, 1)).double().to(device)
    hidden = (torch.randn(12, dtype=torch.float64) * 0.5).to(device)
    p = 0.1

    def function(v):
        return net(v)[0]

    samples = _dropout_samples(hidden, p, 400_000)
    with torch.no_grad():
        monte_carlo = net(samples)[:, 0].mean()
    predicted = dropout_second_order_mean(function, hidden, p)
    assert abs(predicted - monte_carlo) < 0.3 * abs(function(hidden) - monte_carlo)


def test_dropout_coefficients_and_bad_inputs(device):
    torch.testing.assert_close(
        dropout_diffusion_coefficients(torch.tensor([2.0, 0.0], device=device), 0.2),
        torch.tensor([1.0, 0.0], device=device),
    )
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        dropout_diffusion_coefficients(torch.ones(3, device=device), 1.0)
    with pytest.raises(ValueError, match="weight must have shape"):
        dropout_readout_variance(torch.ones(3, device=device), torch.ones(2, 4, device=device), 0.5)
