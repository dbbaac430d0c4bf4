"""Node classification on one graph, full batch: the pieces of the protocol of Shchur et al. ("Pitfalls of
Graph Neural Network Evaluation") as the Diff-ResNet code runs it.

The graph itself, preprocessed once per process, is :func:`pdenets.data.transforms.prepared_graph`.

* :func:`split_and_init_seed`: the split and the initialization seed of one run, seeded as the paper's code
  seeds them.
* :class:`DiffusionSettings` (Diff-ResNet) and :class:`MessagePassingSettings` (the PyG baselines): a run's
  model and optimizer settings, one frozen dataclass per family of the model registry.
* :func:`fit_node_classifier`: Adam on the labelled nodes of a split, early stopping on its validation nodes,
  the test accuracy of the restored state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import torch
from torch.nn import functional as F

from ..data.splits import Split, split_and_init_seeds, split_seeds
from .optim import Adam
from .training import EarlyStopping, FitResult, accuracy, evaluation_mode, fit

__all__ = [
    "split_and_init_seed",
    "DiffusionSettings",
    "MessagePassingSettings",
    "fit_node_classifier",
]


def split_and_init_seed(
    labels: torch.Tensor, seed: int, split: int, init: int, train_per_class: int, val_per_class: int
) -> Tuple[Split, int]:
    """Split number ``split`` of the master ``seed`` and the torch seed of its initialization number ``init``.

    Both come from prefixes of seeded streams (:func:`pdenets.data.splits.split_seeds`,
    :func:`pdenets.data.splits.split_and_init_seeds`, the paper code's seeding), so they are the same for any
    number of splits and initializations planned.

    Args:
        labels: ``(N,)`` class ids of the graph's nodes.
        seed: the master seed of the splits.
        split: the split's number, from 0.
        init: the initialization's number within the split, from 0.
        train_per_class: labelled training nodes per class.
        val_per_class: validation nodes per class.

    Returns:
        The :class:`~pdenets.data.splits.Split` and the torch seed of the initialization.
    """
    split_seed = split_seeds(seed, split + 1)[split]
    nodes, init_seeds = split_and_init_seeds(labels, split_seed, init + 1, train_per_class, val_per_class)
    return nodes, init_seeds[init]


@dataclass(frozen=True)
class DiffusionSettings:
    """One run's settings of a model of the ``diffusion`` family (Diff-ResNet's graph variant) and its
    optimizer.

    Args:
        lr: Adam's learning rate.
        weight_decay: Adam's weight decay.
        step_size: the diffusion step size ``γ``.
        num_steps: the diffusion steps (layers) ``r``.
        dropout: the dropout at each diffusion step.
        dropout_position: ``"before"`` or ``"after"`` each diffusion step.
        check_stability: refuse a step size beyond the stability bound.
        hidden_features: the width of the block and the diffusion after a linear map of the input
            (default: ``None``, the input width, as in the paper).
    """

    lr: float
    weight_decay: float
    step_size: float
    num_steps: int
    dropout: float
    dropout_position: str
    check_stability: bool
    hidden_features: Optional[int] = None


@dataclass(frozen=True)
class MessagePassingSettings:
    """One run's settings of a model of the ``message-passing`` family (the PyG baselines) and its optimizer.

    Args:
        lr: Adam's learning rate.
        weight_decay: Adam's weight decay.
        hidden_features: the hidden width (default: ``None``, the model's own; stored runs know it as
            ``hidden``).
        heads: the attention heads of GAT (default: ``None``: the model's own; the others have none).
        dropout: the dropout between layers (default: ``None``, the model's own).
    """

    lr: float
    weight_decay: float
    hidden_features: Optional[int] = field(default=None, metadata={"stored_as": "hidden"})
    heads: Optional[int] = None
    dropout: Optional[float] = None


def _counter(bar: Any) -> Callable[[int], None]:
    """A callback that moves ``bar`` one epoch on."""

    def count(epoch: int) -> None:
        bar.update(1)

    return count


#: seconds a fit runs before its progress bar (``progress=True``) appears: a quick fit prints nothing
PROGRESS_DELAY = 2.0

#: what early stopping watches: the protocol's rule (the paper code's: an epoch whose validation loss is no
#: higher, or whose validation accuracy is no lower, than the best so far resets the patience; ties count,
#: so a few validation nodes, whose accuracy often ties, keep it going) or the validation loss alone
STOP_RULES: Dict[str, Dict[str, str]] = {
    "loss-or-accuracy": {"val_loss": "min", "val_accuracy": "max"},
    "loss": {"val_loss": "min"},
}


def fit_node_classifier(
    model: torch.nn.Module,
    inputs: Sequence[torch.Tensor],
    labels: torch.Tensor,
    split: Split,
    *,
    lr: float,
    weight_decay: float,
    max_epochs: int,
    patience: int,
    stop_on: str = "loss-or-accuracy",
    progress: bool = False,
) -> Tuple[FitResult, Dict[str, Any]]:
    """Train ``model`` on a split's training nodes, full batch, and measure it on its validation and test
    nodes.

    Adam on the cross-entropy of the training nodes; after every epoch the validation loss and
    accuracy (in evaluation mode); :func:`~pdenets.models.training.fit` stops when neither has
    improved for ``patience`` epochs and restores the state of the last improvement of either.

    Args:
        model: maps ``*inputs`` to ``(N, C)`` logits; its parameters and ``inputs`` on ``labels``' device.
        inputs: the model's arguments, e.g. ``(x, edge_index)``.
        labels: ``(N,)`` class ids.
        split: the training, validation and test nodes.
        lr: Adam's learning rate.
        weight_decay: Adam's weight decay.
        max_epochs: epochs at most.
        patience: epochs without improvement before training stops.
        stop_on: what counts as an improvement (:data:`STOP_RULES`; default: the protocol's
            ``"loss-or-accuracy"``).
        progress: a progress bar of the epochs on stderr, shown once the fit has taken
            :data:`PROGRESS_DELAY` seconds (default: ``False``).

    Returns:
        The fit history and the record: test ``accuracy``, ``val_accuracy``, ``val_loss``, ``test_loss``,
        ``epochs``, ``best_epoch`` and ``diverged_at_epoch``.
    """
    train, val, test = (part.to(labels.device) for part in (split.train, split.val, split.test))
    optimizer = Adam(model.parameters(), lr=lr, weight_decay=weight_decay)

    def validation() -> Dict[str, float]:
        with evaluation_mode(model):
            logits = model(*inputs)
            return {
                "val_loss": float(F.cross_entropy(logits[val], labels[val])),
                "val_accuracy": accuracy(logits[val], labels[val]),
            }

    if stop_on not in STOP_RULES:
        raise ValueError(f"stop_on must be one of {', '.join(STOP_RULES)}, got {stop_on!r}")
    stopping = EarlyStopping(patience, monitors=STOP_RULES[stop_on])
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=max_epochs, desc="training", unit="epoch", delay=PROGRESS_DELAY, leave=False)
    try:
        result = fit(
            model,
            optimizer,
            lambda: F.cross_entropy(model(*inputs)[train], labels[train]),
            max_epochs=max_epochs,
            evaluate=validation,
            early_stopping=stopping,
            on_epoch=None if bar is None else _counter(bar),
        )
    finally:
        if bar is not None:
            bar.close()
    with evaluation_mode(model):
        logits = model(*inputs)
        record = {
            "accuracy": accuracy(logits[test], labels[test]),
            "val_accuracy": accuracy(logits[val], labels[val]),
            "val_loss": float(F.cross_entropy(logits[val], labels[val])),
            "test_loss": float(F.cross_entropy(logits[test], labels[test])),
            "epochs": result.epochs,
            "best_epoch": result.best_epoch,
            "diverged_at_epoch": result.diverged_at,
        }
    return result, record
