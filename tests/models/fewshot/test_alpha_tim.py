"""α-TIM: Tsallis entropy values and limits, one Adam step against a closed-form gradient in NumPy, query
permutations, the α chosen against an explicit one, the refused settings."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import AlphaTIM, AlphaTIMSettings, FewShotBatch
from pdenets.models.fewshot.alpha_tim import tsallis_entropy


def _episode(shots=(1, 1, 1), queries=7, dim=3, seed=0):
    """One float64 task: ``shots[c]`` support points of class ``c``, ``queries`` queries near the classes."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(len(shots), dim))
    labels = np.repeat(np.arange(len(shots)), shots)
    support = centres[labels] + 0.6 * rng.normal(size=(len(labels), dim))
    query = centres[np.arange(queries) % len(shots)] + 0.6 * rng.normal(size=(queries, dim))
    return support, labels, query


def _batch(support, labels, query):
    return FewShotBatch(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3
    )


def _probabilities(points, weights, temperature):
    logits = -temperature / 2 * ((points[:, None] - weights[None]) ** 2).sum(2)
    shifted = np.exp(logits - logits.max(1, keepdims=True))
    return shifted / shifted.sum(1, keepdims=True)


def test_tsallis_entropy_is_zero_on_a_certain_prediction_largest_on_a_uniform_one_and_tends_to_shannons():
    uniform = torch.full((4,), 0.25, dtype=torch.float64)
    for alpha in (1.5, 2.0, 7.0):
        expected = (1 - 4 * 0.25**alpha) / (alpha - 1)
        assert float(tsallis_entropy(uniform, alpha)) == pytest.approx(expected, rel=1e-12)
        assert float(tsallis_entropy(torch.tensor([0.0, 1.0, 0.0, 0.0], dtype=torch.float64), alpha)) == 0.0
        others = torch.softmax(torch.randn(50, 4, generator=torch.Generator().manual_seed(0)).double(), 1)
        assert bool((tsallis_entropy(others, alpha) < expected).all())
    p = torch.tensor([[0.5, 0.3, 0.2], [0.9, 0.05, 0.05]], dtype=torch.float64)
    shannon = -(p * p.log()).sum(1)
    torch.testing.assert_close(tsallis_entropy(p, 1 + 1e-7), shannon, rtol=1e-6, atol=0)
    # a round-off negative probability counts as zero, not as a complex power
    assert float(tsallis_entropy(torch.tensor([-1e-17, 1.0], dtype=torch.float64), 2.5)) == 0.0


def _alpha_tim_gradient(support, labels, query, weights, temperature, alpha):
    """dL/dw of CE − (H_α(p̄) − mean H_α(p_i)), derived by hand through the softmax."""
    ways = weights.shape[0]
    p_s = _probabilities(support, weights, temperature)
    p_q = _probabilities(query, weights, temperature)
    d_support = (p_s - np.eye(ways)[labels]) / len(support)
    marginal = p_q.mean(0)
    d_p = alpha / (alpha - 1) * (marginal[None] ** (alpha - 1) - p_q ** (alpha - 1)) / len(query)
    d_query = p_q * (d_p - (p_q * d_p).sum(1, keepdims=True))
    gradient = np.zeros_like(weights)
    for points, d_logits in ((support, d_support), (query, d_query)):
        for c in range(ways):
            gradient[c] += temperature * (d_logits[:, c : c + 1] * (points - weights[c])).sum(0)
    return gradient


@pytest.mark.parametrize("alpha", [2.0, 4.5])
def test_one_adam_step_follows_the_closed_form_gradient_of_the_loss(alpha):
    support, labels, query = _episode(shots=(2, 1, 2))
    start = np.stack([support[labels == c].mean(0) for c in range(3)])
    gradient = _alpha_tim_gradient(support, labels, query, start, 3.0, alpha)
    assert np.abs(gradient).min() > 1e-4  # every coordinate moves by about lr
    expected = start - 0.05 * gradient / (np.abs(gradient) + 1e-8)  # Adam's first step: lr · g / |g|
    ours = AlphaTIM(alpha=alpha, temperature=3.0, iterations=1, lr=0.05).predict_proba(
        _batch(support, labels, query)
    )
    np.testing.assert_allclose(ours[0].numpy(), _probabilities(query, expected, 3.0), atol=1e-10)
    assert np.abs(_probabilities(query, expected, 3.0) - _probabilities(query, start, 3.0)).max() > 1e-3


def test_permuting_the_queries_permutes_the_predictions():
    support, labels, query = _episode(queries=9, seed=3)
    order = np.random.default_rng(4).permutation(9)
    method = AlphaTIM(iterations=15, lr=0.05)
    direct = method.predict_proba(_batch(support, labels, query))
    permuted = method.predict_proba(_batch(support, labels, query[order]))
    torch.testing.assert_close(permuted, direct[:, order], rtol=0, atol=1e-10)


def test_the_chosen_alpha_is_the_explicit_one_it_names_and_another_alpha_answers_otherwise():
    support, labels, query = _episode(queries=5, seed=5)  # one shot, 5 < 2 · 3 queries: α = 1.2
    batch = _batch(support, labels, query)
    quick = dict(iterations=15, lr=0.05, temperature=2.0)
    assert AlphaTIM().alpha(batch) == 1.2 and AlphaTIM.preset("paper").alpha(batch) == 2.0
    default = AlphaTIM(**quick).predict_proba(batch)
    torch.testing.assert_close(default, AlphaTIM(alpha=1.2, **quick).predict_proba(batch), rtol=0, atol=0)
    paper = AlphaTIM.preset("paper", **quick).predict_proba(batch)
    torch.testing.assert_close(paper, AlphaTIM(alpha=2.0, **quick).predict_proba(batch), rtol=0, atol=0)
    assert float((default - paper).abs().max()) > 1e-3
    assert float((AlphaTIM(alpha=7.0, **quick).predict_proba(batch) - paper).abs().max()) > 1e-3


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"alpha": 1.0}, ValueError, r"alpha must be > 1 \(alpha -> 1 is TIM's Shannon entropy\), got 1.0"),
        ({"alpha": 0.5}, ValueError, "alpha must be > 1"),
        ({"alpha": -2.0}, ValueError, "alpha must be > 0, got -2.0"),
        ({"alpha": "2"}, TypeError, "alpha must be a real number, got str"),
        ({"temperature": 0.0}, ValueError, "temperature must be > 0"),
        ({"iterations": -1}, ValueError, "iterations must be an integer >= 0"),
        ({"lr": float("inf")}, ValueError, "lr must be finite"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        AlphaTIMSettings(**changes)
