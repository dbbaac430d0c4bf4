"""Dropout as a diffusion with coefficient p/(1−p)·h²: the read-out variance and the second-order mean against
Monte Carlo and against the exact average over every mask, the neutral p = 0, and bad inputs."""

import itertools
import math

import numpy as np
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


def _every_mask(m, p):
    """Each of the 2^m dropout masks, scaled by 1/(1−p) as inverted dropout does, with its probability."""
    for bits in itertools.product((0, 1), repeat=m):
        kept = np.array(bits, dtype=float)
        yield kept / (1 - p), (1 - p) ** kept.sum() * p ** (m - kept.sum())


@pytest.mark.parametrize("p", [0.2, 0.5, 0.7])
def test_the_readout_variance_and_the_quadratic_mean_are_the_exact_averages_over_every_mask(p):
    rng = np.random.default_rng(0)
    hidden, weight = rng.normal(size=4), rng.normal(size=(3, 4))
    matrix, vector = rng.normal(size=(4, 4)), rng.normal(size=4)  # a non-symmetric quadratic form
    outputs, values, weights = [], [], []
    for scale, probability in _every_mask(4, p):
        dropped = hidden * scale
        outputs.append(weight @ dropped)
        values.append(dropped @ matrix @ dropped + vector @ dropped)
        weights.append(probability)
    weights = np.array(weights)
    assert weights.sum() == pytest.approx(1.0, abs=1e-15)
    mean = weights @ np.array(outputs)
    variance = weights @ (np.array(outputs) - mean) ** 2
    np.testing.assert_allclose(mean, weight @ hidden, rtol=1e-12)  # inverted dropout keeps the mean
    h = torch.tensor(hidden)
    np.testing.assert_allclose(
        dropout_readout_variance(h, torch.tensor(weight), p).numpy(), variance, rtol=1e-12, atol=1e-14
    )
    predicted = dropout_second_order_mean(
        lambda v: v @ torch.tensor(matrix) @ v + torch.tensor(vector) @ v, h, p
    )
    assert float(predicted) == pytest.approx(float(weights @ np.array(values)), rel=1e-12, abs=1e-12)


def test_a_cubic_shows_the_third_order_remainder_the_expansion_leaves_out():
    """For f = Σ h_i³: E f(h̃) = Σ h_i³ / (1−p)², the second-order mean Σ h_i³ (1 + 3p/(1−p)); at p = 1/4
    that is 16/9 against 2 times Σ h_i³."""
    hidden = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    cubes = float(hidden.pow(3).sum())  # −6.875
    predicted = dropout_second_order_mean(lambda v: v.pow(3).sum(), hidden, 0.25)
    assert float(predicted) == pytest.approx(2 * cubes, rel=1e-14)
    exact = sum(
        probability * float(((hidden.numpy() * scale) ** 3).sum())
        for scale, probability in _every_mask(3, 0.25)
    )
    assert exact == pytest.approx(16 / 9 * cubes, rel=1e-12) and exact != pytest.approx(float(predicted))


def test_without_dropout_there_is_no_diffusion():
    hidden = torch.tensor([[1.0, -3.0], [0.0, 2.0]], dtype=torch.float64)
    weight = torch.tensor([[1.0, 2.0]], dtype=torch.float64)
    assert torch.equal(dropout_diffusion_coefficients(hidden, 0.0), torch.zeros(2, 2, dtype=torch.float64))
    assert torch.equal(dropout_readout_variance(hidden, weight, 0.0), torch.zeros(2, 1, dtype=torch.float64))

    def function(v):
        return torch.stack([v.square().sum(), torch.sin(v).prod()])

    out = dropout_second_order_mean(function, hidden, 0.0)
    assert torch.equal(out, torch.stack([function(row) for row in hidden]))


def test_rows_of_a_batch_are_independent_and_a_vector_function_gives_one_column_per_output():
    generator = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 5, generator=generator, dtype=torch.float64)
    weight = torch.randn(2, 5, generator=generator, dtype=torch.float64)

    def function(v):
        return torch.tanh(weight @ v)

    batch = dropout_second_order_mean(function, hidden, 0.3)
    assert batch.shape == (3, 2)
    for row in range(3):
        torch.testing.assert_close(
            batch[row], dropout_second_order_mean(function, hidden[row], 0.3), rtol=1e-14, atol=0
        )
    variance = dropout_readout_variance(hidden, weight, 0.3)
    assert variance.shape == (3, 2)
    torch.testing.assert_close(
        variance[1], dropout_readout_variance(hidden[1], weight, 0.3), rtol=1e-14, atol=0
    )
    torch.testing.assert_close(variance, 0.3 / 0.7 * hidden.square() @ weight.square().T, rtol=1e-14, atol=0)


def test_bad_rates_dtypes_and_shapes_are_refused_by_name():
    hidden = torch.ones(2, 3)
    with pytest.raises(ValueError, match="p must be >= 0, got -0.1"):
        dropout_diffusion_coefficients(hidden, -0.1)
    with pytest.raises(ValueError, match="p must be finite, got nan"):
        dropout_readout_variance(hidden, torch.ones(2, 3), math.nan)
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\), got 1.5"):
        dropout_second_order_mean(lambda v: v.sum(), hidden, 1.5)
    with pytest.raises(TypeError, match="hidden must be float32 or float64, got torch.int64"):
        dropout_diffusion_coefficients(torch.ones(3, dtype=torch.long), 0.5)
    with pytest.raises(TypeError, match="weight must be float32 or float64"):
        dropout_readout_variance(hidden, torch.ones(2, 3, dtype=torch.int32), 0.5)
    with pytest.raises(ValueError, match=r"weight must have shape \(c, 3\), got \(3,\)"):
        dropout_readout_variance(hidden, torch.ones(3), 0.5)
    with pytest.raises(ValueError, match=r"hidden must have shape \(m,\) or \(B, m\), got \(1, 2, 3\)"):
        dropout_second_order_mean(lambda v: v.sum(), torch.ones(1, 2, 3), 0.5)
