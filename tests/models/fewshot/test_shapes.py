"""Every few-shot method in every episode shape users bring: many ways, one query per class, unbalanced
queries.

On well-separated clusters every method must be (nearly) always right; on features that carry no
class information no method may be far below chance. Default settings throughout: the defaults are
what a user gets — except that TIM and α-TIM take 100 Adam steps at 10⁻³ instead of 1,000 at 10⁻⁴
(the same distance travelled, a tenth of the time).
"""

import itertools

import pytest
import torch

from pdenets.models.fewshot import METHOD_CLASSES, METHODS, Preprocessing, classify, method_from_name

SHAPES = list(itertools.product((2, 5, 20), (1, 5), (1, 3, 15)))


def _episodes(ways, shots, queries_per_class, *, tasks=2, dim=32, spread=4.0, seed=0, device="cpu"):
    """``tasks`` episodes; ``queries_per_class`` an int, or a list (unbalanced queries). Drawn on the CPU,
    moved to ``device``."""
    generator = torch.Generator().manual_seed(seed)
    counts = queries_per_class if isinstance(queries_per_class, list) else [queries_per_class] * ways
    centres = torch.randn(tasks, ways, dim, generator=generator, dtype=torch.float64) * spread
    support = centres.repeat_interleave(shots, 1)
    support = support + torch.randn(support.shape, generator=generator, dtype=torch.float64)
    query_labels = torch.repeat_interleave(torch.arange(ways), torch.tensor(counts))
    query = centres[:, query_labels] + torch.randn(
        tasks, len(query_labels), dim, generator=generator, dtype=torch.float64
    )
    support_labels = torch.arange(ways).repeat_interleave(shots).expand(tasks, -1)
    return tuple(t.to(device) for t in (support, support_labels, query, query_labels.expand(tasks, -1)))


def _method(name):
    return method_from_name(name, **({"iterations": 100, "lr": 1e-3} if name in ("tim", "alpha-tim") else {}))


def _accuracy(method, episodes):
    support, support_labels, query, query_labels = episodes
    probabilities = classify(
        support,
        support_labels,
        query,
        int(support_labels.max()) + 1,
        _method(method),
        Preprocessing(normalize=True),
    )
    assert probabilities.shape == query.shape[:2] + (int(support_labels.max()) + 1,)
    assert torch.allclose(probabilities.sum(2), torch.ones_like(probabilities[..., 0]))
    return float((probabilities.argmax(2) == query_labels).double().mean())


@pytest.mark.parametrize("method", METHODS)
def test_every_method_separates_clear_clusters_in_every_episode_shape(method, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    failures = []
    for ways, shots, queries in SHAPES:
        seed = ways * 100 + shots * 10 + queries
        accuracy = _accuracy(method, _episodes(ways, shots, queries, seed=seed, device=device))
        if accuracy < 0.95:
            failures.append(f"{ways}-way {shots}-shot {queries} queries: {accuracy:.1%}")
    assert not failures, failures


@pytest.mark.parametrize(
    "method", [m for m in METHODS if not getattr(METHOD_CLASSES[m], "assumes_balanced_queries", False)]
)
def test_unbalanced_queries(method, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    # 5-way: one class with 15 queries, others with 1-4; 20-way: one to three queries per class
    for ways, counts in ((5, [15, 1, 2, 3, 4]), (20, [1, 2, 3] * 6 + [1, 2])):
        for shots in (1, 5):
            accuracy = _accuracy(method, _episodes(ways, shots, counts, seed=7 + shots, device=device))
            assert accuracy >= 0.95, (method, ways, shots, accuracy)


def test_balanced_query_methods_say_so(device):
    # PT-MAP's Sinkhorn fixes the class sizes, TIM's and α-TIM's marginal entropies favour equal ones,
    # BD-CSPN's shift assumes the support's class proportions: documented, flagged
    assert {m for m in METHODS if METHOD_CLASSES[m].assumes_balanced_queries} == {
        "pt-map",
        "tim",
        "alpha-tim",
        "bd-cspn",
    }


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("ways", [2, 5])
def test_one_query_at_a_time_is_never_uniform_and_never_worse_than_nearest_prototype(method, ways, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    support, support_labels, query, query_labels = _episodes(
        ways, 1, 4, tasks=3, spread=1.5, seed=ways, device=device
    )
    # every query its own task: the support repeated, one query each
    count = query.shape[1]
    singles = (
        support.repeat_interleave(count, 0),
        support_labels.repeat_interleave(count, 0),
        query.reshape(-1, 1, query.shape[2]),
        query_labels.reshape(-1, 1),
    )
    probabilities = classify(
        singles[0], singles[1], singles[2], ways, _method(method), Preprocessing(normalize=True)
    )
    spread = probabilities.max(2).values - probabilities.min(2).values
    assert float(spread.min()) > 1e-3, f"{method}: a uniform answer to a single query"
    accuracy = float((probabilities.argmax(2) == singles[3]).double().mean())
    nearest = classify(*singles[:3], ways, "prototype", Preprocessing(normalize=True)).argmax(2)
    baseline = float((nearest == singles[3]).double().mean())
    assert accuracy >= baseline - 1e-12, (method, accuracy, baseline)


BALANCE_ASSUMING = {"tim": 15.0, "alpha-tim": 15.0, "pt-map": 20.0, "bd-cspn": 1.0}  # their scales


@pytest.mark.parametrize("method, scale", list(BALANCE_ASSUMING.items()))
def test_balanced_methods_return_nearest_prototype_when_the_queries_cannot_be_balanced(method, scale, device):
    from pdenets.models.fewshot import FewShotBatch, prototypes

    support, support_labels, query, _ = _episodes(5, 2, 1, tasks=2, spread=1.0, device=device)
    support, query = support / 4, query / 4  # probabilities that do not saturate
    batch = FewShotBatch(support, support_labels, query[:, :4], 5)  # 4 queries, 5 classes: one short
    assert not batch.can_balance
    centres = prototypes(support, support_labels, 5)
    nearest = torch.softmax(-scale / 2 * torch.cdist(batch.query, centres).square(), 2)
    torch.testing.assert_close(_method(method).predict_proba(batch), nearest)
    full = FewShotBatch(support, support_labels, query, 5)  # 5 queries: balanced is possible, the method runs
    assert full.can_balance
    assert not torch.allclose(_method(method).predict_proba(full)[:, :4], nearest, rtol=0, atol=1e-6)


@pytest.mark.parametrize("method", list(BALANCE_ASSUMING))
@pytest.mark.parametrize("ways", [5, 20])
def test_a_single_query_on_raw_features_is_answered_as_nearest_prototype_answers_it(method, ways, device):
    # synthetic clusters off the origin with negative coordinates, no preprocessing: PT-MAP's power transform
    # and BD-CSPN's cosine would answer otherwise
    support, support_labels, query, query_labels = _episodes(
        ways, 1, 3, tasks=2, spread=0.5, seed=11 + ways, device=device
    )
    support, query = support - 3.0, query - 3.0
    count = query.shape[1]
    singles = (
        support.repeat_interleave(count, 0),
        support_labels.repeat_interleave(count, 0),
        query.reshape(-1, 1, query.shape[2]),
    )
    answers = classify(*singles, ways, _method(method), Preprocessing()).argmax(2)
    nearest = classify(*singles, ways, "prototype", Preprocessing()).argmax(2)
    assert torch.equal(answers, nearest)
    assert 1 / ways < float((nearest == query_labels.reshape(-1, 1)).double().mean()) < 1  # not trivial


@pytest.mark.parametrize("method", METHODS)
def test_any_feature_scale_gives_the_same_finite_answer(method, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    support, support_labels, query, _ = _episodes(5, 1, 3, tasks=2, spread=1.0, seed=3, device=device)
    seeds = [1, 2]
    reference = classify(support, support_labels, query, 5, _method(method), Preprocessing(), seeds=seeds)
    for scale in (1e3, 1e-3):
        scaled = classify(
            support * scale, support_labels, query * scale, 5, _method(method), Preprocessing(), seeds=seeds
        )
        assert torch.allclose(scaled, reference, atol=1e-6), (method, scale)
    for scale in (1e20, 1e-30):  # float32 squares overflow or underflow at these scales
        for preprocessing in (Preprocessing(), Preprocessing(normalize=True)):
            probabilities = classify(
                (support * scale).float(),
                support_labels,
                (query * scale).float(),
                5,
                _method(method),
                preprocessing,
                seeds=seeds,
            )
            assert bool(torch.isfinite(probabilities).all()), (method, scale)
            assert float((probabilities.max(2).values - probabilities.min(2).values).min()) > 1e-3, (
                method,
                scale,
            )


@pytest.mark.parametrize("method", ["convection", "external", "internal"])
def test_batched_heads_equal_the_per_task_reference_on_raw_features(method, device):
    from pdenets.models.fewshot import FewShotBatch, preprocess, train_heads_one_by_one

    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    support, support_labels, query, _ = _episodes(5, 2, 3, tasks=3, spread=1.0, seed=11, device=device)
    support, query = 40 * support + 7, 40 * query + 7  # raw features far from unit scale
    seeds = [3, 4, 5]
    head = method_from_name(method)
    batched = classify(support, support_labels, query, 5, head, Preprocessing(), seeds=seeds)
    scaled_support, scaled_query = preprocess(support, query, Preprocessing())
    batch = FewShotBatch(scaled_support, support_labels, scaled_query, 5, seeds)
    reference = torch.softmax(
        train_heads_one_by_one(
            scaled_support,
            support_labels,
            scaled_query,
            5,
            head.head_settings(batch),
            seeds,
            prototypes=batch.prototypes,
        ),
        2,
    )
    assert torch.allclose(batched, reference, atol=1e-9)


@pytest.mark.parametrize("method", METHODS)
def test_no_method_is_far_below_chance_on_uninformative_features(method, device):
    # device: needs the heads' initial parameters on the inputs' device (models/fewshot/heads.py:
    # initial_parameters draws them on the CPU; _train_chunk and train_heads_one_by_one keep them there)
    # (the methods convection, external and internal)
    for ways, shots, queries in ((5, 1, 1), (20, 1, 1), (5, 5, 15)):
        accuracy = _accuracy(
            method, _episodes(ways, shots, queries, tasks=12, spread=0.0, seed=ways + queries, device=device)
        )
        assert accuracy >= 0.5 / ways, (method, ways, shots, queries, accuracy)


@pytest.mark.parametrize(
    "ways, shots, queries, entries",
    [(20, 1, 1, 2), (5, 1, 1, 2), (5, 5, 1, 6), (5, 1, 15, 7), (20, 5, 15, 7)],
)
def test_the_graph_adapts_to_the_points_per_class(ways, shots, queries, entries, device):
    from pdenets.models.fewshot import FewShotBatch, Internal
    from pdenets.models.fewshot.heads import task_graphs

    support, support_labels, query, query_labels = _episodes(ways, shots, queries, tasks=3, device=device)
    batch = FewShotBatch(support, support_labels, query, ways)
    head = Internal().head_settings(batch)
    assert head.n_top == (entries,) * 3 and head.sigma_neighbor == (min(4, entries),) * 3
    assert head.num_steps == (10 if shots == 1 else 5)
    # on clear clusters the adaptive graph keeps (nearly) all its weight inside the classes: with the paper's
    # 7 entries and 2 points per class, at most 1 of 6 neighbours can be of the same class
    weights = task_graphs(torch.cat([support, query], 1), head)
    labels = torch.cat([support_labels, query_labels], 1)
    off_diagonal = weights * (1 - torch.eye(weights.shape[1], dtype=weights.dtype, device=device))
    same = (labels[:, :, None] == labels[:, None, :]).to(weights.dtype)
    assert float((off_diagonal * same).sum() / off_diagonal.sum()) > 0.9
    if support.shape[1] + query.shape[1] >= 5:
        assert Internal(n_top=5).head_settings(batch).n_top == 5
    else:  # a setting is never clamped silently
        with pytest.raises(ValueError, match="n_top=5 neighbours requested but only"):
            Internal(n_top=5).head_settings(batch)


def test_the_graph_follows_the_smallest_class_of_unbalanced_queries(device):
    from pdenets.models.fewshot import FewShotBatch, Internal

    # 5-way 1-shot, 15 queries of one class and 1–4 of the others: the smallest class holds 2 points
    support, support_labels, query, _ = _episodes(5, 1, [15, 1, 2, 3, 4], tasks=2, device=device)
    head = Internal().head_settings(FewShotBatch(support, support_labels, query, 5))
    assert head.n_top == (2, 2) and head.sigma_neighbor == (2, 2)
    # the average class holds 6 points, the rule of the mean would have kept 6 entries


@pytest.mark.parametrize("method", METHODS)
def test_duplicate_points_get_an_answer_alike_from_every_method(method, device):
    """User data holds duplicates (the same sentence twice, embedded alike). With a class that gets no query
    the graph keeps 2 entries per point, so a query's copy sets its kernel width to zero: the heads' graph
    links the copies to each other (the kernel's limit) instead of refusing the task."""
    support, support_labels, query, _ = _episodes(5, 1, [4, 3, 3, 2, 0], tasks=2, device=device)
    query = torch.cat([query, query[:, :1], query[:, 5:6]], 1)  # two queries twice, one of them a support's
    query[:, -1] = support[:, 1]
    probabilities = classify(
        support, support_labels, query, 5, _method(method), Preprocessing(normalize=True)
    )
    assert bool(torch.isfinite(probabilities).all())
    answers = probabilities.argmax(2)
    assert torch.equal(answers[:, 0], answers[:, -2])


@pytest.mark.parametrize("method", ["bd-cspn", "paddle"])
@pytest.mark.parametrize("scale", [1e20, 1e-20, 1e30, 1e-30])
def test_a_scale_free_method_answers_alike_at_any_magnitude_when_called_directly(method, scale):
    """BD-CSPN's cosines and PADDLE's temperature (set by the prototypes' spread) do not read the features'
    scale: ``predict_proba`` itself, without :func:`classify`'s rescaling, gives the same probabilities on
    float32 features whose squares overflow (``1e20``) or underflow (``1e-20``)."""
    from pdenets.models.fewshot import FewShotBatch

    support, support_labels, query, _ = _episodes(5, 1, 3, tasks=3, spread=2.0, seed=5)
    support, query = support.float(), query.float()
    reference = method_from_name(method).predict_proba(FewShotBatch(support, support_labels, query, 5))
    scaled = method_from_name(method).predict_proba(
        FewShotBatch(support * scale, support_labels, query * scale, 5)
    )
    assert torch.allclose(scaled, reference, atol=1e-5), (method, scale)


@pytest.mark.parametrize("method", ["tim", "alpha-tim", "prototype", "laplacianshot"])
def test_a_method_with_unit_scale_temperatures_refuses_non_finite_probabilities_naming_itself(method):
    from pdenets.models.fewshot import FewShotBatch

    support, support_labels, query, _ = _episodes(5, 1, 3, tasks=2, spread=2.0, seed=5)
    batch = FewShotBatch(support.float() * 1e20, support_labels, query.float() * 1e20, 5)
    with pytest.raises(ValueError, match=rf"^{method}: non-finite probabilities on features of magnitude"):
        _method(method).predict_proba(batch)


def test_a_plugin_method_returning_nan_is_refused_naming_it():
    """The check holds for any subclass: a method defined outside pdenets is refused the same way."""
    from dataclasses import dataclass

    from pdenets.models.fewshot import FewShotBatch, FewShotMethod

    @dataclass(frozen=True)
    class NoSettings:
        pass

    class Broken(FewShotMethod):
        name, is_transductive, settings_class = "broken", False, NoSettings

        def predict_proba(self, batch):
            return torch.full((batch.tasks, batch.queries, batch.ways), float("nan"))

    support, support_labels, query, _ = _episodes(3, 1, 1, tasks=1)
    with pytest.raises(ValueError, match="^broken: non-finite probabilities"):
        Broken().predict_proba(FewShotBatch(support, support_labels, query, 3))


def test_pt_map_answers_identical_queries_with_their_nearest_prototype():
    """Fewer distinct queries than classes cannot be balanced over them (Sinkhorn's plan would be uniform, and
    every query class 0): PT-MAP answers them as nearest prototype does, as it does fewer queries than
    classes."""
    from pdenets.models.fewshot import FewShotBatch

    support, support_labels, query, query_labels = _episodes(5, 1, 3, tasks=2, spread=4.0, seed=2)
    for position in (0, 7, 14):  # one query of classes 0, 2 and 4, ten times
        copies = query[:, position : position + 1].expand(-1, 10, -1).contiguous()
        answers = method_from_name("pt-map").predict_proba(FewShotBatch(support, support_labels, copies, 5))
        assert (answers.argmax(2) == query_labels[:, position : position + 1]).all(), position
    two = torch.cat([query[:, :1].expand(-1, 4, -1), query[:, 14:15].expand(-1, 4, -1)], 1)  # 2 < 5 distinct
    answers = method_from_name("pt-map").predict_proba(FewShotBatch(support, support_labels, two, 5))
    assert answers.argmax(2)[:, :4].eq(0).all() and answers.argmax(2)[:, 4:].eq(4).all()
    # a task's answer does not depend on the others of its batch: only the degenerate task falls back
    mixed = torch.stack([query[0, :8], two[1]])
    together = method_from_name("pt-map").predict_proba(FewShotBatch(support, support_labels, mixed, 5))
    alone = method_from_name("pt-map").predict_proba(
        FewShotBatch(support[:1], support_labels[:1], mixed[:1], 5)
    )
    torch.testing.assert_close(together[:1], alone)


def test_an_unknown_preset_is_refused_with_the_methods_presets():
    from pdenets.models.fewshot import BDCSPN

    with pytest.raises(ValueError, match=r"^bd-cspn has no preset 'bogus'; its presets: easyfsl, paper$"):
        BDCSPN.preset("bogus")
    with pytest.raises(ValueError, match="tim has no preset 'easyfsl'; its presets: paper"):
        method_from_name("tim", preset="easyfsl")
    # a method without a paper preset of its own: its defaults are the paper's
    assert method_from_name("prototype", preset="paper").settings == method_from_name("prototype").settings
    paper_tim = method_from_name("tim", preset="paper").settings
    assert (paper_tim.iterations, paper_tim.lr) == (1000, 1e-4)
    assert method_from_name("tim").settings.iterations == 100
