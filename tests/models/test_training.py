"""Training pieces: early stopping, divergence guard, epochs and evaluation by hand, IoU, masked MSE."""

import math

import pytest
import torch
from torch.nn import functional as F

from pdenets import NonFiniteError
from pdenets.experiments import (
    EarlyStopping,
    accuracy,
    fit,
)
from pdenets.models.training import (
    AMP_DTYPE,
    BatchLoader,
    autocast,
    batches,
    evaluate_classifier,
    evaluation_mode,
    fit_steps,
    masked_mse,
    mean_iou,
    train_epoch,
)


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


def test_accuracy_refuses_logits_and_labels_of_different_lengths():
    with pytest.raises(ValueError, match="3 rows of logits but 2 labels"):
        accuracy(torch.zeros(3, 2), torch.zeros(2, dtype=torch.long))


def test_fit_without_evaluation_runs_every_epoch_and_checks_max_epochs():
    x, y, model = _problem()
    reference = torch.nn.Linear(2, 2)
    reference.load_state_dict(model.state_dict())
    result = fit(
        model, torch.optim.SGD(model.parameters(), lr=0.5), lambda: F.cross_entropy(model(x), y), max_epochs=3
    )
    assert (result.epochs, result.best_epoch, result.diverged_at, result.history) == (3, 3, None, [])
    optimizer = torch.optim.SGD(reference.parameters(), lr=0.5)
    losses = []
    for _ in range(3):  # three plain gradient steps, the loss of each taken before its step
        optimizer.zero_grad()
        loss = F.cross_entropy(reference(x), y)
        loss.backward()
        optimizer.step()
        losses.append(float(loss.detach()))
    assert result.losses == pytest.approx(losses, rel=1e-6)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name], value)
    for bad in (0, 2.0, True):
        with pytest.raises(ValueError, match="max_epochs must be a positive int"):
            fit(model, optimizer, lambda: F.cross_entropy(model(x), y), max_epochs=bad)


def test_batches_cover_every_index_once_and_keep_the_order_without_shuffling():
    generator = torch.Generator().manual_seed(0)
    assert [b.tolist() for b in batches(7, 3, generator, shuffle=False)] == [[0, 1, 2], [3, 4, 5], [6]]
    shuffled = batches(10, 4, torch.Generator().manual_seed(5))
    assert [len(b) for b in shuffled] == [4, 4, 2]
    assert sorted(torch.cat(shuffled).tolist()) == list(range(10))
    assert torch.equal(torch.cat(shuffled), torch.randperm(10, generator=torch.Generator().manual_seed(5)))
    loader = BatchLoader(torch.arange(12.0).view(6, 2), torch.tensor([5, 4, 3, 2, 1, 0]), "cpu")
    x, y = loader.batch(torch.tensor([4, 1]))
    assert not loader.pinned and x.tolist() == [[8.0, 9.0], [2.0, 3.0]] and y.tolist() == [1, 4]


def test_an_epoch_is_sgd_over_the_generators_batches_with_the_penalty_in_the_gradient_only(device):
    torch.manual_seed(0)
    x, y = torch.randn(10, 3, dtype=torch.float64), torch.randint(0, 3, (10,))  # on the CPU: batches move
    model = torch.nn.Linear(3, 3).double()
    reference = torch.nn.Linear(3, 3).double()
    reference.load_state_dict(model.state_dict())
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)

    def penalty():
        return 0.1 * model.weight.square().sum()

    metrics = train_epoch(
        model,
        optimizer,
        x,
        y,
        batch_size=4,
        generator=torch.Generator().manual_seed(1),
        penalty=penalty,
        scheduler=scheduler,
        device=device,
    )
    # by hand: the same permutation in batches of 4, 4, 2; the learning rate halves after every batch
    order = torch.randperm(10, generator=torch.Generator().manual_seed(1))
    lr, total, correct = 0.3, 0.0, 0
    for start in range(0, 10, 4):
        index = order[start : start + 4]
        logits = reference(x[index])
        loss = F.cross_entropy(logits, y[index])
        objective = loss + 0.1 * reference.weight.square().sum()
        gradients = torch.autograd.grad(objective, list(reference.parameters()))
        with torch.no_grad():
            for parameter, gradient in zip(reference.parameters(), gradients):
                parameter -= lr * gradient
        lr /= 2
        total += float(loss.detach()) * len(index)
        correct += int((logits.argmax(1) == y[index]).sum())
    assert metrics["loss"] == pytest.approx(total / 10, rel=1e-12)
    assert metrics["accuracy"] == correct / 10
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(model.state_dict()[name].cpu(), value, rtol=1e-12, atol=1e-14)
    assert model.training
    with pytest.raises(NonFiniteError, match="became NaN or inf in this epoch"):
        train_epoch(
            model,
            optimizer,
            x,
            y,
            batch_size=4,
            generator=torch.Generator().manual_seed(1),
            penalty=lambda: torch.tensor(math.nan, dtype=torch.float64, device=device),
            device=device,
        )


def test_evaluation_is_per_sample_or_per_pixel_in_any_batch_size_and_restores_the_mode(device):
    torch.manual_seed(0)
    x, y = torch.randn(9, 4, dtype=torch.float64), torch.randint(0, 3, (9,))
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5)).double().train()
    with torch.no_grad():
        logits, flipped_logits = model[0](x), model[0](-x)
    model = model.to(device)
    result = evaluate_classifier(model, x, y, batch_size=4, device=device)
    assert model.training  # put back in training mode
    assert result["loss"] == pytest.approx(float(F.cross_entropy(logits, y)), rel=1e-6)
    assert result["accuracy"] == float((logits.argmax(1) == y).double().mean())
    assert torch.equal(result["predictions"], logits.argmax(1))
    whole = evaluate_classifier(model, x, y, batch_size=100, device=device)
    assert whole["loss"] == pytest.approx(result["loss"], rel=1e-6)
    flipped = evaluate_classifier(model, x, y, transform=lambda batch: -batch, device=device)
    assert torch.equal(flipped["predictions"], flipped_logits.argmax(1))
    # segmentation: (N, C, H, W) logits and (N, H, W) targets are scored per pixel
    conv = torch.nn.Conv2d(2, 3, 1).double()
    images, masks = torch.randn(3, 2, 4, 5, dtype=torch.float64), torch.randint(0, 3, (3, 4, 5))
    with torch.no_grad():
        pixel_logits = conv(images)
    scored = evaluate_classifier(conv.to(device), images, masks, batch_size=2, device=device)
    assert scored["predictions"].shape == (3, 4, 5)
    assert scored["accuracy"] == int((pixel_logits.argmax(1) == masks).sum()) / 60
    assert scored["loss"] == pytest.approx(float(F.cross_entropy(pixel_logits, masks)), rel=1e-6)


def test_mean_iou_averages_over_the_classes_present_and_masked_mse_over_the_mask():
    predictions = torch.tensor([0, 0, 1, 1, 2, 2, 0])
    targets = torch.tensor([0, 1, 1, 1, 2, 0, 0])
    # class 0: P = {0, 1, 6}, T = {0, 5, 6} → 2/4; class 1: P = {2, 3}, T = {1, 2, 3} → 2/3; class 2: 1/2;
    # class 3 appears in neither and does not count
    assert mean_iou(predictions, targets, 4) == pytest.approx((2 / 4 + 2 / 3 + 1 / 2) / 3)
    assert mean_iou(predictions, predictions, 3) == 1.0
    assert math.isnan(mean_iou(torch.tensor([0]), torch.tensor([0]), 0))
    prediction = torch.tensor([[1.0, 5.0], [2.0, -1.0]], requires_grad=True)
    target = torch.tensor([[0.0, 0.0], [0.0, 1.0]])
    mask = torch.tensor([[True, False], [True, True]])
    value = masked_mse(prediction, target, mask)
    assert float(value.detach()) == pytest.approx((1 + 4 + 4) / 3)
    value.backward()
    # d/dp of the mean over three entries: 2 (p − t) / 3, and nothing for the masked-out entry
    torch.testing.assert_close(prediction.grad, torch.tensor([[2 / 3, 0.0], [4 / 3, -4 / 3]]))


def test_fit_steps_validates_at_the_end_of_every_pass_and_stops_at_a_non_finite_loss():
    model = torch.nn.Linear(1, 1)
    values = iter([3.0, 2.0, 2.5, 1.0])
    result = fit_steps(
        model,
        torch.optim.SGD(model.parameters(), lr=0.0),
        torch.arange(10),
        lambda batch: model(batch[:, None].float()).sum(),
        lambda: next(values),
        batch_size=4,
        max_epochs=4,
        eval_steps=100,
        patience=100,
        min_improvement=0.0,
        generator=torch.Generator().manual_seed(0),
    )
    # three batches a pass (4, 4, 2): one validation at the end of each pass
    assert [(p["step"], p["epoch"], p["val"]) for p in result.curve] == [
        (3, 1, 3.0),
        (6, 2, 2.0),
        (9, 3, 2.5),
        (12, 4, 1.0),
    ]
    assert (result.steps, result.epochs, result.best_step, result.best_epoch) == (12, 4, 12, 4)
    calls = []

    def exploding(batch):
        calls.append(len(batch))
        value = model(batch[:, None].float()).sum()
        return value * math.inf if len(calls) == 5 else value

    stopped = fit_steps(
        model,
        torch.optim.SGD(model.parameters(), lr=0.0),
        torch.arange(10),
        exploding,
        lambda: 1.0,
        batch_size=4,
        max_epochs=4,
        eval_steps=100,
        patience=100,
        min_improvement=0.0,
        generator=torch.Generator().manual_seed(0),
    )
    assert len(calls) == 5 and stopped.steps == 4 and [p["step"] for p in stopped.curve] == [3]
    assert stopped.best_step == 3


def test_autocast_is_bfloat16_when_enabled_and_a_no_op_otherwise():
    layer = torch.nn.Linear(3, 2)
    with autocast("cpu", True):
        assert layer(torch.randn(1, 3)).dtype == AMP_DTYPE == torch.bfloat16
    with autocast("cpu", False):
        assert layer(torch.randn(1, 3)).dtype == torch.float32
