"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import (
    PTMAP,
    FewShotBatch,
    PTMAPSettings,
    classify,
    power_transform,
    sinkhorn,
)
from pdenets.models.fewshot.ptmap import distinct_points

# ----------------------------------------------------------------------------------------
# the peers' methods


def test_sinkhorn_meets_both_marginals_and_keeps_the_kernel_form(device):
    costs = (
        torch.rand(3, 12, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0)).to(device) * 3
    )
    plan = sinkhorn(costs, 2.0, 500)
    assert torch.allclose(plan.sum(2), torch.ones(3, 12, dtype=torch.float64, device=device), atol=1e-12)
    assert torch.allclose(plan.sum(1), torch.full((3, 4), 3.0, dtype=torch.float64, device=device), atol=1e-8)
    # an entropic plan is diag(u) exp(−λ C) diag(v): its log minus the kernel is a row plus a column term
    residual = plan.log() + 2.0 * costs
    rows, columns = residual[:, :, :1], residual[:, :1, :] - residual[:, :1, :1]
    assert torch.allclose(residual, rows + columns, atol=1e-9)


def test_pt_map_power_transform_and_balanced_assignment(device):
    from pdenets.models.fewshot import PTMAP, power_transform

    assert torch.allclose(
        power_transform(torch.tensor([4.0, -9.0, 0.0], device=device), 0.5, 0.0),
        torch.tensor([2.0, -3.0, 0.0], device=device),
    )
    # two queries closer to class 0 than to class 1: the balanced plan still gives each class one of them
    support = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]], dtype=torch.float64, device=device)
    query = torch.tensor([[[1.0, 0.2], [1.0, 0.6]]], dtype=torch.float64, device=device)
    labels = torch.tensor([[0, 1]], device=device)
    batch = FewShotBatch(support, labels, query, 2)
    assert PTMAP(power=1.0).predict_proba(batch).argmax(2).tolist() == [[0, 1]]
    assert classify(support, labels, query, 2, "prototype").argmax(2).tolist() == [[0, 0]]


def _episode(shots=(2, 1, 2), queries=7, dim=4, seed=0):
    """One float64 task of non-negative features (a ReLU backbone's): ``shots[c]`` support points of class
    ``c``, ``queries`` queries near the classes in turn."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.2, 2.0, size=(len(shots), dim))
    labels = np.repeat(np.arange(len(shots)), shots)
    support = np.abs(centres[labels] + 0.3 * rng.normal(size=(len(labels), dim)))
    query = np.abs(centres[np.arange(queries) % len(shots)] + 0.3 * rng.normal(size=(queries, dim)))
    return support, labels, query


def _batch(support, labels, query):
    return FewShotBatch(
        torch.from_numpy(support)[None], torch.from_numpy(labels)[None], torch.from_numpy(query)[None], 3
    )


def _plan(query, centres, lam, scalings):
    """Sinkhorn on exp(−λ‖q − m‖²): rows to 1, then columns to Q/C and rows again, ``scalings`` times."""
    p = np.exp(-lam * ((query[:, None] - centres[None]) ** 2).sum(2))
    p /= p.sum(1, keepdims=True)
    for _ in range(scalings):
        p *= len(query) / centres.shape[0] / p.sum(0, keepdims=True)
        p /= p.sum(1, keepdims=True)
    return p


def test_one_centre_update_on_unit_length_features_equals_the_written_out_step():
    support, labels, query = _episode()  # 7 queries, 3 classes: every column sums to 7/3
    power, epsilon, lam, alpha, scalings = 0.5, 1e-3, 3.0, 0.4, 4
    transform = lambda x: (np.abs(x) + epsilon) ** power  # noqa: E731 (non-negative features)
    unit = lambda x: x / np.linalg.norm(x, axis=1, keepdims=True)  # noqa: E731
    s, q = unit(transform(support)), unit(transform(query))
    centres = np.stack([s[labels == c].mean(0) for c in range(3)])
    p = _plan(q, centres, lam, scalings)
    means = np.stack(
        [(s[labels == c].sum(0) + p[:, c] @ q) / ((labels == c).sum() + p[:, c].sum()) for c in range(3)]
    )
    expected = _plan(q, centres + alpha * (means - centres), lam, scalings)
    method = PTMAP(
        power=power,
        epsilon=epsilon,
        lam=lam,
        alpha=alpha,
        iterations=1,
        sinkhorn_iterations=scalings,
        normalize=True,
    )
    ours = method.predict_proba(_batch(support, labels, query))[0].numpy()
    np.testing.assert_allclose(ours, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ours.sum(1), np.ones(7), atol=1e-12)
    # normalizing is a real change of the answer, not a no-op on these features
    plain = PTMAP(
        power=power, epsilon=epsilon, lam=lam, alpha=alpha, iterations=1, sinkhorn_iterations=scalings
    )
    assert np.abs(plain.predict_proba(_batch(support, labels, query))[0].numpy() - ours).max() > 1e-3


def test_sinkhorn_ignores_a_constant_per_query_or_per_class_and_reads_lambda_times_costs():
    generator = torch.Generator().manual_seed(0)
    costs = torch.rand(2, 7, 3, generator=generator, dtype=torch.float64) * 2
    plan = sinkhorn(costs, 1.5, 20)
    rows = torch.randn(2, 7, 1, generator=generator, dtype=torch.float64) * 5
    columns = torch.randn(2, 1, 3, generator=generator, dtype=torch.float64) * 5
    torch.testing.assert_close(sinkhorn(costs + rows + columns, 1.5, 20), plan, rtol=0, atol=1e-12)
    torch.testing.assert_close(sinkhorn(1.5 * costs, 1.0, 20), plan, rtol=0, atol=1e-12)
    # converged, the columns hold Q/C = 7/3 each even though no query can be split evenly
    converged = sinkhorn(costs, 1.5, 300)
    torch.testing.assert_close(converged.sum(1), torch.full((2, 3), 7 / 3, dtype=torch.float64))
    assert not torch.allclose(plan, torch.softmax(-1.5 * costs, 2), atol=1e-3)  # the columns moved it


@pytest.mark.parametrize(
    "tasks, queries, ways, spread", [(1, 75, 5, 33.0), (3, 300, 20, 28.0), (4, 9, 3, 2.0)]
)
def test_the_scalings_on_the_kernel_are_the_log_domain_iterations(tasks, queries, ways, spread):
    """The fast path (NumPy on the CPU, torch elsewhere) after 50 scalings, far from converged where λ times
    the cost range is 330 as on 384-d sentence embeddings, is the log-domain plan."""
    from pdenets.models.fewshot import ptmap

    generator = torch.Generator().manual_seed(tasks)
    costs = torch.rand(tasks, queries, ways, generator=generator, dtype=torch.float64) * spread
    reference = ptmap.log_domain_sinkhorn(costs, 10.0, 50)
    torch.testing.assert_close(sinkhorn(costs, 10.0, 50), reference, rtol=1e-9, atol=1e-12)
    log_kernel = -10.0 * costs
    kernel = (log_kernel - log_kernel.amax(2, keepdim=True)).exp()
    torch.testing.assert_close(
        ptmap._torch_scalings(kernel, queries / ways, 50), reference, rtol=1e-9, atol=1e-12
    )
    single = sinkhorn(costs.float(), 10.0, 50)
    assert single.dtype == torch.float32
    torch.testing.assert_close(single.double(), reference, rtol=0, atol=1e-5)


def test_a_cost_range_past_the_kernels_reach_runs_in_the_log_domain(monkeypatch):
    from pdenets.models.fewshot import ptmap

    calls = []
    reference = ptmap.log_domain_sinkhorn
    monkeypatch.setattr(ptmap, "log_domain_sinkhorn", lambda *a: calls.append(1) or reference(*a))
    costs = torch.zeros(1, 4, 2, dtype=torch.float64)
    costs[0, 0, 1] = ptmap.EXP_DOMAIN_RANGE / 10  # λ = 10: a row's range exactly at the bound
    at_bound = ptmap.sinkhorn(costs, 10.0, 30)
    assert calls == [] and torch.isfinite(at_bound).all()
    torch.testing.assert_close(at_bound, reference(costs, 10.0, 30), rtol=1e-9, atol=1e-300)
    costs[0, 0, 1] = ptmap.EXP_DOMAIN_RANGE / 10 + 1e-3
    ptmap.sinkhorn(costs, 10.0, 30)
    assert calls == [1]
    costs[0, 0, 1] = 1e6  # e^{-10⁷}: the kernel would be zero there
    far = ptmap.sinkhorn(costs, 10.0, 30)
    assert calls == [1, 1] and torch.isfinite(far).all() and float(far[0, 0, 1]) == 0.0


def test_permuting_the_queries_permutes_the_predictions_and_the_support_order_does_not_matter():
    support, labels, query = _episode(queries=9, seed=2)
    direct = PTMAP().predict_proba(_batch(support, labels, query))
    order = np.random.default_rng(1).permutation(9)
    permuted = PTMAP().predict_proba(_batch(support, labels, query[order]))
    torch.testing.assert_close(permuted, direct[:, order], rtol=0, atol=1e-10)
    shuffle = np.random.default_rng(2).permutation(len(labels))
    reordered = PTMAP().predict_proba(_batch(support[shuffle], labels[shuffle], query))
    torch.testing.assert_close(reordered, direct, rtol=0, atol=1e-10)


def test_the_power_transform_is_odd_adds_epsilon_before_the_power_and_beta_one_keeps_the_features():
    x = torch.tensor([4.0, -9.0, 0.0, 0.25], dtype=torch.float64)
    expected = torch.tensor([np.sqrt(4.01), -np.sqrt(9.01), 0.0, np.sqrt(0.26)], dtype=torch.float64)
    torch.testing.assert_close(power_transform(x, 0.5, 0.01), expected, rtol=1e-14, atol=0)
    torch.testing.assert_close(power_transform(-x, 0.5, 0.01), -expected, rtol=0, atol=0)
    torch.testing.assert_close(power_transform(x, 1.0, 0.0), x, rtol=0, atol=0)
    assert power_transform(torch.tensor([0.0]), 0.5, 1.0).item() == 0.0  # sign(0) = 0: zero stays zero


def test_distinct_points_counts_each_tasks_distinct_rows():
    a, b, c = [1.0, 2.0, 3.0], [1.0, 2.0, 3.0 + 1e-12], [-1.0, 0.0, 0.0]
    points = torch.tensor([[a, a, a, a], [a, b, a, c], [c, b, a, a]], dtype=torch.float64)
    assert distinct_points(points).tolist() == [1, 3, 3]


@pytest.mark.parametrize(
    "changes, error, message",
    [
        ({"lam": 0.0}, ValueError, "lam must be > 0, got 0.0"),
        ({"power": -0.5}, ValueError, "power must be > 0"),
        ({"epsilon": -1e-6}, ValueError, "epsilon must be >= 0"),
        ({"alpha": 1.0}, ValueError, r"alpha must be in \[0, 1\), got 1.0"),
        ({"sinkhorn_iterations": 0}, ValueError, "sinkhorn_iterations must be an integer >= 1, got 0"),
        ({"iterations": True}, TypeError, "iterations must be an integer, got bool"),
    ],
)
def test_bad_settings_are_refused_naming_them(changes, error, message):
    with pytest.raises(error, match=message):
        PTMAPSettings(**changes)
