"""``pdenets run few-shot`` on a small features file: every study, resumable, numbers pinned for the seeds."""

import hashlib
import math

import numpy as np
import pytest
import torch

from pdenets.data.fewshot import OPEN_SET_LABEL, FeatureSet, save_features
from pdenets.experiments import run_task
from pdenets.experiments.config import ConfigError
from pdenets.models.fewshot import Preprocessing
from pdenets.tasks.fewshot.protocol import (
    QuerySetFacts,
    classes_without_a_query,
    clear_wins,
    diffuse_on_task_graph,
    episode_features,
    episode_scores,
    episode_sources,
    file_fingerprint,
    principal_components,
    query_set_facts,
    task_points,
    task_seeds,
)
from pdenets.tasks.fewshot.results import EpisodeSummary
from pdenets.tasks.fewshot.task import FewShotConfig, FewShotTask


@pytest.fixture(scope="module")
def features(tmp_path_factory):
    rng = np.random.default_rng(0)
    classes, per_class, dim = 24, 22, 12
    centres = rng.normal(size=(classes, dim)) * 1.3
    values = np.repeat(centres, per_class, 0) + rng.normal(size=(classes * per_class, dim))
    feature_set = FeatureSet(
        torch.tensor(values, dtype=torch.float32),
        torch.arange(classes).repeat_interleave(per_class),
        tuple(f"c{i}" for i in range(classes)),
        base_classes=tuple(range(8)),
        novel_classes=tuple(range(8, 24)),
    )
    return str(save_features(feature_set, tmp_path_factory.mktemp("features") / "toy.npz"))


def small(features, **changes):
    epochs = {name: {"epochs": 30} for name in ("convection", "external", "internal")}
    values = dict(
        datasets=[features],
        tasks=40,
        tasks_per_job=20,
        shots=[1, 5],
        workers=1,
        studies=["ablation"],
        methods=["prototype", "laplacianshot", "convection", "external", "internal"],
        method_settings=epochs,
    )
    values.update(changes)
    return FewShotTask(FewShotConfig(**values))


def test_every_query_set_shape_has_its_table_and_marks_broken_assumptions(features, tmp_path):
    out = tmp_path / "run"
    task = small(
        features,
        methods=["prototype", "pt-map", "paddle"],
        shots=[1],
        tasks=20,
        queries=[3],
        query_distributions=["balanced", "dirichlet:2"],
        open_set=[0, 2],
        query_modes=["together", "one-at-a-time"],
    )
    outcome = run_task(task, out=out, progress=False)
    shapes = outcome.results["shapes"]
    assert len(shapes) == 8 and sum(facts["balanced"] for facts in shapes.values()) == 1
    open_set = outcome.results["ablation"]["dirichlet:2, 3 queries per class + 2 open-set classes"]["toy"]
    entry = open_set["5-way 1-shot"]["paddle"]
    assert entry["tasks"] == 20 and 0.5 < entry["open_auroc"] <= 1 and 0 <= entry["open_rejected"] <= 1
    report = (out / "report.md").read_text()
    rows = [line for line in report.splitlines() if line.startswith(("| PT-MAP |", "| PADDLE |"))]
    marked = [row.split(" |")[0] for row in rows if "†" in row]
    assert marked == ["| PT-MAP"] * 7  # every shape but the balanced one, from the query sets drawn
    assert "query sets drawn" in report
    assert "one query at a time" in report and "assumes balanced queries" in report
    # one query at a time: the same tasks, every query its own task; PT-MAP falls back to its inductive
    # counterpart
    single = outcome.results["ablation"]["balanced, 3 queries per class, one query at a time"]["toy"][
        "5-way 1-shot"
    ]
    together = outcome.results["ablation"]["balanced, 3 queries per class"]["toy"]["5-way 1-shot"]
    assert single["prototype"]["mean"] == pytest.approx(together["prototype"]["mean"])
    assert single["pt-map"]["mean"] != together["pt-map"]["mean"]


def test_the_mark_follows_the_query_sets_drawn_not_the_shape_asked_for(features, tmp_path):
    # 22 samples a class, 1 shot, 21 queries a class: the Dirichlet proportions asked for cannot be drawn,
    # every class gives all it has, so every query set is balanced and PT-MAP keeps its promise unmarked
    task = small(
        features, methods=["prototype", "pt-map"], shots=[1], tasks=10, tasks_per_job=10, queries=[21],
        query_distributions=["dirichlet:0.5", "dirichlet:2"],
    )  # fmt: skip
    outcome = run_task(task, out=tmp_path / "capped", progress=False)
    capped = outcome.results["ablation"]["dirichlet:0.5, 21 queries per class"]["toy"]["5-way 1-shot"]
    assert capped["pt-map"]["unbalanced_share"] == 0 and capped["pt-map"]["empty_class_share"] == 0
    assert "†" not in (tmp_path / "capped" / "report.md").read_text()
    task = small(
        features, methods=["prototype", "pt-map"], shots=[1], tasks=10, tasks_per_job=10, queries=[3],
        query_distributions=["dirichlet:0.5"],
    )  # fmt: skip
    outcome = run_task(task, out=tmp_path / "skewed", progress=False)
    skewed = outcome.results["ablation"]["dirichlet:0.5, 3 queries per class"]["toy"]["5-way 1-shot"]
    assert skewed["pt-map"]["unbalanced_share"] == 1.0 and 0 < skewed["pt-map"]["empty_class_share"] <= 1
    assert "| PT-MAP | " in (tmp_path / "skewed" / "report.md").read_text()
    assert "†" in (tmp_path / "skewed" / "report.md").read_text()


def test_scores_per_task_count_right_answers_and_the_log_probability_of_the_truth():
    probabilities = torch.tensor(
        [
            [[0.7, 0.2, 0.1], [0.1, 0.3, 0.6], [0.0, 0.5, 0.5]],  # right, right, a zero on the truth
            [[0.2, 0.5, 0.3], [0.4, 0.4, 0.2], [0.3, 0.3, 0.4]],  # wrong, a tie (argmax: the first), right
        ],
        dtype=torch.float64,
    )
    labels = torch.tensor([[0, 2, 0], [0, 0, 2]])
    scores = episode_scores(probabilities, labels)
    assert scores.accuracies == [pytest.approx(2 / 3), pytest.approx(2 / 3)]
    assert scores.log_likelihoods[0] == pytest.approx((math.log(0.7) + math.log(0.6) + math.log(1e-300)) / 3)
    assert scores.log_likelihoods[1] == pytest.approx((math.log(0.2) + math.log(0.4) + math.log(0.4)) / 3)
    assert scores.open_auroc is None and scores.open_rejected is None  # no open-set query


def test_open_set_queries_are_scored_by_auroc_with_ties_as_halves_and_refused_strictly_below_one_half():
    # top probabilities: known 0.8, 0.5 (exactly one half: kept), 0.45 (refused); open-set 0.5, 0.3
    probabilities = torch.tensor(
        [[[0.8, 0.2], [0.5, 0.5], [0.45, 0.4], [0.5, 0.5], [0.3, 0.3]]], dtype=torch.float64
    )
    labels = torch.tensor([[0, 0, 1, OPEN_SET_LABEL, OPEN_SET_LABEL]])
    scores = episode_scores(probabilities, labels)
    # pairs (known, open): 0.8 beats both; 0.5 ties 0.5 and beats 0.3; 0.45 loses to 0.5, beats 0.3
    assert scores.open_auroc == [pytest.approx((2 + 1.5 + 1) / 6)]
    assert scores.open_rejected == [pytest.approx(1 / 2)]  # 0.3 refused, 0.5 kept
    assert scores.known_rejected == [pytest.approx(1 / 3)]
    assert scores.accuracies == [pytest.approx(2 / 3)]  # the open-set queries do not count; a tie: class 0


def test_query_set_facts_count_unequal_and_empty_classes():
    labels = torch.tensor([[0, 1, 2, 2, 1, 0], [0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, OPEN_SET_LABEL]])
    assert query_set_facts(labels, 3) == QuerySetFacts(query_sets=3, unbalanced=2, empty_class=1)
    assert classes_without_a_query(labels, 3).tolist() == [False, True, False]
    # balanced but with an open-set query: unbalanced all the same
    assert query_set_facts(torch.tensor([[0, 1, OPEN_SET_LABEL]]), 2).unbalanced == 1
    with pytest.raises(ValueError, match=r"query labels must be \(tasks, queries\), got shape \(6,\)"):
        query_set_facts(labels[0], 3)


def test_a_win_is_clear_only_beyond_both_confidence_half_widths():
    entries = {
        "a": EpisodeSummary(70.0, 1.5, 100, 0.1, 100.0),
        "b": EpisodeSummary(67.0, 1.5, 100, 0.1, 100.0),  # gap 3 = 1.5 + 1.5: not beyond
        "c": EpisodeSummary(66.9, 1.5, 100, 0.1, 100.0),
        "d": EpisodeSummary(75.0, 0.5, 100, 0.1, 100.0),
        "e": EpisodeSummary(50.0, float("nan"), 1, 0.1, 100.0),  # one task: no interval, never clear
    }
    wins = clear_wins(entries, "a", ["b", "c", "d", "e", "absent"])
    assert list(wins) == ["b", "c", "d", "e"]
    assert (wins["b"].difference, wins["b"].clearly) == (pytest.approx(3.0), False)
    assert wins["c"].clearly and wins["c"].difference == pytest.approx(3.1)
    assert (wins["d"].difference, wins["d"].clearly) == (pytest.approx(-5.0), False)
    assert not wins["e"].clearly


def test_principal_components_match_numpys_svd_up_to_sign():
    rng = np.random.default_rng(0)
    points = rng.normal(size=(12, 4)) @ np.diag([5.0, 2.0, 0.5, 0.1]) + 3.0
    projected = principal_components(torch.tensor(points, dtype=torch.float32), 2)
    assert projected.dtype == torch.float32 and projected.shape == (12, 2)
    centred = points - points.mean(0)
    _, singular, directions = np.linalg.svd(centred, full_matrices=False)
    expected = centred @ directions[:2].T
    signs = np.sign((projected.numpy() * expected).sum(0))
    np.testing.assert_allclose(projected.numpy() * signs, expected, rtol=1e-4, atol=1e-4)
    # each component carries its singular value's share of the spread
    np.testing.assert_allclose(np.linalg.norm(projected.numpy(), axis=0), singular[:2], rtol=1e-5)


def test_diffusion_on_a_task_graph_keeps_each_separate_clusters_mean_and_pulls_it_together():
    generator = torch.Generator().manual_seed(0)
    cluster = torch.randn(4, 3, generator=generator, dtype=torch.float64)
    points = torch.cat([cluster, cluster + 100.0])  # two clusters no 4-nearest-neighbour graph joins
    diffused = diffuse_on_task_graph(points, n_top=4, sigma_neighbor=2, step_size=0.5, steps=3)
    for rows in (slice(0, 4), slice(4, 8)):
        torch.testing.assert_close(diffused[rows].mean(0), points[rows].mean(0))
        spread_before = (points[rows] - points[rows].mean(0)).norm()
        assert (diffused[rows] - diffused[rows].mean(0)).norm() < spread_before
    torch.testing.assert_close(diffuse_on_task_graph(points, 4, 2, 0.5, 0), points)  # r = 0: unchanged


def _feature_set(classes=6, per_class=5, base=(0,)):
    index = torch.arange(classes * per_class, dtype=torch.float64)
    labels = torch.arange(classes).repeat_interleave(per_class)
    features = torch.stack(
        [index, labels.double(), torch.ones_like(index)], 1
    )  # a sample's row says who it is
    novel = tuple(c for c in range(classes) if c not in base)
    names = tuple(f"c{k}" for k in range(classes))
    return FeatureSet(features, labels, names, base_classes=tuple(base), novel_classes=novel)


def test_episodes_bring_the_features_of_their_own_samples_whatever_else_is_drawn():
    features = _feature_set()
    episodes, support, query = episode_features(features, ways=3, shots=2, queries=2, seed=7, tasks=range(4))
    assert support.shape == (4, 6, 3) and query.shape == (4, 6, 3)
    assert torch.equal(support[..., 0].long(), episodes.support) and torch.equal(
        query[..., 0].long(), episodes.query
    )
    # each sample's class is the class its episode label names, and a novel one
    for t in range(4):
        assert torch.equal(support[t, :, 1].long(), episodes.classes[t][episodes.support_labels[t]])
        assert torch.equal(query[t, :, 1].long(), episodes.classes[t][episodes.query_labels[t]])
        assert 0 not in episodes.classes[t].tolist()
    again, alone, _ = episode_features(features, ways=3, shots=2, queries=2, seed=7, tasks=[2])
    assert torch.equal(alone[0], support[2]) and torch.equal(again.classes[0], episodes.classes[2])
    points, labels, count = task_points(features, 3, 2, 2, 7, Preprocessing(normalize=True), task=2)
    assert count == 6 and points.shape == (12, 3)
    assert labels.tolist() == episodes.support_labels[2].tolist() + episodes.query_labels[2].tolist()
    torch.testing.assert_close(points.norm(dim=1), torch.ones(12, dtype=torch.float64))
    # task seeds: a function of (seed, task) alone, numpy's SeedSequence of the pair
    assert task_seeds(7, [5, 1]) == [int(np.random.SeedSequence([7, t]).generate_state(1)[0]) for t in (5, 1)]
    assert task_seeds(7, [1]) != task_seeds(8, [1])


def test_a_features_file_is_fingerprinted_by_its_bytes_and_checked_for_the_tasks_asked(tmp_path):
    path = save_features(_feature_set(), tmp_path / "toy.npz")
    sources = episode_sources([str(path)], ways=(3, 5))
    ((label, (where, fingerprint, features)),) = sources.items()
    assert label == "toy" and where == str(path) and features.novel_classes == (1, 2, 3, 4, 5)
    assert fingerprint == hashlib.sha256(path.read_bytes()).hexdigest()[:16] == file_fingerprint(path)
    with pytest.raises(ConfigError, match="6-way tasks but .*toy.npz has 5 novel classes"):
        episode_sources([str(path)], ways=(6,))
    bare = save_features(_feature_set(base=()), tmp_path / "bare.npz")
    with pytest.raises(ConfigError, match="bare.npz has no base classes nor base_mean to centre with"):
        episode_sources([str(bare)], centred=True)
    other = tmp_path / "other.bin"
    content = bytearray(path.read_bytes())
    content[-1] ^= 1
    other.write_bytes(bytes(content))
    assert file_fingerprint(other) != fingerprint
