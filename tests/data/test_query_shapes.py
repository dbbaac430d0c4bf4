"""Query sets of realistic shape: Dirichlet proportions, open-set classes, and how their tasks are scored."""

import numpy as np
import pytest
import torch

from pdenets.data.fewshot import OPEN_SET_LABEL, EpisodeSampler, QueryShape
from pdenets.tasks.fewshot.protocol import episode_scores


def test_dirichlet_counts_follow_the_concentration_and_sum_to_the_query_budget():
    shape_flat, shape_skewed = QueryShape.parse("dirichlet:100"), QueryShape.parse("dirichlet:0.2")
    flat = np.stack([shape_flat.counts(np.random.default_rng(seed), 5, 15) for seed in range(200)])
    skewed = np.stack([shape_skewed.counts(np.random.default_rng(seed), 5, 15) for seed in range(200)])
    assert (flat.sum(1) == 75).all() and (skewed.sum(1) == 75).all()
    assert flat.std(1).mean() < 2.0 < 15.0 < skewed.std(1).mean()  # near-balanced against nearly one class
    # this seed's draw, pinned: proportions from Dirichlet(2), rounded by largest remainders
    assert QueryShape.parse("dirichlet:2").counts(np.random.default_rng(0), 5, 15).tolist() == [
        13,
        19,
        8,
        29,
        6,
    ]
    # a class with too few samples gives what it has, the others share the rest in their proportions
    capped = QueryShape.parse("dirichlet:2").counts(np.random.default_rng(0), 5, 15, room=np.full(5, 19))
    assert capped.tolist() == [18, 19, 11, 19, 8] and capped.sum() == 75  # 29 capped at 19; 10 shared


def test_balanced_tasks_are_drawn_as_before_and_open_set_queries_come_from_absent_classes():
    labels = torch.arange(12).repeat_interleave(30)
    plain = EpisodeSampler(labels, range(12), ways=4, shots=2, queries=5, seed=3)
    open_set = EpisodeSampler(
        labels, range(12), ways=4, shots=2, queries=5, seed=3, shape=QueryShape(open_set=2)
    )
    a, b = plain.sample(range(4)), open_set.sample(range(4))
    assert torch.equal(a.support, b.support) and torch.equal(a.query, b.query[:, :20])
    assert b.query.shape == (4, 30) and (b.query_labels[:, 20:] == OPEN_SET_LABEL).all()
    for task in range(4):
        chosen = set(b.classes[task].tolist())
        absent = set(labels[b.query[task, 20:]].tolist())
        assert len(absent) == 2 and not absent & chosen


def test_open_set_queries_are_left_out_of_the_accuracy_and_scored_by_how_unsure_they_leave_a_method():
    probabilities = torch.tensor([[[0.9, 0.1], [0.2, 0.8], [0.55, 0.45], [0.6, 0.4]]])
    labels = torch.tensor([[0, 0, OPEN_SET_LABEL, OPEN_SET_LABEL]])
    scores = episode_scores(probabilities, labels)
    assert scores.accuracies == [0.5]  # two known queries, one right; the open-set ones do not count
    assert scores.log_likelihoods == [pytest.approx((np.log(0.9) + np.log(0.2)) / 2)]
    # top probabilities: known 0.9, 0.8; open-set 0.55, 0.6: every open-set query less sure than every known
    # one
    assert scores.open_auroc == [1.0] and scores.open_rejected == [0.0] and scores.known_rejected == [0.0]
    unsure = episode_scores(
        torch.tensor([[[0.9, 0.1], [0.45, 0.55], [0.7, 0.3]]]), torch.tensor([[0, 1, OPEN_SET_LABEL]])
    )
    assert unsure.open_auroc == [0.5] and unsure.accuracies == [1.0]
