"""Few-shot methods: separable problems solved exactly, batched == one by one, LaplacianShot's objective, the
preprocessing formulas, the scikit-learn estimator."""

import math

import numpy as np
import pytest
import torch
from sklearn.base import clone

from pdenets.models.fewshot import (
    DEFAULT_METHOD,
    METHODS,
    DiffusionFewShotClassifier,
    FewShotBatch,
    HeadSettings,
    Internal,
    Preprocessing,
    classify,
    cross_domain_shift,
    knn_affinity,
    laplacian_energy,
    laplacian_shot,
    method_from_name,
    prototypes,
    rectified_prototypes,
    sinkhorn,
    train_heads,
    train_heads_one_by_one,
)
from pdenets.operators import batched_knn_gaussian_weights, knn_gaussian_weights


def _tasks(
    tasks=4,
    ways=5,
    shots=1,
    queries=15,
    dim=12,
    spread=6.0,
    noise=1.0,
    seed=0,
    dtype=torch.float64,
    device="cpu",
):
    """Support, labels, queries, query labels: drawn on the CPU by a seeded generator, moved to ``device``."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(tasks, ways, dim, generator=generator, dtype=dtype) * spread
    support = centres.repeat_interleave(shots, 1) + noise * torch.randn(
        tasks, ways * shots, dim, generator=generator, dtype=dtype
    )
    query = centres.repeat_interleave(queries, 1) + noise * torch.randn(
        tasks, ways * queries, dim, generator=generator, dtype=dtype
    )
    support_labels = torch.arange(ways).repeat_interleave(shots).expand(tasks, -1)
    query_labels = torch.arange(ways).repeat_interleave(queries).expand(tasks, -1)
    return tuple(tensor.to(device) for tensor in (support, support_labels, query, query_labels))


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
    support, support_labels, query, query_labels = _tasks(shots=shots, device=device)
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
    support, support_labels, query, _ = _tasks(tasks=5, shots=2, spread=1.0, noise=1.0, seed=3, device=device)
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

    support, support_labels, query, _ = _tasks(tasks=5, shots=2, spread=1.0, noise=1.0, seed=4, device=device)
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
    support, support_labels, query, _ = _tasks(tasks=2, spread=0.8, seed=5, device=device)
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


def test_batched_graph_equals_the_sparse_graph_of_each_task(device):
    points = torch.randn(3, 40, 6, dtype=torch.float64).to(device)
    batched = batched_knn_gaussian_weights(
        points, 7, sigma_neighbor=4, include_self=True, normalization="symmetric", symmetrize_weights=True
    )
    for task in range(3):
        single = knn_gaussian_weights(
            points[task],
            7,
            sigma_neighbor=4,
            include_self=True,
            normalization="symmetric",
            symmetrize_weights=True,
        ).to_dense()
        assert torch.allclose(batched[task], single, atol=1e-14)
    fixed = batched_knn_gaussian_weights(points, 5, sigma=1.5, normalization="row")
    assert torch.allclose(
        fixed[1], knn_gaussian_weights(points[1], 5, sigma=1.5, normalization="row").to_dense()
    )


def test_laplacian_shot_objective_decreases_and_converges(device):
    generator = torch.Generator().manual_seed(2)
    points = torch.randn(3, 30, 4, generator=generator, dtype=torch.float64).to(device)
    centres = torch.randn(3, 5, 4, generator=generator, dtype=torch.float64).to(device)
    unary = torch.cdist(points, centres)
    # a Gaussian kernel matrix is positive semi-definite: the bound is exact and E must not increase
    kernel = torch.exp(-torch.cdist(points, points).square())
    result = laplacian_shot(unary, kernel, lam=0.8, max_iterations=50, tolerance=1e-12)
    energies = torch.stack(result.energies)
    assert result.iterations > 3
    assert bool((energies[1:] <= energies[:-1] + 1e-10).all())
    assert float((energies[0] - energies[-1]).min()) > 0
    fixed = torch.softmax(-unary + 0.8 * torch.bmm(kernel, result.assignments), 2)
    assert torch.allclose(fixed, result.assignments, atol=1e-6)  # a fixed point of the update
    assert torch.allclose(laplacian_energy(result.assignments, unary, kernel, 0.8), energies[-1])


def test_knn_affinity_is_binary_without_self(device):
    points = torch.tensor([[[0.0], [1.0], [3.0], [10.0]]], device=device)
    affinity = knn_affinity(points, 3)[0]
    assert affinity.tolist() == [[0, 1, 1, 0], [1, 0, 1, 0], [1, 1, 0, 0], [0, 1, 1, 0]]
    assert torch.equal(affinity.diagonal(), torch.zeros(4, device=device))
    assert affinity.sum(1).tolist() == [2.0] * 4
    assert affinity[3].tolist() == [0.0, 1.0, 1.0, 0.0]


def test_preprocessing_formulas(device):
    support = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], device=device)
    query = torch.tensor([[[3.0, 3.0], [5.0, 1.0], [1.0, 1.0]]], device=device)
    shifted = cross_domain_shift(support, query)
    assert torch.allclose(shifted.mean(1), support.mean(1))
    labels = torch.tensor([[0, 1]], device=device)
    assert torch.equal(prototypes(support, labels, 2), support)
    # rectification by hand: T = 10, cosine to each prototype, argmax assignment, class softmax weight, mean
    points = torch.cat([support, query], 1)[0]
    scores = (
        10 * torch.nn.functional.normalize(points, dim=1) @ torch.nn.functional.normalize(support[0], dim=1).T
    )
    assigned = scores.argmax(1)
    weights = scores.softmax(1)
    expected = torch.stack(
        [(weights[assigned == c, c, None] * points[assigned == c]).mean(0) for c in range(2)]
    )
    assert torch.allclose(rectified_prototypes(support, labels, query, 2)[0], expected)


def test_classify_refuses_bad_tasks(device):
    support, support_labels, query, _ = _tasks(tasks=2, device=device)
    with pytest.raises(ValueError, match="at least one support sample of each of the 6 classes"):
        classify(support, support_labels, query, 6, "prototype")
    with pytest.raises(ValueError, match="must agree"):
        classify(support, support_labels, query[:, :, :3], 5, "prototype")
    with pytest.raises(ValueError, match="unknown few-shot method 'pt_map' \\(did you mean 'pt-map'\\?\\)"):
        classify(support, support_labels, query, 5, "pt_map")
    with pytest.raises(TypeError, match="support must be float32 or float64"):
        classify(support.long(), support_labels, query, 5, "prototype")
    with pytest.raises(ValueError, match="base_mean must have shape \\(12,\\)"):
        classify(
            support,
            support_labels,
            query,
            5,
            "prototype",
            Preprocessing(centre=True),
            base_mean=torch.zeros(3, device=device),
        )
    with pytest.raises(ValueError, match="support_labels must lie in 0 … 4"):
        classify(support, support_labels + 1, query, 5, "prototype")
    with pytest.raises(ValueError, match="at least one query"):
        classify(support, support_labels, query[:, :0], 5, "prototype")
    for name, bad_setting, message in (
        ("internal", {"step_size": 0.0}, "step_size must be > 0"),
        ("convection", {"epochs": 0}, "epochs must be an integer >= 1"),
        ("tim", {"lr": -1.0}, "lr must be > 0"),
        ("pt-map", {"alpha": 1.5}, "alpha must be in"),
        ("internal", {"init": "zeros"}, "init must be one of"),
    ):
        with pytest.raises(ValueError, match=message):
            method_from_name(name, **bad_setting)
    with pytest.raises(TypeError, match="unexpected keyword argument 'num_steps'"):
        method_from_name("convection", num_steps=3)
    bad = query.clone()
    bad[0, 0, 0] = math.nan
    with pytest.raises(ValueError, match="query contains 1 NaN/inf"):
        classify(support, support_labels, bad, 5, "prototype")


# ----------------------------------------------------------------------------------------
# the estimator


def _problem(seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(3, 10)) * 5
    X_support = np.repeat(centres, 2, axis=0) + rng.normal(size=(6, 10))
    y_support = np.repeat(["a", "b", "c"], 2)
    X_query = np.repeat(centres, 8, axis=0) + rng.normal(size=(24, 10))
    return X_support, y_support, X_query, np.repeat(["a", "b", "c"], 8)


ESTIMATOR_ON_NUMPY = (
    "DiffusionFewShotClassifier is a scikit-learn estimator: NumPy arrays in and out, torch on the CPU"
)


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
@pytest.mark.parametrize("method", METHODS)
def test_estimator_fit_predict_with_any_labels(method):
    X_support, y_support, X_query, y_query = _problem()
    params = {
        "convection": {"epochs": 40},
        "external": {"epochs": 40},
        "internal": {"num_steps": 3, "epochs": 40},
        "tim": {"iterations": 100},
        "alpha-tim": {"iterations": 100},
    }.get(method)
    clf = DiffusionFewShotClassifier(method=method, method_params=params).fit(X_support, y_support)
    assert list(clf.classes_) == ["a", "b", "c"]
    assert (clf.predict(X_query) == y_query).all()
    assert clf.predict_proba(X_query).shape == (24, 3)


def _skewed_tasks(tasks=60, ways=5, queries=75, dim=384, seed=0):
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
    support, labels, query, query_labels = _skewed_tasks()
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


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
def test_estimator_params_and_clone():
    assert DiffusionFewShotClassifier().method == DEFAULT_METHOD == "adaptive"
    clf = DiffusionFewShotClassifier("internal", method_params={"num_steps": 4})
    assert clf.get_params()["method_params"] == {"num_steps": 4}
    clf.set_params(method_params={"mu": 0.1}, method="external")
    twin = clone(clf)
    assert twin.get_params() == clf.get_params() and twin is not clf
    X_support, y_support, X_query, _ = _problem()
    with pytest.raises(ValueError, match="method_params for 'external'"):
        clone(twin).set_params(method_params={"num_steps": 3}).fit(X_support, y_support)
    first = (
        clone(twin.set_params(method_params={"mu": 0.1, "epochs": 20}))
        .fit(X_support, y_support)
        .predict_proba(X_query)
    )
    second = clone(twin).fit(X_support, y_support).predict_proba(X_query)
    assert np.allclose(first, second)  # same random_state, same result
    with pytest.raises(ValueError, match=f"base_mean must be {X_support.shape[1]} finite numbers"):
        DiffusionFewShotClassifier(base_mean=np.zeros(X_support.shape[1] + 1)).fit(X_support, y_support)


@pytest.mark.cpu_only(ESTIMATOR_ON_NUMPY)
def test_estimator_passes_scikit_learns_checks_that_apply_to_transductive_models():
    from sklearn.utils.estimator_checks import check_estimator

    results = check_estimator(
        DiffusionFewShotClassifier("internal", method_params={"epochs": 3, "num_steps": 2}), on_fail=None
    )
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    passed = [r for r in results if r["status"] == "passed"]
    # a transductive model answers each query set as one task: predictions of a subset or a permutation of the
    # queries may differ from those of the whole set, by design
    assert failed == {"check_methods_subset_invariance", "check_methods_sample_order_invariance"}
    assert len(passed) >= 50


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


def test_tim_without_iterations_is_the_prototype_softmax_and_its_loss_falls(device):
    from pdenets.models.fewshot import TIM

    support, support_labels, query, query_labels = _tasks(tasks=2, spread=1.0, seed=4, device=device)
    batch = FewShotBatch(support, support_labels, query, 5)
    centres = prototypes(support, support_labels, 5)
    expected = torch.softmax(-15 / 2 * torch.cdist(query, centres).square(), 2)
    assert torch.allclose(TIM(iterations=0).predict_proba(batch), expected)
    start = (TIM(iterations=0).predict_proba(batch).argmax(2) == query_labels).double().mean()
    trained = (TIM(iterations=300, lr=1e-3).predict_proba(batch).argmax(2) == query_labels).double().mean()
    assert trained >= start


def test_bd_cspn_rectifies_with_a_true_weighted_mean(device):
    support = torch.tensor([[[1.0, 0.0], [0.0, 2.0]]], device=device)
    query = torch.tensor([[[3.0, 3.0], [5.0, 1.0], [1.0, 1.0]]], device=device)
    labels = torch.tensor([[0, 1]], device=device)
    points = torch.cat([support, query], 1)[0]
    scores = (
        10 * torch.nn.functional.normalize(points, dim=1) @ torch.nn.functional.normalize(support[0], dim=1).T
    )
    assigned, weights = scores.argmax(1), scores.softmax(1)
    expected = torch.stack(
        [
            (weights[assigned == c, c, None] * points[assigned == c]).sum(0) / weights[assigned == c, c].sum()
            for c in range(2)
        ]
    )
    assert torch.allclose(rectified_prototypes(support, labels, query, 2, weighted_mean=True)[0], expected)


def test_a_sixth_method_is_one_class(device):
    from dataclasses import dataclass

    from pdenets.models.fewshot import FewShotMethod, register_method
    from pdenets.models.fewshot.base import METHOD_CLASSES as registry

    @dataclass(frozen=True)
    class NearestNeighbourSettings:
        pass

    @register_method
    class NearestNeighbour(FewShotMethod):
        name = "nearest-neighbour-test"
        is_transductive = False
        settings_class = NearestNeighbourSettings

        def predict_proba(self, batch):
            nearest = batch.support_labels.gather(1, torch.cdist(batch.query, batch.support).argmin(2))
            return torch.nn.functional.one_hot(nearest, batch.ways).to(batch.query.dtype)

    try:
        support, support_labels, query, query_labels = _tasks(device=device)
        predictions = classify(support, support_labels, query, 5, "nearest-neighbour-test").argmax(2)
        assert torch.equal(predictions, query_labels)
    finally:
        registry.unregister("nearest-neighbour-test")


def test_internal_without_diffusion_is_convection_and_untrained_heads_are_nearest_prototype(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, support_labels, query, _ = _tasks(tasks=3, spread=1.0, seed=6, device=device)
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
