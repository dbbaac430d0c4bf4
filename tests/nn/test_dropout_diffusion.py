"""Noise injection is the heat equation at t = σ²; dropout is a diffusion term with coefficient p/(1−p)·h²."""

import math

import pytest
import torch
from torch import nn

from pdenets.nn import (
    dropout_diffusion_coefficients,
    dropout_readout_variance,
    dropout_second_order_mean,
)
from pdenets.nn.dropout import fast_dropout


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
