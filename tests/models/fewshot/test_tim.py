"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
import torch
from fewshot_tasks import separable_tasks

from pdenets.models.fewshot import (
    TIM,
    FewShotBatch,
    TIMSettings,
    prototypes,
)
from pdenets.models.fewshot.tim import fit_class_weights


def test_tim_without_iterations_is_the_prototype_softmax_and_its_loss_falls(device):
    from pdenets.models.fewshot import TIM

    support, support_labels, query, query_labels = separable_tasks(tasks=2, spread=1.0, seed=4, device=device)
    batch = FewShotBatch(support, support_labels, query, 5)
    centres = prototypes(support, support_labels, 5)
    expected = torch.softmax(-15 / 2 * torch.cdist(query, centres).square(), 2)
    assert torch.allclose(TIM(iterations=0).predict_proba(batch), expected)
    start = (TIM(iterations=0).predict_proba(batch).argmax(2) == query_labels).double().mean()
    trained = (TIM(iterations=300, lr=1e-3).predict_proba(batch).argmax(2) == query_labels).double().mean()
    assert trained >= start


def _episode(shots=(2, 1, 2), queries=7, dim=3, seed=0):
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


def _softmax(logits):
    shifted = np.exp(logits - logits.max(1, keepdims=True))
    return shifted / shifted.sum(1, keepdims=True)


def _probabilities(points, weights, temperature):
    return _softmax(-temperature / 2 * ((points[:, None] - weights[None]) ** 2).sum(2))


def test_the_loss_is_the_weighted_sum_of_support_cross_entropy_and_the_two_query_entropies():
    rng = np.random.default_rng(1)
    support_log = torch.log_softmax(torch.from_numpy(rng.normal(size=(2, 4, 3))), 2)
    query_log = torch.log_softmax(torch.from_numpy(2 * rng.normal(size=(2, 6, 3))), 2)
    labels = np.array([[0, 1, 2, 2], [1, 0, 0, 2]])
    onehot = torch.nn.functional.one_hot(torch.from_numpy(labels), 3).double()
    s, q = support_log.numpy(), query_log.numpy()
    p = np.exp(q)
    cross_entropy = np.array([-np.mean([s[t, i, labels[t, i]] for i in range(4)]) for t in range(2)])
    marginal = p.mean(1)
    marginal_entropy = -(marginal * np.log(marginal)).sum(1)
    conditional_entropy = -(p * q).sum(2).mean(1)
    for weights in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0), (0.1, 1.0, 0.1), (0.7, 0.3, 2.0)):
        method = TIM(
            cross_entropy_weight=weights[0], marginal_weight=weights[1], conditional_weight=weights[2]
        )
        expected = (
            weights[0] * cross_entropy - weights[1] * marginal_entropy + weights[2] * conditional_entropy
        )
        np.testing.assert_allclose(method.loss(support_log, query_log, onehot).numpy(), expected, rtol=1e-12)
    # the marginal term rewards spread: uniform predictions have the largest marginal entropy, log C
    uniform = torch.full((1, 6, 3), -np.log(3.0), dtype=torch.float64)
    alone = TIM(cross_entropy_weight=0.0, marginal_weight=1.0, conditional_weight=0.0)
    assert float(alone.loss(support_log[:1], uniform, onehot[:1])) == pytest.approx(-np.log(3.0), abs=1e-12)


def _tim_gradient(support, labels, query, weights, temperature, ce, marginal_w, conditional_w):
    """dL/dw of the TIM loss, derived by hand: dL/dw_c = Σ_i (dL/dl_ic) τ (z_i − w_c)."""
    ways = weights.shape[0]
    p_s = _probabilities(support, weights, temperature)
    p_q = _probabilities(query, weights, temperature)
    d_support = ce * (p_s - np.eye(ways)[labels]) / len(support)  # cross entropy through the softmax
    marginal = p_q.mean(0)
    d_p = (marginal_w * (np.log(marginal) + 1)[None] - conditional_w * (np.log(p_q) + 1)) / len(query)
    d_query = p_q * (d_p - (p_q * d_p).sum(1, keepdims=True))  # the softmax's Jacobian
    gradient = np.zeros_like(weights)
    for points, d_logits in ((support, d_support), (query, d_query)):
        for c in range(ways):
            gradient[c] += temperature * (d_logits[:, c : c + 1] * (points - weights[c])).sum(0)
    return gradient


def test_one_adam_step_follows_the_closed_form_gradient_of_the_loss():
    support, labels, query = _episode()
    batch = _batch(support, labels, query)
    settings = dict(temperature=4.0, cross_entropy_weight=0.5, marginal_weight=1.0, conditional_weight=0.3)
    method = TIM(iterations=1, lr=0.05, **settings)
    start = np.stack([support[labels == c].mean(0) for c in range(3)])
    gradient = _tim_gradient(support, labels, query, start, 4.0, *(settings[k] for k in list(settings)[1:]))
    assert np.abs(gradient).min() > 1e-4  # every coordinate moves by about lr
    expected = start - 0.05 * gradient / (np.abs(gradient) + 1e-8)  # Adam's first step: lr · g / |g|
    weights = fit_class_weights(batch, method.loss, temperature=4.0, lr=0.05, iterations=1)
    np.testing.assert_allclose(weights[0].numpy(), expected, atol=1e-10)
    np.testing.assert_allclose(
        method.predict_proba(batch)[0].numpy(), _probabilities(query, expected, 4.0), atol=1e-10
    )
    unmoved = fit_class_weights(batch, method.loss, temperature=4.0, lr=0.05, iterations=0)
    np.testing.assert_array_equal(unmoved[0].numpy(), start)


def test_permuting_the_queries_permutes_the_predictions():
    support, labels, query = _episode(queries=9, seed=3)
    order = np.random.default_rng(4).permutation(9)
    method = TIM(iterations=15, lr=0.05)
    direct = method.predict_proba(_batch(support, labels, query))
    permuted = method.predict_proba(_batch(support, labels, query[order]))
    torch.testing.assert_close(permuted, direct[:, order], rtol=0, atol=1e-10)
    assert float((direct - direct.mean(2, keepdim=True)).abs().max()) > 0.05  # not uniform


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"temperature": 0.0}, ValueError, "temperature must be > 0, got 0.0"),
        ({"marginal_weight": -1.0}, ValueError, "marginal_weight must be >= 0, got -1.0"),
        ({"conditional_weight": float("nan")}, ValueError, "conditional_weight must be finite"),
        ({"iterations": -1}, ValueError, "iterations must be an integer >= 0, got -1"),
        ({"iterations": 2.5}, TypeError, "iterations must be an integer, got float"),
        ({"lr": 0.0}, ValueError, "lr must be > 0"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        TIMSettings(**changes)


@pytest.mark.parametrize("weights", [(0.1, 1.0, 0.1), (0.7, 0.3, 2.0), (1.0, 0.0, 0.0)])
def test_the_closed_form_logit_gradients_are_autograds_and_give_its_steps(weights):
    rng = np.random.default_rng(3)
    method = TIM(cross_entropy_weight=weights[0], marginal_weight=weights[1], conditional_weight=weights[2])
    support_logits = torch.from_numpy(rng.normal(size=(2, 4, 3))).requires_grad_()
    query_logits = torch.from_numpy(2 * rng.normal(size=(2, 6, 3)))
    query_logits[1, :, 2] -= 40  # a class whose marginal is below the clamp, 1e-12, in the second task
    query_logits.requires_grad_()
    onehot = torch.nn.functional.one_hot(torch.tensor([[0, 1, 2, 2], [1, 0, 0, 2]]), 3).double()
    support_log, query_log = torch.log_softmax(support_logits, 2), torch.log_softmax(query_logits, 2)
    method.loss(support_log, query_log, onehot).sum().backward()
    support_grad, query_grad = method.logit_gradients(support_log.detach(), query_log.detach(), onehot)
    torch.testing.assert_close(support_grad, support_logits.grad, rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(query_grad, query_logits.grad, rtol=1e-12, atol=1e-14)
    # 60 Adam steps of the closed form are autograd's, on the weights as on the answers
    support, labels, query = _episode(seed=2)
    batch = _batch(support, labels, query)
    options = dict(temperature=6.0, lr=0.02, iterations=60)
    ours = fit_class_weights(batch, method.loss, gradients=method.logit_gradients, **options)
    theirs = fit_class_weights(batch, method.loss, **options)
    torch.testing.assert_close(ours, theirs, rtol=1e-9, atol=1e-11)
    assert (
        float((ours - fit_class_weights(batch, method.loss, **{**options, "iterations": 0})).abs().max())
        > 0.1
    )
