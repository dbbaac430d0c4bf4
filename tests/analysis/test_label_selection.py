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
    with pytest.raises(ValueError, match="criterion must be one of uncertainty, coverage, random"):
        select_items(probabilities, candidates, 1, "entropy")


def test_random_is_seeded_and_draws_only_candidates():
    probabilities = _probabilities(torch.linspace(0, 1, 50))
    candidates = torch.arange(50) % 3 != 0
    first, _ = select_items(probabilities, candidates, 10, "random", seed=4)
    again, _ = select_items(probabilities, candidates, 10, "random", seed=4)
    other, _ = select_items(probabilities, candidates, 10, "random", seed=5)
    assert torch.equal(first, again) and not torch.equal(first, other)
    assert candidates[first].all() and len(set(first.tolist())) == 10


@pytest.mark.parametrize("criterion", ["uncertainty", "coverage", "random"])
def test_the_budget_is_accepted_up_to_the_candidates_and_refused_beyond(criterion):
    probabilities = _probabilities([0.1, 0.2, 0.3, 0.4])
    candidates = torch.tensor([True, True, False, True])
    spread = lambda v: v  # noqa: E731
    chosen, _ = select_items(probabilities, candidates, 3, criterion, spread=spread)
    assert sorted(chosen.tolist()) == [0, 1, 3]
    for budget in (0, 4, True, 2.0):
        with pytest.raises(ValueError, match=r"budget must be a whole number in \[1, 3\]"):
            select_items(probabilities, candidates, budget, criterion, spread=spread)
    with pytest.raises(ValueError, match="every item has a label"):
        select_items(probabilities, torch.zeros(4, dtype=torch.bool), 1, criterion, spread=spread)
