"""The criteria that choose what to label next: uncertainty takes the smallest margins among the items
without a label; coverage's first pick is the candidate whose spread reaches the most uncertainty (computed
here by brute force) and it then covers another part of the graph rather than the neighbours of its first
pick, where uncertainty would not; random is seeded; the budget is refused out of range, at its bounds
accepted."""

import pytest
import torch

from pdenets.analysis.label_selection import margin_uncertainty, select_items


def _two_cliques(size=6):
    """Two cliques of ``size`` nodes without an edge between them, as a dense row-stochastic ``A``."""
    block = torch.full((size, size), 1.0 / size, dtype=torch.float64)
    return torch.block_diag(block, block)


def _probabilities(margins):
    margins = torch.as_tensor(margins, dtype=torch.float64)
    return torch.stack([(1 + margins) / 2, (1 - margins) / 2], 1)


def test_the_margin_uncertainty_is_one_less_the_gap_of_the_two_largest():
    probabilities = torch.tensor([[0.7, 0.2, 0.1], [0.4, 0.4, 0.2], [0.05, 0.15, 0.8]], dtype=torch.float64)
    assert torch.allclose(
        margin_uncertainty(probabilities), torch.tensor([0.5, 1.0, 0.35], dtype=torch.float64)
    )
    with pytest.raises(ValueError, match="C ≥ 2"):
        margin_uncertainty(torch.ones(3, 1))


def test_uncertainty_takes_the_smallest_margins_among_the_items_without_a_label():
    probabilities = _probabilities([0.1, 0.0, 0.5, 0.2, 0.05])
    candidates = torch.tensor([True, False, True, True, True])  # the tie (item 1) is labelled
    chosen, scores = select_items(probabilities, candidates, 3, "uncertainty")
    assert chosen.tolist() == [4, 0, 3]
    assert torch.allclose(scores, torch.tensor([0.95, 0.9, 0.8], dtype=torch.float64))


def test_coverage_first_picks_the_candidate_whose_spread_reaches_the_most_uncertainty():
    generator = torch.Generator().manual_seed(0)
    matrix = torch.rand(9, 9, generator=generator, dtype=torch.float64)
    matrix = matrix / matrix.sum(1, keepdim=True)  # not symmetric: gather must be the transpose
    probabilities = _probabilities(torch.rand(9, generator=generator, dtype=torch.float64))
    candidates = torch.tensor([True] * 6 + [False] * 3)
    chosen, scores = select_items(
        probabilities,
        candidates,
        1,
        "coverage",
        spread=lambda v: matrix @ v,
        gather=lambda v: matrix.T @ v,
    )
    uncertainty = margin_uncertainty(probabilities) * candidates
    gains = matrix.T @ uncertainty
    gains[~candidates] = -torch.inf
    assert chosen.tolist() == [int(gains.argmax())]
    assert scores[0] == pytest.approx(float(gains.max()), abs=1e-12)


def test_coverage_covers_the_other_clique_where_uncertainty_stays_in_one():
    matrix = _two_cliques()
    # the first clique much less sure than the second: uncertainty takes two of it, and so would a greedy
    # that took nothing off once a clique is covered (5 × 0.97 left there against 6 × 0.67)
    probabilities = _probabilities([0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.30, 0.31, 0.32, 0.33, 0.34, 0.35])
    candidates = torch.ones(12, dtype=torch.bool)
    by_uncertainty, _ = select_items(probabilities, candidates, 2, "uncertainty")
    assert [int(node) // 6 for node in by_uncertainty] == [0, 0]
    by_coverage, gains = select_items(probabilities, candidates, 2, "coverage", spread=lambda v: matrix @ v)
    assert sorted(int(node) // 6 for node in by_coverage) == [0, 1]
    assert gains[0] >= gains[1] > 0


def test_coverage_without_a_spread_and_an_unknown_criterion_are_refused():
    probabilities, candidates = _probabilities([0.1, 0.2]), torch.ones(2, dtype=torch.bool)
    with pytest.raises(ValueError, match="coverage needs the model's spread"):
        select_items(probabilities, candidates, 1, "coverage")
    with pytest.raises(ValueError, match="criterion must be one of typical, coverage, uncertainty, random"):
        select_items(probabilities, candidates, 1, "entropy")


def test_random_is_seeded_and_draws_only_candidates():
    probabilities = _probabilities(torch.linspace(0, 1, 50))
    candidates = torch.arange(50) % 3 != 0
    first, _ = select_items(probabilities, candidates, 10, "random", seed=4)
    again, _ = select_items(probabilities, candidates, 10, "random", seed=4)
    other, _ = select_items(probabilities, candidates, 10, "random", seed=5)
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert candidates[first].all() and len(set(first.tolist())) == 10


@pytest.mark.parametrize("criterion", ["uncertainty", "coverage", "random", "typical"])
def test_the_budget_is_accepted_up_to_the_candidates_and_refused_beyond(criterion):
    probabilities = _probabilities([0.1, 0.2, 0.3, 0.4])
    candidates = torch.tensor([True, True, False, True])
    given = dict(spread=lambda v: v, embedding=torch.arange(4.0).unsqueeze(1))
    chosen, _ = select_items(probabilities, candidates, 3, criterion, **given)
    assert sorted(chosen.tolist()) == [0, 1, 3]
    for budget in (0, 4, True, 2.0):
        with pytest.raises(ValueError, match=r"budget must be a whole number in \[1, 3\]"):
            select_items(probabilities, candidates, budget, criterion, **given)
    with pytest.raises(ValueError, match="every item has a label"):
        select_items(probabilities, torch.zeros(4, dtype=torch.bool), 1, criterion, **given)


def _three_groups():
    """Three groups of points on a line (sizes 9, 6 and 3), each with one outlier-ish end member."""
    generator = torch.Generator().manual_seed(2)
    groups = [(0.0, 9), (20.0, 6), (40.0, 3)]
    points = torch.cat(
        [centre + torch.randn(size, 1, generator=generator, dtype=torch.float64) for centre, size in groups]
    )
    group = torch.cat([torch.full((size,), index) for index, (_, size) in enumerate(groups)])
    return points, group


def test_typical_takes_the_densest_item_of_the_largest_group_no_label_speaks_for():
    points, group = _three_groups()
    probabilities = _probabilities(torch.zeros(18))
    labelled = group == 0
    labelled[1:] = False  # one label, in the largest group
    candidates = ~labelled
    chosen, scores = select_items(
        probabilities, candidates, 2, "typical", embedding=points, labelled=labelled, seed=0
    )
    # k = 1 + 2 clusters: the groups; the labelled one is spoken for, the next largest comes first
    assert group[chosen].tolist() == [1, 2]
    second = torch.nonzero(group == 1).flatten()
    centre = points[second].median()
    densest = second[torch.argmin((points[second].flatten() - centre).abs())]
    assert int(chosen[0]) == int(densest)  # not an end member of its group
    assert bool((scores > 0).all())
    # with no label, the largest group is taken first; then the others, one a group
    chosen, _ = select_items(probabilities, torch.ones(18, dtype=torch.bool), 3, "typical", embedding=points)
    assert group[chosen].tolist() == [0, 1, 2]


def test_typical_comes_back_to_a_group_once_each_has_its_label():
    points, group = _three_groups()
    labelled = torch.zeros(18, dtype=torch.bool)
    labelled[[0, 9, 15]] = True  # one a group: k = 3 + 3 clusters, each group's halves
    chosen, _ = select_items(
        _probabilities(torch.zeros(18)), ~labelled, 3, "typical", embedding=points, labelled=labelled
    )
    assert len(set(chosen.tolist())) == 3 and not labelled[chosen].any()


def test_typical_without_a_representation_of_every_item_is_refused():
    probabilities, candidates = _probabilities([0.1, 0.2, 0.3]), torch.ones(3, dtype=torch.bool)
    for embedding in (None, torch.zeros(2, 4), torch.zeros(3)):
        with pytest.raises(ValueError, match="typical needs the model's representation of the 3 items"):
            select_items(probabilities, candidates, 1, "typical", embedding=embedding)


def test_typical_cuts_labels_and_budget_into_clusters_up_to_the_cap_unless_the_budget_is_more():
    from pdenets.analysis.label_selection import MAX_CLUSTERS, typical_clusters

    assert typical_clusters(14, 14) == 28
    assert typical_clusters(MAX_CLUSTERS - 20, 20) == MAX_CLUSTERS  # at the cap
    assert typical_clusters(MAX_CLUSTERS - 19, 20) == MAX_CLUSTERS  # one past it
    assert typical_clusters(0, MAX_CLUSTERS + 1) == MAX_CLUSTERS + 1  # the budget alone asks for more
    assert typical_clusters(7, MAX_CLUSTERS + 1) == MAX_CLUSTERS + 1
