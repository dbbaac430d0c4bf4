"""Every few-shot method pinned to a plain implementation of its paper's equations on a tiny float64 episode.

Each reference below is written from the equations (loops over classes and points, NumPy where it
can), not from the library's code, and computes the probabilities of two tasks of a 3-way 2-shot
episode with five queries (2, 2 and 1 per class). A change of any formula — a sign, a weight, a
normalization, a forgotten set of points — moves the probabilities far beyond the tolerances. BD-CSPN's
balanced assignment is also checked alone, against the same loop over the sorted query–class pairs.
"""

import math

import numpy as np
import pytest
import torch

from pdenets.models.fewshot import FewShotBatch, Preprocessing, classify, method_from_name
from pdenets.models.fewshot.bdcspn import balanced_assignment
from pdenets.models.fewshot.heads import initial_parameters

WAYS, SHOTS = 3, 2
QUERY_LABELS = [0, 0, 1, 1, 2]


def _episode(tasks=2, seed=0, dim=4, device="cpu"):
    """Support, labels and queries of ``tasks`` tasks: drawn on the CPU by a seeded generator, moved to
    ``device``."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(tasks, WAYS, dim, generator=generator, dtype=torch.float64) * 1.2
    support_labels = torch.arange(WAYS).repeat_interleave(SHOTS).expand(tasks, -1)
    support = centres[:, support_labels[0]] + torch.randn(
        tasks, WAYS * SHOTS, dim, generator=generator, dtype=torch.float64
    )
    query = centres[:, QUERY_LABELS] + torch.randn(
        tasks, len(QUERY_LABELS), dim, generator=generator, dtype=torch.float64
    )
    return support.to(device), support_labels.to(device), query.to(device)


def _unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def _softmax(x, axis=-1):
    x = x - x.max(axis=axis, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=axis, keepdims=True)


def _means(support, labels):
    return np.stack([support[labels == c].mean(0) for c in range(WAYS)])


def _ours(name, preprocessing=Preprocessing(), seeds=None, device="cpu", **settings):
    """The library's probabilities of the episode, computed on ``device``, as a NumPy array."""
    support, labels, query = _episode(device=device)
    return (
        classify(support, labels, query, WAYS, method_from_name(name, **settings), preprocessing, seeds=seeds)
        .cpu()
        .numpy()
    )


def _per_task(reference, **kwargs):
    support, labels, query = _episode()
    return np.stack(
        [
            reference(support[t].numpy(), labels[t].numpy(), query[t].numpy(), **kwargs)
            for t in range(support.shape[0])
        ]
    )


def _standardized(support, query):
    """Raw features in units of the support's spread (the library's preprocessing without normalization)."""
    unit = math.sqrt(((support - support.mean(0)) ** 2).sum(1).mean())
    return support / unit, query / unit


# ----------------------------------------------------------------------------------------
# the methods that train nothing


def _prototype(support, labels, query):
    support, query = _standardized(support, query)
    centres = _means(support, labels)
    return _softmax(-np.linalg.norm(query[:, None] - centres[None], axis=2))


def _balanced_members(cosine, capacity):
    """Each query's class (-1: none), the most similar (query, class) pair first, each class ``capacity``."""
    member, load = np.full(len(cosine), -1), np.zeros(cosine.shape[1], dtype=int)
    for flat in np.argsort(-cosine.ravel(), kind="stable"):
        i, c = divmod(int(flat), cosine.shape[1])
        if member[i] == -1 and load[c] < capacity:
            member[i], load[c] = c, load[c] + 1
    return member


def _bdcspn(support, labels, query, temperature=1.0, shift=True, balanced_share=True):
    support, query = _standardized(support, query)
    moved = query + (support.mean(0) - query.mean(0)) if shift and len(query) >= WAYS else query
    centres = _means(support, labels)
    points = np.concatenate([support, moved])
    cosine = _unit(points) @ _unit(centres).T
    member = np.concatenate([labels, cosine[len(support) :].argmax(1)])
    if balanced_share:
        member[len(support) :] = _balanced_members(cosine[len(support) :], len(query) // WAYS)
    rectified = []
    for c in range(WAYS):
        weights = np.exp(temperature * cosine[member == c, c])
        rectified.append((weights[:, None] * points[member == c]).sum(0) / weights.sum())
    return _softmax(temperature * _unit(query) @ _unit(np.stack(rectified)).T)


def _bdcspn_easyfsl(support, labels, query):
    """easyfsl's BD-CSPN as its code reads: ``exp(cos)`` logits of the support and of the shifted queries
    to the support means, each class's column divided by its sum over the class's members (support labels,
    queries' argmax), the prototypes the weighted sums; cosine logits of the unshifted queries."""
    support, query = _standardized(support, query)
    means = _means(support, labels)
    shifted = query + (support.mean(0) - query.mean(0))
    support_logits = np.exp(_unit(support) @ _unit(means).T)
    query_logits = np.exp(_unit(shifted) @ _unit(means).T)
    support_onehot = np.eye(WAYS)[labels]
    query_onehot = np.eye(WAYS)[query_logits.argmax(1)]
    normalization = (support_onehot * support_logits).sum(0) + (query_onehot * query_logits).sum(0)
    prototypes = (support_onehot * support_logits / normalization).T @ support + (
        query_onehot * query_logits / normalization
    ).T @ shifted
    return _unit(query) @ _unit(prototypes).T


def test_bd_cspn_easyfsl_preset_predicts_as_easyfsl_reads(device):
    """The preset's predictions equal easyfsl's formulas, written from its code; its probabilities are the
    softmax of those cosines at ``T = 1``."""
    ours = _ours("bd-cspn", device=device, preset="easyfsl")
    logits = _per_task(_bdcspn_easyfsl)
    np.testing.assert_allclose(ours, _softmax(logits), atol=1e-9, rtol=1e-7)
    # the default is easyfsl's T = 1 with the balanced share
    np.testing.assert_array_equal(_ours("bd-cspn", device=device, balanced_share=False), ours)
    paper = _ours("bd-cspn", device=device, preset="paper")
    expected = _per_task(_bdcspn, temperature=10.0, balanced_share=False)
    np.testing.assert_allclose(paper, expected, atol=1e-9, rtol=1e-7)
    assert not np.allclose(paper, ours, atol=1e-3)


def _ptmap(
    support,
    labels,
    query,
    power=0.5,
    epsilon=1e-6,
    lam=10.0,
    alpha=0.2,
    iterations=30,
    sinkhorn_iterations=50,
):
    support, query = _standardized(support, query)
    transform = lambda x: np.sign(x) * (np.abs(x) + epsilon) ** power  # noqa: E731
    support, query = transform(support), transform(query)
    centres = _means(support, labels)
    counts = np.array([(labels == c).sum() for c in range(WAYS)], dtype=float)

    def plan(centres):
        p = np.exp(-lam * ((query[:, None] - centres[None]) ** 2).sum(2))
        p /= p.sum(1, keepdims=True)
        for _ in range(sinkhorn_iterations):
            p *= (len(query) / WAYS) / p.sum(0, keepdims=True)
            p /= p.sum(1, keepdims=True)
        return p

    for _ in range(iterations):
        p = plan(centres)
        means = np.stack(
            [
                (support[labels == c].sum(0) + (p[:, c : c + 1] * query).sum(0)) / (counts[c] + p[:, c].sum())
                for c in range(WAYS)
            ]
        )
        centres = centres + alpha * (means - centres)
    return plan(centres)


def _paddle(support, labels, query, temperature=50.0, iterations=100, lam=None, paper_lam=False):
    support, query = _standardized(support, query)
    centres = _means(support, labels)
    spread = sum(
        ((centres[a] - centres[b]) ** 2).sum() for a in range(WAYS) for b in range(WAYS) if a != b
    ) / (WAYS * (WAYS - 1))
    tau = temperature / spread
    if lam is None:  # the paper's λ = Q, or the queries beyond one per class
        lam = len(query) if paper_lam else max(len(query) - WAYS, 0)
    factor = lam / len(query)
    prior = np.zeros(WAYS)
    u = _softmax(-tau / 2 * ((query[:, None] - centres[None]) ** 2).sum(2))
    for _ in range(iterations):
        u = _softmax(-tau / 2 * ((query[:, None] - centres[None]) ** 2).sum(2) + prior[None])
        prior = factor * (np.log(u.mean(0) + 1e-6) + 1)
        centres = np.stack(
            [
                (support[labels == c].sum(0) + (u[:, c : c + 1] * query).sum(0))
                / ((labels == c).sum() + u[:, c].sum())
                for c in range(WAYS)
            ]
        )
    return u


def _laplacian_shot(
    support, labels, query, lam=0.7, knn=None, iterations=20, squared=True, rectify=True, shift=False
):
    support, query = _standardized(support, query)
    centres = _means(support, labels)
    if (
        rectify
    ):  # Ziko et al.'s rectification: pseudo-labels for every point, class-softmax weights, weighted mean
        moved = query + (support.mean(0) - query.mean(0)) if shift and len(query) >= WAYS else query
        points = np.concatenate([support, moved])
        scores = 10 * _unit(points) @ _unit(centres).T
        assigned, weights = scores.argmax(1), _softmax(scores)
        centres = np.stack(
            [
                (weights[assigned == c, c, None] * points[assigned == c]).sum(0)
                / weights[assigned == c, c].sum()
                if (assigned == c).any()
                else centres[c]
                for c in range(WAYS)
            ]
        )
    unary = np.linalg.norm(query[:, None] - centres[None], axis=2)
    unary = unary**2 if squared else unary
    knn = knn if knn is not None else max(1, min(3, len(query) // WAYS))
    affinity = np.zeros((len(query), len(query)))
    for i in range(len(query)):
        distances = np.linalg.norm(query - query[i], axis=1)
        distances[i] = np.inf
        affinity[i, np.argsort(distances, kind="stable")[: max(0, min(knn - 1, len(query) - 1))]] = 1

    def energy(y):
        return (
            (y * unary).sum()
            - lam / 2 * (y * (affinity @ y)).sum()
            + (y * np.log(np.maximum(y, 1e-300))).sum()
        )

    y = _softmax(-unary)
    previous = energy(y)
    for _ in range(iterations):
        y = _softmax(-unary + lam * affinity @ y)
        current = energy(y)
        if abs(current - previous) / max(abs(previous), 1e-300) < 1e-6:
            break
        previous = current
    return y


@pytest.mark.parametrize(
    "queries, ways, capacity", [(15, 3, 5), (16, 3, 5), (12, 4, 1), (40, 20, 2), (5, 5, 1)]
)
def test_balanced_assignment_equals_the_greedy_over_sorted_pairs(queries, ways, capacity, device):
    generator = torch.Generator().manual_seed(queries * ways + capacity)
    scores = torch.randn(6, queries, ways, generator=generator, dtype=torch.float64)
    assigned = balanced_assignment(scores.to(device), capacity)
    assert assigned.device.type == torch.device(device).type and assigned.dtype == torch.long
    assert assigned.cpu().tolist() == [_balanced_members(task.numpy(), capacity).tolist() for task in scores]


def test_balanced_assignment_is_stable_and_fills_every_class_to_capacity():
    generator = torch.Generator().manual_seed(1)
    scores = torch.rand(20, 23, 4, generator=generator, dtype=torch.float64)
    assigned = balanced_assignment(scores, 5)
    for task, member in zip(scores, assigned.tolist()):
        load = [member.count(c) for c in range(4)]
        assert load == [5] * 4 and member.count(-1) == 3
        worst = [min(float(task[q, c]) for q in range(23) if member[q] == c) for c in range(4)]
        for q in range(23):  # no query and class that would both rather hold each other
            own = float(task[q, member[q]]) if member[q] >= 0 else float("-inf")
            assert all(not (task[q, c] > own and task[q, c] > worst[c]) for c in range(4))


def test_balanced_assignment_at_capacity_one_is_a_matching_and_with_room_is_the_argmax():
    scores = torch.tensor([[[0.9, 0.8, 0.1], [0.95, 0.2, 0.3], [0.5, 0.6, 0.4]]])
    # (1, 0) first; query 0 then takes class 1 and leaves query 2 class 2, not its nearest
    assert balanced_assignment(scores, 1).tolist() == [[1, 0, 2]]
    assert balanced_assignment(scores, 3).tolist() == [scores.argmax(2)[0].tolist()]
    assert balanced_assignment(scores, 0).tolist() == [[-1, -1, -1]]


def test_bd_cspns_balanced_share_binds_on_the_reference_episode():
    """5 queries, 3 classes, one query a class: the assignment changes the answer."""
    with_share, without = _per_task(_bdcspn), _per_task(_bdcspn, balanced_share=False)
    assert np.abs(with_share - without).max() > 1e-3


def test_bd_cspn_equals_its_reference_where_a_refused_query_joins_another_class(device):
    """On these four tasks a query that its nearest class refuses (that class took a more similar one)
    joins its next class: the assignment is not "each class its nearest of the queries nearest to it"."""
    support, labels, query = _episode(tasks=4)
    rerouted = 0
    expected = []
    for t in range(4):
        standardized, queries = _standardized(support[t].numpy(), query[t].numpy())
        moved = queries + (standardized.mean(0) - queries.mean(0))
        cosine = _unit(moved) @ _unit(_means(standardized, labels[t].numpy())).T
        member = _balanced_members(cosine, len(queries) // WAYS)
        rerouted += int(((member >= 0) & (member != cosine.argmax(1))).sum())
        expected.append(_bdcspn(support[t].numpy(), labels[t].numpy(), query[t].numpy()))
    assert rerouted > 0
    ours = classify(
        support.to(device),
        labels.to(device),
        query.to(device),
        WAYS,
        method_from_name("bd-cspn"),
        Preprocessing(),
    )
    np.testing.assert_allclose(ours.cpu().numpy(), np.stack(expected), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize(
    "name, reference, settings",
    [
        ("prototype", _prototype, {}),
        ("bd-cspn", _bdcspn, {}),
        ("bd-cspn", _bdcspn, {"shift": False, "temperature": 4.0}),
        ("bd-cspn", _bdcspn, {"temperature": 10.0}),
        ("bd-cspn", _bdcspn, {"balanced_share": False}),
        ("bd-cspn", _bdcspn, {"balanced_share": False, "temperature": 10.0, "shift": False}),
        ("pt-map", _ptmap, {}),
        ("pt-map", _ptmap, {"alpha": 0.5, "lam": 3.0, "power": 1.0, "iterations": 5}),
        ("paddle", _paddle, {}),
        ("paddle", _paddle, {"paper_lam": True}),
        ("paddle", _paddle, {"temperature": 20.0, "lam": 2.0, "iterations": 7}),
        ("laplacianshot", _laplacian_shot, {}),
        ("laplacianshot", _laplacian_shot, {"knn": 3}),
        ("laplacianshot", _laplacian_shot, {"knn": 3, "shift": True, "lam": 1.5}),
        ("laplacianshot", _laplacian_shot, {"knn": 2, "rectify": False, "squared": False, "lam": 0.5}),
    ],
)
def test_methods_equal_a_plain_implementation_of_their_equations(name, reference, settings, device):
    ours = _ours(name, device=device, **settings)
    expected = _per_task(reference, **settings)
    assert ours.shape == expected.shape == (2, 5, 3)
    np.testing.assert_allclose(ours, expected, atol=1e-9, rtol=1e-7)
    assert np.abs(expected - expected.mean(2, keepdims=True)).max() > 0.05  # the episode is not trivial


# ----------------------------------------------------------------------------------------
# the methods that descend a gradient: TIM and α-TIM (Adam written out), the heads (SGD written out)


def _adam(parameters, gradient_of, lr, iterations, betas=(0.9, 0.999), eps=1e-8):
    first = torch.zeros_like(parameters)
    second = torch.zeros_like(parameters)
    for step in range(1, iterations + 1):
        gradient = gradient_of(parameters)
        first = betas[0] * first + (1 - betas[0]) * gradient
        second = betas[1] * second + (1 - betas[1]) * gradient**2
        parameters = parameters - lr * (first / (1 - betas[0] ** step)) / (
            (second / (1 - betas[1] ** step)).sqrt() + eps
        )
    return parameters


def _information_method(support, labels, query, loss_of, temperature, lr, iterations):
    support, query = (torch.from_numpy(x) for x in _standardized(support, query))
    labels = torch.from_numpy(labels)
    weights = torch.stack([support[labels == c].mean(0) for c in range(WAYS)])

    def log_probabilities(points, w):
        squared = ((points[:, None, :] - w[None]) ** 2).sum(2)
        return torch.log_softmax(-temperature / 2 * squared, dim=1)

    def gradient_of(w):
        w = w.clone().requires_grad_()
        loss_of(log_probabilities(support, w), log_probabilities(query, w), labels).backward()
        return w.grad

    weights = _adam(weights, gradient_of, lr, iterations)
    return log_probabilities(query, weights).exp().numpy()


def _tim(
    support,
    labels,
    query,
    temperature=15.0,
    cross_entropy_weight=0.1,
    marginal_weight=1.0,
    conditional_weight=0.1,
    iterations=1000,
    lr=1e-4,
):
    def loss(support_log, query_log, labels):
        p = query_log.exp()
        cross_entropy = -support_log[torch.arange(len(labels)), labels].mean()
        marginal = p.mean(0)
        return (
            cross_entropy_weight * cross_entropy
            + marginal_weight * (marginal * marginal.log()).sum()
            - conditional_weight * (p * query_log).sum(1).mean()
        )

    return _information_method(support, labels, query, loss, temperature, lr, iterations)


def _alpha_tim(support, labels, query, alpha=2.0, temperature=15.0, iterations=1000, lr=1e-4):
    def tsallis(p):
        return (1 - (p**alpha).sum(-1)) / (alpha - 1)

    def loss(support_log, query_log, labels):
        p = query_log.exp()
        return -support_log[torch.arange(len(labels)), labels].mean() - (
            tsallis(p.mean(0)) - tsallis(p).mean()
        )

    return _information_method(support, labels, query, loss, temperature, lr, iterations)


@pytest.mark.parametrize(
    "name, reference, settings",
    [
        ("tim", _tim, {"iterations": 25, "lr": 0.02}),
        (
            "tim",
            _tim,
            {
                "iterations": 25,
                "lr": 0.02,
                "cross_entropy_weight": 1.0,
                "conditional_weight": 0.5,
                "temperature": 6.0,
            },
        ),
        ("alpha-tim", _alpha_tim, {"iterations": 25, "lr": 0.02, "alpha": 2.0}),
        ("alpha-tim", _alpha_tim, {"iterations": 25, "lr": 0.02, "alpha": 5.0, "temperature": 6.0}),
    ],
)
def test_information_maximization_equals_adam_on_the_written_out_loss(name, reference, settings, device):
    ours = _ours(name, device=device, **settings)
    expected = _per_task(reference, **settings)
    np.testing.assert_allclose(ours, expected, atol=1e-8, rtol=1e-6)
    unmoved = _ours(name, device=device, **{**settings, "iterations": 0})
    assert np.abs(expected - unmoved).max() > 0.01  # it moved


def test_alpha_tim_takes_the_papers_alpha_for_the_shots_and_1_2_below_two_queries_per_class(device):
    from pdenets.models.fewshot import AlphaTIM

    support, labels, query = _episode(device=device)  # 5 queries, 3 classes

    def batch(shots, queries):
        support_labels = torch.arange(WAYS, device=device).repeat_interleave(shots).expand(2, -1)
        return FewShotBatch(
            support[:, : WAYS * shots], support_labels, query.repeat(1, 2, 1)[:, :queries], WAYS
        )

    assert [AlphaTIM().alpha(batch(s, 2 * WAYS)) for s in (1, 2)] == [
        2.0,
        5.0,
    ]  # 2 queries per class: the paper's
    assert [AlphaTIM().alpha(batch(s, 2 * WAYS - 1)) for s in (1, 2)] == [1.2, 1.2]
    assert [AlphaTIM.preset("paper").alpha(batch(s, 2 * WAYS - 1)) for s in (1, 2)] == [2.0, 5.0]
    assert AlphaTIM(alpha=3.0).alpha(batch(1, WAYS)) == 3.0


def _graph(points, labels, n_top, sigma_neighbor, separate):
    """The Diff-ResNet few-shot graph: n_top entries (self first), Gaussian with the adaptive width, symmetric
    normalization, (W + Wᵀ)/2, and no edge between support points of different classes."""
    count = len(points)
    squared = ((points[:, None] - points[None]) ** 2).sum(2)
    weights = np.zeros((count, count))
    for i in range(count):
        order = np.argsort(np.where(np.arange(count) == i, -1.0, squared[i]), kind="stable")[:n_top]
        sigma = math.sqrt(squared[i, order[sigma_neighbor - 1]])
        weights[i, order] = np.exp(-squared[i, order] / sigma**2)
    degrees = weights.sum(1)
    weights = weights / np.sqrt(degrees)[:, None] / np.sqrt(degrees)[None]
    weights = (weights + weights.T) / 2
    if separate:
        for i in range(len(labels)):
            for j in range(len(labels)):
                if labels[i] != labels[j]:
                    weights[i, j] = 0.0
    return weights


def _head(
    support,
    labels,
    query,
    seed,
    *,
    epochs=10,
    lr=0.1,
    momentum=0.9,
    weight_decay=1e-4,
    num_steps=0,
    step_size=0.5,
    mu=0.0,
    n_top=None,
    sigma_neighbor=4,
    init="prototype",
    temperature=10.0,
    separate_support=True,
):
    support, query = _standardized(support, query)
    points = np.concatenate([support, query])
    graph = None
    if num_steps > 0 or mu > 0:
        entries = n_top if n_top is not None else max(2, min(7, len(points) // WAYS))
        graph = _graph(points, labels, entries, min(sigma_neighbor, entries), separate_support)
    diffusion = None
    if num_steps > 0:
        laplacian = np.diag(graph.sum(1)) - graph
        diffusion = torch.from_numpy(
            np.linalg.matrix_power(np.eye(len(points)) - step_size * laplacian, num_steps)
        )
    parameters = [p[0].double() for p in initial_parameters(points.shape[1], WAYS, [seed])]
    if init == "prototype":  # the head starts as nearest prototype: FC2 = 0, logits −s‖x − m‖²/2
        centres = torch.from_numpy(_means(support, labels))
        spread = float(
            sum(((centres[a] - centres[b]) ** 2).sum() for a in range(WAYS) for b in range(WAYS) if a != b)
        ) / (WAYS * (WAYS - 1))
        scale = temperature / spread
        parameters[2], parameters[3] = torch.zeros_like(parameters[2]), torch.zeros_like(parameters[3])
        parameters[4], parameters[5] = scale * centres, -scale / 2 * (centres**2).sum(1)
    x = torch.from_numpy(points)
    target = torch.from_numpy(labels)
    edges = None if graph is None else torch.from_numpy(graph)

    def logits_of(p):
        w1, b1, w2, b2, w3, b3 = p
        h = x + torch.relu(x @ w1.T + b1) @ w2.T + b2
        o = h @ w3.T
        return (o if diffusion is None else diffusion @ o) + b3

    def loss_of(p):
        o = logits_of(p)
        loss = torch.nn.functional.cross_entropy(o[: len(support)], target)
        if mu > 0:
            scaled = o / temperature if init == "prototype" else o
            pairs = ((scaled[:, None] - scaled[None]) ** 2).sum(2)
            loss = loss + mu / 2 * (edges * pairs).sum()
        return loss

    velocity = None
    milestones = {max(1, round(0.5 * epochs)), max(1, round(0.75 * epochs))}
    rate = lr
    for epoch in range(epochs):
        current = [p.clone().requires_grad_() for p in parameters]
        loss_of(current).backward()
        steps = [p.grad + weight_decay * p.detach() for p in current]
        velocity = steps if velocity is None else [momentum * v + s for v, s in zip(velocity, steps)]
        parameters = [p - rate * v for p, v in zip(parameters, velocity)]
        if epoch + 1 in milestones:
            rate *= 0.1
    with torch.no_grad():
        return torch.softmax(logits_of(parameters), 1)[len(support) :].numpy()


@pytest.mark.parametrize(
    "name, settings",
    [
        ("convection", {}),
        ("convection", {"epochs": 6, "lr": 0.3, "weight_decay": 0.01, "momentum": 0.5, "temperature": 4.0}),
        ("external", {}),
        ("external", {"mu": 0.5, "n_top": 4, "separate_support": False}),
        ("internal", {}),
        ("internal", {"num_steps": 3, "step_size": 0.3, "n_top": 3, "sigma_neighbor": 2}),
        ("internal", {"separate_support": False, "init": "random", "epochs": 8}),
    ],
)
def test_heads_equal_sgd_on_the_written_out_network(name, settings, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # the episode's 5 queries are fewer than 2 per class: the internal head answers nearest prototype there
    # unless told to train (tests/models/fewshot/test_heads.py checks that rule)
    trained = {"min_queries_per_class": 0.0} if name == "internal" else {}
    ours = _ours(name, seeds=[5, 6], device=device, **trained, **settings)
    support, labels, query = _episode()
    defaults = {"internal": {"num_steps": 5}, "external": {"mu": 0.01}}.get(name, {})  # two shots: r = 5
    expected = np.stack(
        [
            _head(support[t].numpy(), labels[t].numpy(), query[t].numpy(), seed, **{**defaults, **settings})
            for t, seed in enumerate((5, 6))
        ]
    )
    np.testing.assert_allclose(ours, expected, atol=1e-8, rtol=1e-6)


# ----------------------------------------------------------------------------------------
# the direction of every setting


def _batch(device="cpu"):
    support, labels, query = _episode(tasks=3, seed=1, device=device)
    return FewShotBatch(support, labels, query, WAYS)


def _sharpness(probabilities):
    return float(probabilities.max(2).values.mean())


@pytest.mark.parametrize(
    "name, setting, low, high",
    [
        ("bd-cspn", "temperature", 2.0, 20.0),
        ("pt-map", "lam", 2.0, 20.0),
        ("tim", "temperature", 1.0, 5.0),  # (its starting classifier: iterations = 0)
        ("alpha-tim", "temperature", 1.0, 5.0),  # (its starting classifier: iterations = 0)
        ("paddle", "temperature", 20.0, 100.0),
        ("convection", "temperature", 2.0, 20.0),
    ],
)
def test_a_higher_temperature_sharpens_the_probabilities(name, setting, low, high, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the method convection)
    batch = _batch(device)
    other = {"alpha-tim": {"iterations": 0}, "tim": {"iterations": 0}}.get(name, {})
    soft = method_from_name(name, **{setting: low}, **other).predict_proba(batch)
    sharp = method_from_name(name, **{setting: high}, **other).predict_proba(batch)
    assert _sharpness(sharp) > _sharpness(soft) + 0.02


def _proportion_entropy(probabilities):
    marginal = probabilities.mean(1)
    return float(-(marginal * marginal.log()).sum(1).mean())


def test_tim_weights_move_their_terms(device):
    batch = _batch(device)
    base = dict(iterations=60, lr=0.02)
    marginal = [
        _proportion_entropy(method_from_name("tim", **base, marginal_weight=w).predict_proba(batch))
        for w in (0.0, 1.0)
    ]
    assert marginal[1] > marginal[0] + 1e-3  # the marginal entropy is maximised
    conditional = [
        float(-(p * p.log()).sum(2).mean())
        for p in (
            method_from_name("tim", **base, conditional_weight=w).predict_proba(batch) for w in (0.0, 1.0)
        )
    ]
    assert conditional[1] < conditional[0] - 1e-3  # the conditional entropy is minimised
    # the support term alone fits the support: its points, given as queries, become surer of their labels
    on_support = FewShotBatch(batch.support, batch.support_labels, batch.support, WAYS)
    fitted = [
        float(
            method_from_name(
                "tim", **base, cross_entropy_weight=w, marginal_weight=0.0, conditional_weight=0.0
            )
            .predict_proba(on_support)
            .gather(2, batch.support_labels[..., None])
            .mean()
        )
        for w in (0.0, 1.0)
    ]
    start = float(
        method_from_name("tim", iterations=0)
        .predict_proba(on_support)
        .gather(2, batch.support_labels[..., None])
        .mean()
    )
    assert fitted[0] == pytest.approx(start, abs=1e-12) and fitted[1] > start + 1e-4


def test_paddle_lambda_lowers_the_entropy_of_the_proportions(device):
    batch = _batch(device)
    entropies = [
        _proportion_entropy(method_from_name("paddle", lam=lam).predict_proba(batch)) for lam in (0.0, 20.0)
    ]
    assert entropies[1] < entropies[0] - 1e-3


def test_pt_map_alpha_and_iterations_move_the_centres(device):
    batch = _batch(device)
    still = method_from_name("pt-map", alpha=0.0).predict_proba(batch)
    assert torch.allclose(still, method_from_name("pt-map", iterations=0).predict_proba(batch))
    assert not torch.allclose(still, method_from_name("pt-map", alpha=0.5).predict_proba(batch), atol=1e-3)


def test_laplacian_term_pulls_linked_queries_together(device):
    batch = _batch(device)
    affinity_agreement = []
    for lam in (0.0, 3.0):
        p = method_from_name("laplacianshot", lam=lam, knn=3).predict_proba(batch)
        affinity_agreement.append(float((p @ p.transpose(1, 2)).mean()))
    assert affinity_agreement[1] > affinity_agreement[0]


@pytest.mark.parametrize("setting, small, large", [("num_steps", 1, 10), ("step_size", 0.05, 0.5)])
def test_more_diffusion_smooths_the_internal_heads_outputs(setting, small, large, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    batch = _batch(device)

    def roughness(value):
        method = method_from_name("internal", epochs=1, lr=1e-12, min_queries_per_class=0, **{setting: value})
        probabilities = method.predict_proba(batch)
        return float(probabilities.var(1).mean())

    assert roughness(large) < roughness(small)


def test_mu_smooths_the_external_heads_outputs(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    batch = _batch(device)
    variances = [
        float(method_from_name("external", mu=mu, epochs=20).predict_proba(batch).var(1).mean())
        for mu in (0.0, 5.0)
    ]
    assert variances[1] < variances[0]


def test_separate_support_removes_exactly_the_edges_between_labelled_classes(device):
    from pdenets.models.fewshot.heads import HeadSettings, task_graphs

    support, labels, query = _episode(device=device)
    points = torch.cat([support, query], 1)
    plain = task_graphs(points, HeadSettings(n_top=6, sigma_neighbor=4))
    separated = task_graphs(points, HeadSettings(n_top=6, sigma_neighbor=4, separate_support=True), labels)
    differ = torch.zeros_like(plain, dtype=torch.bool)
    differ[:, :6, :6] = labels[:, :, None] != labels[:, None, :]
    assert bool((plain[differ] > 0).any())
    assert torch.equal(separated[differ], torch.zeros_like(separated[differ]))
    assert torch.equal(separated[~differ], plain[~differ])


def test_training_steps_and_rate_move_the_head_from_nearest_prototype(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    batch = _batch(device)
    untrained = method_from_name("convection", epochs=1, lr=1e-12).predict_proba(batch)
    support, labels, query = batch.support.cpu(), batch.support_labels.cpu(), batch.query.cpu()
    expected = np.stack(
        [_head(support[t].numpy(), labels[t].numpy(), query[t].numpy(), 0, epochs=0) for t in range(3)]
    )  # the imprinted head
    np.testing.assert_allclose(untrained.cpu().numpy(), expected, atol=1e-9)
    trained = method_from_name("convection", epochs=10, lr=0.1).predict_proba(batch)
    assert float((trained - untrained).abs().max()) > 1e-3


def test_classify_chunks_keep_each_tasks_own_seed(device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, labels, query = _episode(tasks=5, seed=3, device=device)
    method = method_from_name("internal", init="random")
    whole = classify(support, labels, query, WAYS, method, seeds=[10, 11, 12, 13, 14])
    chunked = classify(support, labels, query, WAYS, method, seeds=[10, 11, 12, 13, 14], chunk_size=2)
    alone = classify(support, labels, query, WAYS, method, seeds=[10, 11, 12, 13, 14], batched=False)
    assert torch.allclose(whole, chunked, atol=1e-12) and torch.allclose(whole, alone, atol=1e-12)
    batch = FewShotBatch(support, labels, query, WAYS, [10, 11, 12, 13, 14])
    assert batch.chunk(2, 4).seeds == [12, 13]
    fourth = classify(support[3:4], labels[3:4], query[3:4], WAYS, method, seeds=[13])
    assert torch.allclose(whole[3:4], fourth, atol=1e-12)


# ----------------------------------------------------------------------------------------
# preprocessing, the estimator


def test_a_class_that_receives_no_point_keeps_its_support_prototype(device):
    from pdenets.models.fewshot import rectified_prototypes

    # class 1's two support points lie nearer (in angle) to the prototypes of classes 0 and 2 than to their
    # own mean, at 45°: no point is assigned to class 1
    support = torch.tensor(
        [[[1.0, 0.0], [1.0, 0.05], [0.05, 1.0], [0.0, 1.0]]], dtype=torch.float64, device=device
    )
    labels = torch.tensor([[0, 1, 1, 2]], device=device)
    query = torch.tensor([[[1.0, 0.02], [0.02, 1.0]]], dtype=torch.float64, device=device)
    rectified = rectified_prototypes(support, labels, query, 3)
    assert torch.equal(rectified[0, 1], support[0, 1:3].mean(0))
    assert not torch.equal(rectified[0, 0], support[0, 0])


def test_centring_applies_to_support_and_queries_alike(device):
    from pdenets.models.fewshot import preprocess

    support, _, query = _episode(device=device)
    mean = torch.tensor([0.5, -1.0, 2.0, 0.25], dtype=torch.float64, device=device)
    centred_support, centred_query = preprocess(
        support, query, Preprocessing(centre=True, normalize=True), mean
    )
    assert torch.allclose(centred_support, torch.nn.functional.normalize(support - mean, dim=2))
    assert torch.allclose(centred_query, torch.nn.functional.normalize(query - mean, dim=2))


@pytest.mark.cpu_only(
    "DiffusionFewShotClassifier is a scikit-learn estimator: NumPy arrays in and out, torch on the CPU"
)
def test_the_estimator_uses_its_random_state_and_refuses_a_broken_base_mean():
    from pdenets.models.fewshot import DiffusionFewShotClassifier

    support, labels, query = _episode(tasks=1)
    X, y, Xq = support[0].numpy(), labels[0].numpy(), query[0].numpy()
    params = {"init": "random", "min_queries_per_class": 0}  # 5 queries, 3 classes: trained all the same
    first = (
        DiffusionFewShotClassifier("internal", method_params=params, random_state=1)
        .fit(X, y)
        .predict_proba(Xq)
    )
    again = (
        DiffusionFewShotClassifier("internal", method_params=params, random_state=1)
        .fit(X, y)
        .predict_proba(Xq)
    )
    other = (
        DiffusionFewShotClassifier("internal", method_params=params, random_state=2)
        .fit(X, y)
        .predict_proba(Xq)
    )
    assert np.array_equal(first, again) and not np.allclose(first, other, atol=1e-6)
    for broken in (np.full(4, np.nan), np.array([0.0, np.inf, 0.0, 0.0]), np.zeros(5)):
        with pytest.raises(ValueError, match="base_mean must be 4 finite numbers"):
            DiffusionFewShotClassifier(base_mean=broken).fit(X, y)


@pytest.mark.parametrize(
    "scores",
    [
        # found by a search for the instances that need the most rounds: 10 (5 × 5) and 7 (4 × 4)
        [
            [29, 95, 58, 91, 68],
            [57, 97, 19, 45, 80],
            [52, 62, 29, 59, 62],
            [47, 16, 1, 37, 33],
            [42, 65, 38, 94, 71],
        ],
        [[98, 99, 58, 37], [24, 96, 42, 91], [38, 80, 62, 89], [21, 38, 53, 39]],
    ],
)
def test_balanced_assignment_finishes_the_longest_chains_of_refusals(scores):
    """The instances whose deferred acceptance takes the most rounds (each round refuses one more pair): the
    assignment still equals the greedy over sorted pairs and fills every class."""
    scores = torch.tensor([scores], dtype=torch.float64)
    assigned = balanced_assignment(scores, 1)
    assert assigned[0].tolist() == _balanced_members(scores[0].numpy(), 1).tolist()
    assert sorted(assigned[0].tolist()) == list(range(scores.shape[2]))


def test_paddle_weighs_the_proportions_by_the_queries_beyond_one_per_class(device):
    batch = _batch(device)  # 5 queries, 3 classes: λ = 2 by default, 5 in the paper
    queries = batch.query.shape[1]
    default = method_from_name("paddle").predict_proba(batch)
    torch.testing.assert_close(default, method_from_name("paddle", lam=queries - WAYS).predict_proba(batch))
    paper = method_from_name("paddle", preset="paper").predict_proba(batch)
    torch.testing.assert_close(paper, method_from_name("paddle", lam=float(queries)).predict_proba(batch))
    assert not torch.allclose(default, paper, atol=1e-4)
    # one query per class: the proportions are not weighed at all
    even = FewShotBatch(batch.support, batch.support_labels, batch.query[:, :WAYS], WAYS)
    torch.testing.assert_close(
        method_from_name("paddle").predict_proba(even),
        method_from_name("paddle", lam=0.0).predict_proba(even),
    )
