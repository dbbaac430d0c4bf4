import numpy as np
import pytest
import torch

from pdenets.data.splits import held_out_split, per_class_split, split_and_init_seeds, split_seeds


def _labels():
    return torch.tensor([0] * 80 + [1] * 70 + [2] * 100 + [-1] * 5)


def test_sizes_per_class_disjoint_and_complete():
    labels = _labels()
    split = per_class_split(labels, 20, 30, seed=3)
    for part, size in ((split.train, 20), (split.val, 30)):
        assert torch.bincount(labels[part], minlength=3).tolist() == [size] * 3
    sets = [set(p.tolist()) for p in (split.train, split.val, split.test)]
    assert not (sets[0] & sets[1]) and not (sets[0] & sets[2]) and not (sets[1] & sets[2])
    assert set.union(*sets) == set(torch.nonzero(labels >= 0).flatten().tolist())  # unlabelled in no set


def test_deterministic_and_seed_dependent():
    labels = _labels()
    first, again, other = (per_class_split(labels, seed=s) for s in (1, 1, 2))
    assert torch.equal(first.train, again.train) and torch.equal(first.val, again.val)
    assert not torch.equal(first.train, other.train)


def test_seed_lists_are_prefix_consistent():
    """Asking for more splits or inits keeps the earlier ones (so stored runs stay valid)."""
    assert split_seeds(42, 100)[:10] == split_seeds(42, 10)
    labels = _labels()
    split_a, inits_a = split_and_init_seeds(labels, 7, 20)
    split_b, inits_b = split_and_init_seeds(labels, 7, 5)
    assert inits_a[:5] == inits_b and torch.equal(split_a.train, split_b.train)


def test_matches_the_reference_sampling_procedure():
    """Per class, RandomState.choice over the sorted candidates: train first, then validation."""
    labels = _labels().numpy()
    state = np.random.RandomState(11)
    train = np.concatenate([state.choice(np.flatnonzero(labels == c), 20, replace=False) for c in range(3)])
    val = np.concatenate(
        [state.choice(np.setdiff1d(np.flatnonzero(labels == c), train), 30, replace=False) for c in range(3)]
    )
    split = per_class_split(torch.from_numpy(labels), 20, 30, seed=11)
    assert split.train.tolist() == sorted(train.tolist()) and split.val.tolist() == sorted(val.tolist())


def test_class_too_small_is_reported():
    with pytest.raises(ValueError, match="class 1 has only 10"):
        per_class_split(torch.tensor([0] * 60 + [1] * 10), 20, 30)


def test_the_shares_are_held_out_only_where_every_class_comes_to_min_held_out_nodes():
    """At 0.2: 22 nodes come to 4, 23 to 5. At ``min_held_out=4`` (the boundary) both are held out; at 5 the
    first class's 4 fall short, and then neither is (a validation set without some classes is none). A class
    of one labelled node holds out none: without the rule it trains on its node beside the others' shares;
    at ``min_held_out=1`` it keeps every share in training. The sets are disjoint and cover the labelled
    nodes."""
    labels = torch.tensor([0] * 22 + [1] * 23 + [-1] * 4)
    alone = torch.tensor([0] * 22 + [1] * 23 + [2] + [-1] * 4)

    def held(given, minimum):
        split = held_out_split(given, 0.2, seed=0, min_held_out=minimum)
        labelled = set(torch.nonzero(given >= 0).flatten().tolist())
        if split.val is split.train:
            assert set(split.train.tolist()) == labelled
            return []
        assert not set(split.train.tolist()) & set(split.val.tolist())
        assert set(split.train.tolist()) | set(split.val.tolist()) == labelled
        return torch.bincount(given[split.val], minlength=int(given.max()) + 1).tolist()

    assert held(labels, None) == [4, 5] and held(labels, 4) == [4, 5]
    assert held(labels, 5) == [] and held(labels, 6) == []
    assert held(alone, None) == [4, 5, 0] and held(alone, 1) == []
    for wrong in (0, True, 2.5):
        with pytest.raises(ValueError, match="min_held_out must be a whole number"):
            held_out_split(labels, 0.2, seed=0, min_held_out=wrong)
