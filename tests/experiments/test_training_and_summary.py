"""Shared training pieces (early stopping, divergence guard) and summaries (group stats, paper vs ours)."""

import math

import pytest
import torch
from torch.nn import functional as F

from pdenets import NonFiniteError
from pdenets.experiments import (
    EarlyStopping,
    PaperValue,
    Stats,
    accuracy,
    fit,
    format_mean_std,
    group_summary,
)
from pdenets.experiments.summary import group_records, paper_and_ours
from pdenets.models.training import evaluation_mode, fit_steps


def test_early_stopping_counts_patience_from_the_last_improvement():
    model = torch.nn.Linear(1, 1)
    stopping = EarlyStopping(3, monitors={"loss": "min", "acc": "max"})
    trace = [(1.0, 0.5), (0.9, 0.4), (0.95, 0.5), (0.96, 0.45), (0.97, 0.45), (0.98, 0.45)]
    stops = []
    for epoch, (loss, acc) in enumerate(trace, start=1):
        with torch.no_grad():
            model.weight.fill_(epoch)
        stops.append(stopping.update(epoch, {"loss": loss, "acc": acc}, model))
    # epoch 3 ties the best accuracy: an improvement (the Diff-ResNet/GAT rule); 4, 5, 6 are not
    assert stops == [False, False, False, False, False, True]
    assert stopping.best_epoch == 3 and stopping.best == {"loss": 0.9, "acc": 0.5}
    stopping.restore(model)
    assert float(model.weight.detach()) == 3.0


def test_early_stopping_checks_its_arguments():
    with pytest.raises(ValueError, match="patience"):
        EarlyStopping(0, monitors={"loss": "min"})
    with pytest.raises(ValueError, match="'min' or 'max'"):
        EarlyStopping(2, monitors={"loss": "lowest"})
    with pytest.raises(KeyError, match="did not return"):
        EarlyStopping(2, monitors={"loss": "min"}).update(1, {"acc": 1.0}, torch.nn.Linear(1, 1))


def _problem():
    torch.manual_seed(0)
    x, y = torch.randn(32, 2), torch.randint(0, 2, (32,))
    return x, y, torch.nn.Linear(2, 2)


def test_fit_stops_early_and_restores():
    x, y, model = _problem()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    scripted = iter([1.0, 0.5, 0.7, 0.6, 0.5, 0.8, 0.9, 0.95])  # best at 2, tied at 5, then 3 epochs worse
    states = []

    def metrics():
        states.append({k: v.clone() for k, v in model.state_dict().items()})
        return {"loss": next(scripted)}

    result = fit(
        model,
        optimizer,
        lambda: F.cross_entropy(model(x), y),
        max_epochs=50,
        evaluate=metrics,
        early_stopping=EarlyStopping(3, monitors={"loss": "min"}),
    )
    assert (result.epochs, result.best_epoch, result.diverged_at) == (8, 5, None)
    assert [h["loss"] for h in result.history] == [1.0, 0.5, 0.7, 0.6, 0.5, 0.8, 0.9, 0.95]
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, states[4][name])  # epoch 5's parameters


def test_fit_guards_divergence_and_restores_the_last_finite_parameters():
    x, y, model = _problem()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    states = []

    def loss():
        states.append({k: v.clone() for k, v in model.state_dict().items()})
        value = F.cross_entropy(model(x), y)
        return value * math.nan if len(states) == 3 else value

    result = fit(model, optimizer, loss, max_epochs=10, restore_on_divergence=True)
    assert (result.diverged_at, result.epochs, result.best_epoch, len(result.losses)) == (3, 3, 2, 2)
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, states[2][name])  # the parameters from before the failing step


def test_fit_treats_a_non_finite_evaluation_as_divergence():
    x, y, model = _problem()

    def evaluate():
        raise NonFiniteError("the network's output contains 1 NaN/inf value(s)")

    result = fit(
        model,
        torch.optim.SGD(model.parameters(), lr=0.1),
        lambda: F.cross_entropy(model(x), y),
        max_epochs=5,
        evaluate=evaluate,
    )
    assert result.diverged_at == 1 and result.history == []


def _fit_steps(patience, values, min_improvement=0.0):
    """``fit_steps`` on ten one-item batches a pass, validated after every step with the next of
    ``values``."""
    model = torch.nn.Linear(1, 1)
    stream = iter(values)
    return fit_steps(
        model,
        torch.optim.SGD(model.parameters(), lr=0.0),
        torch.arange(10),
        lambda batch: model(batch[:, None].float()).sum(),
        lambda: next(stream),
        batch_size=1,
        max_epochs=5,
        eval_steps=1,
        patience=patience,
        min_improvement=min_improvement,
        generator=torch.Generator().manual_seed(0),
    )


def test_fit_steps_stops_exactly_patience_steps_after_the_last_improvement():
    result = _fit_steps(3, [1.0] + [2.0] * 50)  # better than nothing at step 1 only
    assert result.steps == 4 and [point["step"] for point in result.curve] == [1, 2, 3, 4]
    assert result.best_step == 1
    result = _fit_steps(3, [5.0, 4.0] + [4.5] * 50)  # last improvement at step 2
    assert result.steps == 5 and result.best_step == 2
    # an improvement smaller than min_improvement (relative) does not reset the count (but is kept as the
    # best)
    result = _fit_steps(3, [5.0, 4.99] + [5.0] * 50, min_improvement=0.01)
    assert result.steps == 4 and result.best_step == 2
    assert _fit_steps(1, [1.0] + [2.0] * 50).steps == 2


def test_accuracy_is_exact_and_refuses_nan():
    logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])
    assert accuracy(logits, torch.tensor([0, 1, 1, 1])) == 0.75
    with pytest.raises(NonFiniteError):
        accuracy(torch.tensor([[math.nan, 0.0]]), torch.tensor([0]))
    with pytest.raises(ValueError, match="empty"):
        accuracy(torch.zeros(0, 2), torch.zeros(0, dtype=torch.long))


def test_evaluation_mode_restores_the_previous_mode():
    model = torch.nn.Dropout(0.5)
    with evaluation_mode(model):
        assert not model.training and not torch.is_grad_enabled()
    assert model.training and torch.is_grad_enabled()


def test_group_summary_exact_values_and_missing_metrics():
    records = [
        {"m": "a", "d": "x", "acc": 0.8},
        {"m": "a", "d": "x", "acc": 0.6},
        {"m": "b", "d": "x", "acc": 1.0},
        {"m": "a", "d": "y", "acc": 0.5},
        {"m": "a", "d": "x", "acc": None},
    ]
    table = group_summary(records, by=("m", "d"), metric="acc", scale=100)
    assert list(table) == [("a", "x"), ("b", "x"), ("a", "y")]
    assert table[("a", "x")] == Stats(mean=70.0, std=10.0, min=60.0, max=80.0, median=70.0, count=2)
    assert group_summary(records, by="m", metric="acc", where=lambda r: r["d"] == "y")["a"].count == 1
    assert [len(v) for v in group_records(records, by="d").values()] == [4, 1]
    assert Stats.of([]).count == 0 and Stats.of([]).format() == "—"


def test_one_format_for_mean_std_and_paper_vs_ours():
    assert format_mean_std(0.96234, 0.0341) == "0.962 ± 0.034"
    assert format_mean_std(82.34, 1.16, 1, count=20) == "82.3 ± 1.2 (n=20)"
    assert format_mean_std(None) == "—" and format_mean_std(math.nan, 1.0) == "—"
    assert PaperValue(93.27).format(2) == "93.27"
    assert paper_and_ours({"mean": 82.34, "std": 1.16, "runs": 20}, PaperValue(82.1, 1.1)) == (
        "82.3 ± 1.2 (n=20)",
        "82.1 ± 1.1",
        "+0.2",
    )
    assert paper_and_ours(None, PaperValue(82.1, 1.1)) == ("—", "82.1 ± 1.1", "—")
    assert paper_and_ours(Stats.of([0.5, 0.7], scale=100), None) == ("60.0 ± 10.0 (n=2)", "—", "—")
