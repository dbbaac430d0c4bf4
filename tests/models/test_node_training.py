"""Node classification: the paper code's seeding redone in NumPy; Adam, early stopping, divergence by hand."""

import copy
import dataclasses

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from pdenets.data.splits import Split
from pdenets.models import node_training
from pdenets.models.node_training import (
    DiffusionSettings,
    MessagePassingSettings,
    fit_node_classifier,
    split_and_init_seed,
)


def _reference_split(labels, seed, split, init, train_per_class, val_per_class):
    """The Diff-ResNet code's seeding: a master RandomState draws the split seeds; each split's RandomState
    draws the training nodes class by class, then the validation nodes, then the initialization seeds."""
    split_seed = np.random.RandomState(seed).randint(0, 1_000_000, split + 1)[split]
    state = np.random.RandomState(split_seed)
    train = np.concatenate(
        [
            state.choice(np.flatnonzero(labels == c), train_per_class, replace=False)
            for c in range(labels.max() + 1)
        ]
    )
    val = []
    for c in range(labels.max() + 1):
        candidates = np.setdiff1d(np.flatnonzero(labels == c), train)
        val.append(state.choice(candidates, val_per_class, replace=False))
    val = np.concatenate(val)
    test = np.setdiff1d(np.flatnonzero(labels >= 0), np.concatenate([train, val]))
    init_seed = state.randint(0, 1_000_000, init + 1)[init]
    return np.sort(train), np.sort(val), test, int(init_seed)


@pytest.mark.parametrize("seed, split, init", [(0, 0, 0), (7, 2, 3), (123, 4, 1)])
def test_the_split_and_the_init_seed_are_the_paper_codes(seed, split, init):
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1, 0, 0, 1, 2, 0, 1, 2, -1, 0, 1, 2, 2])
    nodes, init_seed = split_and_init_seed(torch.from_numpy(labels), seed, split, init, 2, 1)
    train, val, test, expected_seed = _reference_split(labels, seed, split, init, 2, 1)
    assert nodes.train.tolist() == train.tolist() and nodes.val.tolist() == val.tolist()
    assert nodes.test.tolist() == test.tolist() and 15 not in nodes.test.tolist()  # −1: unlabelled
    assert init_seed == expected_seed
    assert len(nodes.train) == 6 and len(nodes.val) == 3 and len(nodes.test) == 10


def _problem(seed=0, nodes=30, features=4, classes=3):
    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(nodes, features, generator=generator, dtype=torch.float64)
    labels = torch.randint(0, classes, (nodes,), generator=generator)
    split = Split(torch.arange(0, 12), torch.arange(12, 20), torch.arange(20, 30))
    model = torch.nn.Linear(features, classes).double()
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator, dtype=torch.float64))
    return x, labels, split, model


def test_fit_is_adam_on_the_training_nodes_and_keeps_the_last_improving_epoch(device):
    x, labels, split, model = _problem(seed=2)
    reference = copy.deepcopy(model)
    model = model.to(device)  # the split stays on the CPU: it follows the labels
    result, record = fit_node_classifier(
        model,
        (x.to(device),),
        labels.to(device),
        split,
        lr=0.05,
        weight_decay=0.01,
        max_epochs=6,
        patience=50,
    )
    # by hand: six Adam steps on the training nodes' mean cross-entropy; after each, the validation loss and
    # accuracy; the state kept is the last epoch at least as good as the best in either
    optimizer = torch.optim.Adam(reference.parameters(), lr=0.05, weight_decay=0.01)
    best_loss, best_accuracy, kept, kept_epoch = np.inf, -np.inf, None, 0
    for epoch in range(1, 7):
        optimizer.zero_grad()
        F.cross_entropy(reference(x)[split.train], labels[split.train]).backward()
        optimizer.step()
        with torch.no_grad():
            logits = reference(x)[split.val]
        loss = float(F.cross_entropy(logits, labels[split.val]))
        hits = float((logits.argmax(1) == labels[split.val]).double().mean())
        if loss <= best_loss or hits >= best_accuracy:
            best_loss, best_accuracy = min(best_loss, loss), max(best_accuracy, hits)
            kept, kept_epoch = copy.deepcopy(reference.state_dict()), epoch
    # this seed: the validation loss rises from epoch 2, the accuracy ties the best until epoch 4
    assert kept_epoch == 4
    reference.load_state_dict(kept)
    for name, value in model.state_dict().items():
        torch.testing.assert_close(value.cpu(), kept[name], rtol=1e-12, atol=1e-14)
    assert (result.epochs, result.best_epoch, record["best_epoch"], record["epochs"]) == (
        6,
        kept_epoch,
        kept_epoch,
        6,
    )
    with torch.no_grad():
        logits = reference(x)
    test_hits = float((logits[split.test].argmax(1) == labels[split.test]).double().mean())
    assert record["accuracy"] == pytest.approx(test_hits, abs=1e-15)
    assert record["test_loss"] == pytest.approx(
        float(F.cross_entropy(logits[split.test], labels[split.test]))
    )
    assert record["val_loss"] == pytest.approx(float(F.cross_entropy(logits[split.val], labels[split.val])))
    assert record["diverged_at_epoch"] is None and len(result.history) == 6


class _BreaksOnCall(torch.nn.Module):
    """A linear model whose output is NaN on one call (the third: the second epoch's training pass)."""

    def __init__(self, linear, broken_call):
        super().__init__()
        self.linear, self.calls, self.broken_call = linear, 0, broken_call

    def forward(self, x):
        self.calls += 1
        out = self.linear(x)
        return out * float("nan") if self.calls == self.broken_call else out


def test_ties_never_stop_a_run_and_a_divergence_keeps_the_last_good_epoch():
    x, labels, split, model = _problem(seed=1)
    # a zero learning rate: every epoch ties the first in both monitors, and a tie is an improvement
    result, record = fit_node_classifier(
        model, (x,), labels, split, lr=0.0, weight_decay=0.0, max_epochs=4, patience=1
    )
    assert (result.epochs, record["best_epoch"], record["diverged_at_epoch"]) == (4, 4, None)
    x, labels, split, linear = _problem(seed=2)
    model = _BreaksOnCall(linear, broken_call=3)
    after_one = copy.deepcopy(linear)
    optimizer = torch.optim.Adam(after_one.parameters(), lr=0.1)
    F.cross_entropy(after_one(x)[split.train], labels[split.train]).backward()
    optimizer.step()
    result, record = fit_node_classifier(
        model, (x,), labels, split, lr=0.1, weight_decay=0.0, max_epochs=5, patience=5
    )
    assert (result.epochs, record["diverged_at_epoch"], record["best_epoch"]) == (2, 2, 1)
    for name, value in linear.state_dict().items():
        torch.testing.assert_close(value, after_one.state_dict()[name], rtol=1e-12, atol=1e-14)
    with torch.no_grad():
        logits = after_one(x)
    assert record["val_loss"] == pytest.approx(float(F.cross_entropy(logits[split.val], labels[split.val])))


def test_run_settings_are_frozen_and_message_passing_widths_are_stored_as_hidden():
    settings = DiffusionSettings(0.01, 5e-4, 0.25, 8, 0.5, "after", True)
    assert settings.hidden_features is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.lr = 0.1
    baseline = MessagePassingSettings(0.005, 5e-4)
    assert (baseline.hidden_features, baseline.heads, baseline.dropout) == (None, None, None)
    stored = {f.name: f.metadata.get("stored_as", f.name) for f in dataclasses.fields(MessagePassingSettings)}
    assert stored == {
        "lr": "lr",
        "weight_decay": "weight_decay",
        "hidden_features": "hidden",
        "heads": "heads",
        "dropout": "dropout",
    }


def test_stopping_on_the_loss_alone_ignores_the_accuracy_ties():
    """The second rule: the seed of the test above, whose validation loss rises from epoch 2 while its
    accuracy ties the best until epoch 4, keeps epoch 1 and stops after ``patience`` epochs without a
    lower loss."""
    x, labels, split, model = _problem(seed=2)
    result, record = fit_node_classifier(
        model, (x,), labels, split, lr=0.05, weight_decay=0.01, max_epochs=6, patience=2, stop_on="loss"
    )
    assert (result.best_epoch, result.epochs) == (1, 3)
    x, labels, split, model = _problem(seed=2)
    result, _ = fit_node_classifier(
        model, (x,), labels, split, lr=0.05, weight_decay=0.01, max_epochs=6, patience=2
    )
    assert result.best_epoch >= 3  # the protocol's rule: the ties go on resetting the patience
    with pytest.raises(ValueError, match="stop_on must be one of loss-or-accuracy, loss, got 'accuracy'"):
        fit_node_classifier(
            model,
            (x,),
            labels,
            split,
            lr=0.05,
            weight_decay=0.0,
            max_epochs=2,
            patience=1,
            stop_on="accuracy",
        )


@pytest.mark.parametrize("delay, shown", [(0.0, True), (3600.0, False)])
def test_the_progress_bar_counts_the_epochs_once_the_fit_has_taken_its_delay(
    monkeypatch, capsys, delay, shown
):
    """``progress=True`` draws a bar of the epochs on stderr, after the delay only (a quick fit stays
    silent); the same fit without it writes nothing, and the bar changes no number."""
    monkeypatch.setattr(node_training, "PROGRESS_DELAY", delay)
    x, labels, split, model = _problem(seed=2)
    quiet, _ = fit_node_classifier(
        model, (x,), labels, split, lr=0.05, weight_decay=0.01, max_epochs=6, patience=2
    )
    assert capsys.readouterr().err == ""
    x, labels, split, model = _problem(seed=2)
    loud, _ = fit_node_classifier(
        model, (x,), labels, split, lr=0.05, weight_decay=0.01, max_epochs=6, patience=2, progress=True
    )
    err = capsys.readouterr().err
    assert ("training:" in err and "/6 " in err) == shown
    assert loud.losses == quiet.losses
