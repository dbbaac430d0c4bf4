"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import numpy as np
import pytest
import torch
from fewshot_tasks import separable_tasks

from pdenets.models.fewshot import (
    DEFAULT_METHOD,
    METHODS,
    HeadSettings,
    Internal,
    Preprocessing,
    classify,
    method_from_name,
    prototypes,
    train_heads,
    train_heads_one_by_one,
)


def _fast(name, **changes):
    """A method with short training (the heads: 60 steps; TIM: 200) for the tests."""
    short = {
        "convection": {"epochs": 60},
        "external": {"epochs": 60},
        "internal": {"epochs": 60},
        "tim": {"iterations": 200, "lr": 1e-3},
        "alpha-tim": {"iterations": 200, "lr": 1e-3},
    }.get(name, {})
    return method_from_name(name, **{**short, **changes})


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("shots", [1, 3])
def test_every_method_solves_a_separable_problem(method, shots, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    support, support_labels, query, query_labels = separable_tasks(shots=shots, device=device)
    probabilities = classify(support, support_labels, query, 5, _fast(method), Preprocessing(normalize=True))
    assert probabilities.shape == (4, 75, 5)
    assert torch.allclose(probabilities.sum(2), torch.ones(4, 75, dtype=probabilities.dtype, device=device))
    assert torch.equal(probabilities.argmax(2), query_labels)


@pytest.mark.parametrize(
    "method, alpha, rectify",
    [("convection", 0.0, False), ("external", 0.0, False), ("internal", 0.0, False), ("internal", 0.5, True)],
)
@pytest.mark.parametrize("init", ["prototype", "random"])
def test_batched_training_equals_one_task_at_a_time(method, alpha, rectify, init, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, support_labels, query, _ = separable_tasks(
        tasks=5, shots=2, spread=1.0, noise=1.0, seed=3, device=device
    )
    preprocessing = Preprocessing(normalize=True, shift=rectify, rectify=rectify)
    steps = {"num_steps": 4} if method == "internal" else {}
    model = method_from_name(method, alpha=alpha, epochs=25, init=init, **steps)
    seeds = [11, 12, 13, 14, 15]
    batched = classify(support, support_labels, query, 5, model, preprocessing, seeds=seeds, chunk_size=2)
    looped = classify(support, support_labels, query, 5, model, preprocessing, seeds=seeds, batched=False)
    assert torch.equal(batched.argmax(2), looped.argmax(2))
    assert torch.allclose(batched, looped, atol=1e-9, rtol=1e-7)
    # seeds matter: other initializations give other probabilities
    other = classify(support, support_labels, query, 5, model, preprocessing, seeds=[s + 100 for s in seeds])
    assert not torch.allclose(batched, other, atol=1e-6)


def test_heads_train_in_runs_that_fit_the_cache_with_the_numbers_of_all_tasks_at_once(monkeypatch, device):
    """A head cuts its tasks into runs of ``cached_chunk(M)`` (here 2 of the 5 tasks, then 1): the
    probabilities, seeds included, are those of the 5 trained together."""
    from pdenets.models.fewshot import heads

    support, support_labels, query, _ = separable_tasks(
        tasks=5, shots=2, spread=1.0, noise=1.0, seed=4, device=device
    )
    model = method_from_name("internal", epochs=20, num_steps=3)
    seeds = [21, 22, 23, 24, 25]
    monkeypatch.setattr(heads, "CACHED_HEAD_ENTRIES", 2 * 12**2)
    assert heads.cached_chunk(12) == 2
    runs = classify(support, support_labels, query, 5, model, seeds=seeds)
    monkeypatch.setattr(heads, "CACHED_HEAD_ENTRIES", 1 << 30)
    together = classify(support, support_labels, query, 5, model, seeds=seeds)
    torch.testing.assert_close(runs, together, atol=1e-9, rtol=1e-7)
    assert heads.cached_chunk(64) >= 5 and heads.cached_chunk(1 << 16) == 2


def test_heads_differ_by_method_as_documented(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, support_labels, query, _ = separable_tasks(tasks=2, spread=0.8, seed=5, device=device)
    common = dict(epochs=20, n_top=7, sigma_neighbor=4)
    plain = train_heads(
        support, support_labels, query, 5, HeadSettings(num_steps=0, mu=0.0, **common), [0, 1]
    )
    external = train_heads(
        support, support_labels, query, 5, HeadSettings(num_steps=0, mu=0.5, **common), [0, 1]
    )
    internal = train_heads(
        support, support_labels, query, 5, HeadSettings(num_steps=3, mu=0.0, **common), [0, 1]
    )
    assert not torch.allclose(plain, external) and not torch.allclose(plain, internal)
    reference = train_heads_one_by_one(
        support, support_labels, query, 5, HeadSettings(num_steps=3, **common), [0, 1]
    )
    assert torch.allclose(internal, reference, atol=1e-9)


def _skewedseparable_tasks(tasks=60, ways=5, queries=75, dim=384, seed=0):
    """5-way 1-shot tasks of embedding-like clusters (a few directions of large spread shared by all classes)
    whose queries follow Dirichlet(0.5) class proportions: about two tasks in three leave a class without a
    query."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(tasks, ways, dim, generator=generator, dtype=torch.float64)
    shared = 0.35 * torch.randn(tasks, 8, dim, generator=generator, dtype=torch.float64)

    def draw(labels):
        index = labels[..., None].expand(-1, -1, dim)
        spread = torch.randn(tasks, labels.shape[1], 8, generator=generator, dtype=torch.float64) @ shared
        noise = torch.randn(tasks, labels.shape[1], dim, generator=generator, dtype=torch.float64)
        return centres.gather(1, index) + spread + 0.35 * noise

    rng = np.random.default_rng(seed)
    query_labels = torch.from_numpy(
        np.stack([rng.choice(ways, queries, p=rng.dirichlet([0.5] * ways)) for _ in range(tasks)])
    )
    support_labels = torch.arange(ways).expand(tasks, -1)
    return draw(support_labels), support_labels, draw(query_labels), query_labels


def test_the_default_method_keeps_nearest_prototypes_accuracy_when_a_class_gets_no_query():
    """The default is the method a user picks blind: with strongly skewed queries, and on the tasks where a
    class got none, it is not more than a point below nearest prototype (the Diff-ResNet head falls 2 points
    below it here, 6 on the tasks with an empty class)."""
    support, labels, query, query_labels = _skewedseparable_tasks()
    empty = ((query_labels[:, :, None] == torch.arange(5)).sum(1) == 0).any(1)
    assert 20 <= int(empty.sum()) <= 50  # both kinds of task are there
    scores = {}
    for name in ("prototype", DEFAULT_METHOD):
        predictions = classify(support, labels, query, 5, name, Preprocessing(normalize=True)).argmax(2)
        correct = (predictions == query_labels).double().mean(1)
        scores[name] = (100 * correct.mean(), 100 * correct[empty].mean())
    assert 85 < scores["prototype"][0] < 95  # neither trivial nor hopeless
    assert scores[DEFAULT_METHOD][0] >= scores["prototype"][0] - 1
    assert scores[DEFAULT_METHOD][1] >= scores["prototype"][1] - 1


def test_internal_without_diffusion_is_convection_and_untrained_heads_are_nearest_prototype(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, support_labels, query, _ = separable_tasks(tasks=3, spread=1.0, seed=6, device=device)
    batch = dict(preprocessing=Preprocessing(normalize=True), seeds=[4, 5, 6])
    convection = classify(
        support, support_labels, query, 5, method_from_name("convection", epochs=30), **batch
    )
    internal = classify(support, support_labels, query, 5, Internal(num_steps=0, epochs=30), **batch)
    assert torch.equal(convection, internal)
    # one SGD step at a vanishing learning rate leaves the imprinted head: the nearest-prototype ranking
    untrained = classify(
        support, support_labels, query, 5, method_from_name("convection", epochs=1, lr=1e-12), **batch
    )
    nearest = classify(support, support_labels, query, 5, "prototype", batch["preprocessing"])
    assert torch.equal(untrained.argmax(2), nearest.argmax(2))
    # exactly softmax(−s‖x − m_c‖²/2) with s = 10 / (mean squared distance between two prototypes)
    normalized_support = torch.nn.functional.normalize(support, dim=2)
    normalized_query = torch.nn.functional.normalize(query, dim=2)
    centres = prototypes(normalized_support, support_labels, 5)
    spread = torch.cdist(centres, centres).square().sum((1, 2)) / 20
    expected = torch.softmax(
        -(10 / spread)[:, None, None] / 2 * torch.cdist(normalized_query, centres).square(), 2
    )
    assert torch.allclose(untrained, expected, atol=1e-6)
