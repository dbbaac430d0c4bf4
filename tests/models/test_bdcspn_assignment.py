"""BD-CSPN's balanced assignment of the queries: against a plain greedy loop over the sorted pairs, and the
properties of a stable matching."""

import pytest
import torch

from pdenets.models.fewshot.bdcspn import balanced_assignment


def _greedy(scores, capacity):
    """The query-class pairs in descending order of score; a pair is taken while its query is free and its
    class holds fewer than ``capacity``."""
    member = [-1] * scores.shape[0]
    load = [0] * scores.shape[1]
    pairs = sorted(
        ((float(scores[q, c]), q, c) for q in range(scores.shape[0]) for c in range(scores.shape[1])),
        reverse=True,
    )
    for _, q, c in pairs:
        if member[q] == -1 and load[c] < capacity:
            member[q], load[c] = c, load[c] + 1
    return member


@pytest.mark.parametrize(
    "queries, ways, capacity", [(15, 3, 5), (16, 3, 5), (12, 4, 1), (40, 20, 2), (5, 5, 1)]
)
def test_balanced_assignment_equals_the_greedy_over_sorted_pairs(queries, ways, capacity, device):
    generator = torch.Generator().manual_seed(queries * ways + capacity)
    scores = torch.randn(6, queries, ways, generator=generator, dtype=torch.float64)
    assigned = balanced_assignment(scores.to(device), capacity)
    assert assigned.device.type == torch.device(device).type and assigned.dtype == torch.long
    assert assigned.cpu().tolist() == [_greedy(task, capacity) for task in scores]


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
