"""Random per-class splits for semi-supervised node classification (Shchur et al. protocol).

For each split: ``train_per_class`` labelled nodes per class for training,
``val_per_class`` per class for validation, every other labelled node for testing. The
seeding follows the Diff-ResNet code: a master ``numpy.random.RandomState(seed)`` draws
one seed per split; each split's ``RandomState`` draws the split and then one torch seed
per initialization. Same seed, same labels order → same splits and seeds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import List

import numpy as np
import torch

from .._checks import check_labels, check_positive_int

__all__ = ["Split", "per_class_split", "split_seeds", "split_and_init_seeds"]


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
