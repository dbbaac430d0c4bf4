"""Random per-class splits for semi-supervised node classification (Shchur et al. protocol).

For each split: ``train_per_class`` labelled nodes per class for training,
``val_per_class`` per class for validation, every other labelled node for testing. The
seeding follows the Diff-ResNet code: a master ``numpy.random.RandomState(seed)`` draws
one seed per split; each split's ``RandomState`` draws the split and then one torch seed
per initialization. Same seed, same labels order → same splits and seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Tuple

import numpy as np
import torch

from .._checks import check_labels, check_positive_int

__all__ = ["Split", "per_class_split", "split_seeds", "split_and_init_seeds", "held_out_split"]


@dataclass(frozen=True)
class Split:
    """Disjoint node index sets (int64 tensors)."""

    train: torch.Tensor
    val: torch.Tensor
    test: torch.Tensor


def _sample_per_class(random_state, labels: np.ndarray, count: int, forbidden: np.ndarray) -> np.ndarray:
    chosen = []
    for label in range(int(labels.max()) + 1):
        candidates = np.flatnonzero(labels == label)
        candidates = candidates[~np.isin(candidates, forbidden)]
        if candidates.size < count:
            raise ValueError(
                f"class {label} has only {candidates.size} available labelled nodes; the split needs {count} "
                "(lower train_per_class/val_per_class or drop the class)"
            )
        chosen.append(random_state.choice(candidates, count, replace=False))
    return np.concatenate(chosen)


def per_class_split(
    labels, train_per_class: int = 20, val_per_class: int = 30, *, seed: int = 0, random_state=None
) -> Split:
    """Draw one split; nodes labelled ``-1`` belong to no set.

    Examples:
        >>> import torch
        >>> split = per_class_split(torch.arange(4).repeat(60), 20, 30, seed=1)
        >>> len(split.train), len(split.val), len(split.test)
        (80, 120, 40)
    """
    labels = check_labels(torch.as_tensor(labels).cpu(), "labels", allow_unlabelled=True).numpy()
    train_per_class = check_positive_int(train_per_class, "train_per_class")
    val_per_class = check_positive_int(val_per_class, "val_per_class")
    random_state = random_state if random_state is not None else np.random.RandomState(seed)
    train = _sample_per_class(random_state, labels, train_per_class, np.array([], dtype=np.int64))
    val = _sample_per_class(random_state, labels, val_per_class, train)
    labelled = np.flatnonzero(labels >= 0)
    test = np.setdiff1d(labelled, np.concatenate([train, val]))
    if test.size == 0:
        raise ValueError(
            f"no labelled node is left for testing after {train_per_class} training and {val_per_class} "
            f"validation nodes per class ({labelled.size} labelled nodes); lower them"
        )
    return Split(*(torch.from_numpy(np.sort(part).astype(np.int64)) for part in (train, val, test)))


def split_seeds(seed: int, num_splits: int) -> List[int]:
    """One seed per split, drawn from a master ``RandomState(seed)``."""
    num_splits = check_positive_int(num_splits, "num_splits")
    return [int(s) for s in np.random.RandomState(seed).randint(0, 1_000_000, num_splits)]


def split_and_init_seeds(
    labels, split_seed: int, num_inits: int, train_per_class: int = 20, val_per_class: int = 30
):
    """The split for ``split_seed`` and the ``num_inits`` torch seeds drawn from the same stream."""
    random_state = np.random.RandomState(split_seed)
    split = per_class_split(labels, train_per_class, val_per_class, random_state=random_state)
    init_seeds = [int(s) for s in random_state.randint(0, 1_000_000, num_inits)]
    return split, init_seeds


def held_out_split(
    labels: torch.Tensor, val_fraction: float, seed: int, min_held_out: Optional[int] = None
) -> Split:
    """The labelled nodes (``labels >= 0``) split for early stopping: ``val_fraction`` of each class's nodes
    (rounded; at least one where the class has two or more and ``val_fraction > 0``, never all of them) for
    validation, the others for training, drawn with ``seed``. A class with one labelled node trains on it.
    ``min_held_out``: where some class's share comes to fewer nodes, none is held out at all (a handful of
    validation nodes a class stops training at noise, and a validation set without some classes stops it for
    the others; the labels are worth more in training). Where no node is held out, the validation (and test)
    nodes are the training nodes.

    Examples:
        >>> labels = torch.tensor([0, 0, 0, 0, 1, 1, -1])
        >>> split = held_out_split(labels, 0.25, seed=0)
        >>> len(split.train), len(split.val), sorted(labels[split.val].tolist())
        (4, 2, [0, 1])
        >>> split = held_out_split(labels, 0.5, seed=0, min_held_out=2)   # class 1 would hold out one
        >>> len(split.train), split.val is split.train
        (6, True)
        >>> held_out_split(labels, 1.0, seed=0)
        Traceback (most recent call last):
        ...
        ValueError: val_fraction must be in [0, 1), got 1.0
    """
    if (
        isinstance(val_fraction, bool)
        or not isinstance(val_fraction, (int, float))
        or not 0 <= val_fraction < 1
    ):
        raise ValueError(f"val_fraction must be in [0, 1), got {val_fraction!r}")
    if min_held_out is not None and (
        isinstance(min_held_out, bool) or not isinstance(min_held_out, int) or min_held_out < 1
    ):
        raise ValueError(f"min_held_out must be a whole number ≥ 1 or None, got {min_held_out!r}")
    rng = np.random.default_rng(int(seed))
    values = labels.cpu().numpy()
    train: List[int] = []
    val: List[int] = []
    shares: List[Tuple[np.ndarray, int]] = []
    for label in np.unique(values[values >= 0]).tolist():
        members = rng.permutation(np.flatnonzero(values == label))
        held = int(round(val_fraction * len(members))) if len(members) > 1 else 0
        held = min(max(held, 1 if val_fraction > 0 and len(members) > 1 else 0), len(members) - 1)
        shares.append((members, held))
    if min_held_out is not None and any(held < min_held_out for _, held in shares):
        shares = [(members, 0) for members, _ in shares]
    for members, held in shares:
        val.extend(members[:held])
        train.extend(members[held:])
    train_nodes = torch.as_tensor(sorted(train), dtype=torch.long)
    val_nodes = torch.as_tensor(sorted(val), dtype=torch.long) if val else train_nodes
    return Split(train_nodes, val_nodes, val_nodes)
