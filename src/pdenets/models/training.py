"""Training-loop pieces every task shares: steps, accuracy, early stopping, divergence guard.

:func:`fit` runs epochs of ``optimizer step → evaluation``; an :class:`EarlyStopping`
stops it and restores the best state; a loss, parameter or evaluation that turns
non-finite ends it as *diverged* (optionally restoring the parameters from before the step
that broke them) instead of crashing or training on NaN.

Examples:
    >>> import torch
    >>> from torch.nn import functional as F
    >>> _ = torch.manual_seed(0)
    >>> x, y = torch.randn(64, 3), torch.randint(0, 2, (64,))
    >>> model = torch.nn.Linear(3, 2)
    >>> optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    >>> def metrics():
    ...     logits = model(x)
    ...     return {"loss": float(F.cross_entropy(logits, y).detach()), "accuracy": accuracy(logits, y)}
    >>> result = fit(model, optimizer, lambda: F.cross_entropy(model(x), y), max_epochs=5,
    ...              evaluate=metrics, early_stopping=EarlyStopping(2, monitors={"loss": "min"}))
    >>> result.epochs, result.diverged_at is None
    (5, True)
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Protocol, Tuple, Union

import numpy as np
import torch
from torch.nn import functional as F

from .._checks import NonFiniteError, check_finite

__all__ = [
    "masked_mse",
    "accuracy",
    "EarlyStopping",
    "fit",
    "FitResult",
    "evaluation_mode",
    "parameters_finite",
    "batches",
    "train_epoch",
    "evaluate_classifier",
    "BatchLoader",
    "autocast",
    "AMP_DTYPE",
    "mean_iou",
    "fit_steps",
    "StepFitResult",
]


class Optimizer(Protocol):
    """What the loops below ask of an optimizer: ``torch.optim``'s or :class:`pdenets.models.optim.Adam`."""

    def zero_grad(self) -> None: ...

    def step(self) -> Any: ...


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    """Fraction of rows whose arg-max equals the label; non-finite logits raise :class:`NonFiniteError`.

    Args:
        logits: ``(N, C)`` scores.
        labels: ``(N,)`` class ids.

    Returns:
        The accuracy in ``[0, 1]``.

    Raises:
        NonFiniteError: ``logits`` holds NaN or inf.
        ValueError: ``logits`` and ``labels`` have different numbers of rows, or ``N = 0``.

    Examples:
        >>> import torch
        >>> logits = torch.tensor([[2.0, 1.0], [0.0, 3.0], [1.0, 0.0], [0.0, 1.0]])
        >>> accuracy(logits, torch.tensor([0, 1, 1, 1]))
        0.75
    """
    check_finite(logits, "the network's output")
    if logits.shape[0] != labels.shape[0]:
        raise ValueError(f"{logits.shape[0]} rows of logits but {labels.shape[0]} labels")
    if labels.numel() == 0:
        raise ValueError("accuracy of an empty set of samples")
    return float((logits.argmax(1) == labels).double().mean())


class evaluation_mode:
    """``with evaluation_mode(model):`` — ``eval()`` and ``no_grad`` inside, the previous mode after.

    Entering the block returns ``model``; leaving it, even by an exception, restores the
    training mode the model had when the context manager was created.

    Args:
        model: the network to evaluate.

    Examples:
        >>> import torch
        >>> model = torch.nn.Linear(2, 1)
        >>> with evaluation_mode(model):
        ...     output = model(torch.ones(1, 2))
        ...     model.training, output.requires_grad
        (False, False)
        >>> model.training
        True
    """

    def __init__(self, model: torch.nn.Module):
        self.model = model
        self._training = model.training
        self._no_grad = torch.no_grad()

    def __enter__(self) -> torch.nn.Module:
        self.model.eval()
        self._no_grad.__enter__()
        return self.model

    def __exit__(self, *exc) -> None:
        self._no_grad.__exit__(*exc)
        self.model.train(self._training)


def parameters_finite(model: torch.nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


class EarlyStopping:
    """Stop when no monitored metric improved for ``patience`` epochs; keep the best state.

    An epoch *improves* when at least one monitor is at least as good as its best so far
    (``"min"``: ``value <= best``; ``"max"``: ``value >= best``) — the rule of the Diff-ResNet
    and GAT code (validation loss or accuracy). The state of the last improving epoch is
    kept (a deep copy of ``state_dict``) and :meth:`restore` loads it.

    Args:
        patience: epochs without improvement before stopping (``>= 1``).
        monitors: metric name → ``"min"`` or ``"max"``.

    Raises:
        ValueError: ``patience`` is not a positive int, or ``monitors`` is empty or holds a
            mode other than ``"min"`` / ``"max"``.

    Examples:
        >>> import torch
        >>> model = torch.nn.Linear(1, 1)
        >>> stopping = EarlyStopping(2, monitors={"loss": "min"})
        >>> losses = [1.0, 0.5, 0.7, 0.6]
        >>> stops = [stopping.update(epoch, {"loss": loss}, model) for epoch, loss in enumerate(losses, 1)]
        >>> stops
        [False, False, False, True]
        >>> stopping.best_epoch, stopping.best["loss"]
        (2, 0.5)
    """

    def __init__(self, patience: int, *, monitors: Mapping[str, str]):
        if isinstance(patience, bool) or not isinstance(patience, int) or patience < 1:
            raise ValueError(f"patience must be a positive int, got {patience!r}")
        if not monitors or any(mode not in ("min", "max") for mode in monitors.values()):
            raise ValueError(f"monitors must map metric names to 'min' or 'max', got {dict(monitors)}")
        self.patience = patience
        self.monitors = dict(monitors)
        self.best = {name: (math.inf if mode == "min" else -math.inf) for name, mode in self.monitors.items()}
        self.best_epoch = 0
        self.best_state: Optional[Dict[str, torch.Tensor]] = None
        self.waiting = 0

    def update(self, epoch: int, metrics: Mapping[str, float], model: torch.nn.Module) -> bool:
        """Record one epoch; ``True`` when training should stop."""
        missing = [name for name in self.monitors if name not in metrics]
        if missing:
            raise KeyError(f"early stopping monitors {missing}, which the evaluation did not return")
        improved = any(
            metrics[name] <= self.best[name] if mode == "min" else metrics[name] >= self.best[name]
            for name, mode in self.monitors.items()
        )
        if improved:
            for name, mode in self.monitors.items():
                self.best[name] = (min if mode == "min" else max)(self.best[name], metrics[name])
            self.best_state = copy.deepcopy(model.state_dict())
            self.best_epoch, self.waiting = epoch, 0
            return False
        self.waiting += 1
        return self.waiting >= self.patience

    def restore(self, model: torch.nn.Module) -> None:
        if self.best_state is None:
            raise RuntimeError("no epoch was recorded: nothing to restore")
        model.load_state_dict(self.best_state)


@dataclass
class FitResult:
    """``epochs`` run (the last one included), ``best_epoch`` (early stopping; else the last),
    ``diverged_at`` (the epoch that produced non-finite numbers, or ``None``), the per-epoch
    evaluation ``history`` and training ``losses`` of the finite epochs.

    Returned by :func:`fit`.

    Args:
        epochs: epochs run, the last one included.
        best_epoch: the epoch whose state the model holds at the end: early stopping's best,
            else the last finite epoch (``0`` if the first epoch diverged).
        diverged_at: the epoch that produced non-finite numbers (default: ``None``, none did).
        history: the metrics ``evaluate()`` returned, one dict per finite epoch
            (default: ``[]``).
        losses: the training loss of every finite epoch (default: ``[]``).
    """

    epochs: int
    best_epoch: int
    diverged_at: Optional[int] = None
    history: List[Dict[str, Any]] = field(default_factory=list)
    losses: List[float] = field(default_factory=list)


def fit(
    model: torch.nn.Module,
    optimizer: Optimizer,
    loss: Callable[[], torch.Tensor],
    *,
    max_epochs: int,
    evaluate: Optional[Callable[[], Dict[str, Any]]] = None,
    early_stopping: Optional[EarlyStopping] = None,
    restore_on_divergence: bool = False,
    on_epoch: Optional[Callable[[int], None]] = None,
) -> FitResult:
    """Train for up to ``max_epochs`` full steps; see the module docstring.

    Each epoch puts ``model`` in training mode, calls ``optimizer.zero_grad()``, computes
    ``loss()``, back-propagates, steps, then calls ``evaluate()`` and updates
    ``early_stopping``. A non-finite loss, parameter, or :class:`NonFiniteError` raised
    inside ends training with ``diverged_at`` set, instead of raising.

    Args:
        model: the network trained.
        optimizer: the optimizer of ``model``'s parameters.
        loss: computes the training loss in training mode (called after ``zero_grad``).
        max_epochs: the most epochs (optimizer steps) to run (``>= 1``).
        evaluate: returns the epoch's metrics; called after each step (the caller chooses
            the mode: wrap it in :class:`evaluation_mode` for dropout-free evaluation)
            (default: ``None``, no evaluation).
        early_stopping: stops training and restores the best state at the end
            (default: ``None``, run ``max_epochs`` epochs).
        restore_on_divergence: keep a copy of the parameters before every step and put it
            back when the step makes anything non-finite (otherwise training just stops)
            (default: ``False``).
        on_epoch: called with the epoch's number after each finished epoch (a progress bar)
            (default: ``None``).

    Returns:
        Epochs run, best epoch, the diverging epoch if any, and the per-epoch metrics and
        losses.

    Raises:
        ValueError: ``max_epochs`` is not a positive int.
        KeyError: ``early_stopping`` monitors a metric ``evaluate()`` does not return.

    Examples:
        >>> import torch
        >>> _ = torch.manual_seed(0)
        >>> model = torch.nn.Linear(1, 1)
        >>> optimizer = torch.optim.SGD(model.parameters(), lr=1e30)  # far too large: the loss overflows
        >>> result = fit(model, optimizer, lambda: (model(torch.ones(4, 1)) ** 2).sum(), max_epochs=10,
        ...              restore_on_divergence=True)
        >>> result.epochs, result.diverged_at, result.best_epoch, parameters_finite(model)
        (2, 2, 1, True)
    """
    if isinstance(max_epochs, bool) or not isinstance(max_epochs, int) or max_epochs < 1:
        raise ValueError(f"max_epochs must be a positive int, got {max_epochs!r}")
    result = FitResult(epochs=0, best_epoch=0)
    for epoch in range(1, max_epochs + 1):
        result.epochs = epoch
        previous = copy.deepcopy(model.state_dict()) if restore_on_divergence else None
        model.train()
        optimizer.zero_grad()
        metrics: Optional[Dict[str, Any]] = None
        try:
            value = loss()
            finite = bool(torch.isfinite(value))
            if finite:
                value.backward()
                optimizer.step()
                finite = parameters_finite(model)
            if finite and evaluate is not None:
                metrics = evaluate()
        except NonFiniteError:  # features overflowed inside the network
            finite = False
        if not finite:
            result.diverged_at = epoch
            if previous is not None:
                model.load_state_dict(previous)
            break
        result.losses.append(float(value.detach()))
        if metrics is not None:
            result.history.append(metrics)
        if on_epoch is not None:
            on_epoch(epoch)
        if early_stopping is not None and early_stopping.update(epoch, metrics or {}, model):
            break
    if early_stopping is not None and early_stopping.best_state is not None:
        early_stopping.restore(model)
        result.best_epoch = early_stopping.best_epoch
    else:
        result.best_epoch = result.epochs if result.diverged_at is None else result.epochs - 1
    return result


# ----------------------------------------------------------------------------------------
# minibatch training (image tasks); shards each global batch across processes under torchrun


def batches(count: int, batch_size: int, generator: torch.Generator, *, shuffle: bool = True):
    """Index tensors of the global batches of one epoch (the last one may be smaller)."""
    order = torch.randperm(count, generator=generator) if shuffle else torch.arange(count)
    return [order[start : start + batch_size] for start in range(0, count, batch_size)]


@dataclass
class StepFitResult:
    """``steps`` taken, passes started (``epochs``), the step and pass of the best validation value
    (``best_step``, ``best_epoch``; that state is restored) and the validation ``curve``."""

    steps: int = 0
    epochs: int = 0
    best_step: int = 0
    best_epoch: int = 0
    curve: List[Dict[str, Any]] = field(default_factory=list)


def fit_steps(
    model: torch.nn.Module,
    optimizer: Optimizer,
    items: torch.Tensor,
    batch_loss: Callable[[torch.Tensor], torch.Tensor],
    validate: Callable[[], float],
    *,
    batch_size: int,
    max_epochs: int,
    eval_steps: int,
    patience: int,
    min_improvement: float,
    generator: torch.Generator,
) -> StepFitResult:
    """Mini-batch training whose early stopping counts optimizer steps, for data of any size.

    Each pass shuffles ``items`` (indices of training units, e.g. forecast origins) into batches of
    ``batch_size`` (:func:`batches`) and takes one step on ``batch_loss(batch)``. ``validate()``
    (lower is better) runs every ``eval_steps`` steps and at the end of every pass, so a small data
    set (one step a pass) and a large one (hundreds) are both watched. Training stops after
    ``patience`` steps without a validation value ``min_improvement`` (relative) below the reference,
    after ``max_epochs`` passes, or at a non-finite loss (on the CPU at once; on a GPU at the next
    validation, so that no step waits for the device); the best validated state is restored whatever the
    margin.
    """
    # keeps the best state; the stopping rule below counts steps, not validations
    stopping = EarlyStopping(2**62, monitors={"val": "min"})
    result = StepFitResult()
    running: List[torch.Tensor] = []  # the losses since the last validation, kept where they are computed
    improved_at, reference = 0, math.inf
    for epoch in range(1, max_epochs + 1):
        chunks = [items[chunk] for chunk in batches(len(items), batch_size, generator)]
        for index, batch in enumerate(chunks):
            model.train()
            optimizer.zero_grad()
            loss = batch_loss(batch)
            if loss.device.type == "cpu" and not torch.isfinite(loss):  # free on the CPU: stop at once
                return _finish(model, stopping, result)
            loss.backward()
            optimizer.step()
            result.steps += 1
            running.append(loss.detach())
            if result.steps % eval_steps and index < len(chunks) - 1:
                continue
            # the device is waited for here, once per validation (a step never waits for it)
            losses = [float(value) for value in torch.stack(running).cpu()]
            if not all(math.isfinite(value) for value in losses):
                return _finish(model, stopping, result)
            value = validate()
            result.curve.append(
                {"step": result.steps, "epoch": epoch, "train": float(np.mean(losses)), "val": value}
            )
            result.epochs, running = epoch, []
            if value <= stopping.best["val"]:
                result.best_epoch = epoch
            stopping.update(result.steps, {"val": value}, model)
            if value < reference * (1 - min_improvement):
                reference, improved_at = value, result.steps
            if result.steps - improved_at >= patience:
                return _finish(model, stopping, result)
    return _finish(model, stopping, result)


def _finish(model: torch.nn.Module, stopping: EarlyStopping, result: StepFitResult) -> StepFitResult:
    if stopping.best_state is not None:
        stopping.restore(model)
    result.best_step = stopping.best_epoch
    return result


#: the reduced-precision dtype of ``amp=True`` (bfloat16: float32's range, so no loss scaling is needed)
AMP_DTYPE = torch.bfloat16


def autocast(device: Union[str, torch.device], enabled: bool) -> torch.autocast:
    """Mixed precision for the forward pass on ``device`` (``torch.autocast`` in :data:`AMP_DTYPE`), or a
    no-op context when not ``enabled``."""
    return torch.autocast(torch.device(device).type, dtype=AMP_DTYPE, enabled=bool(enabled))


class BatchLoader:
    """Global batches of a dataset in host memory, delivered on ``device``.

    On a CUDA device a batch is gathered into one of two pinned staging buffers and copied without blocking
    (the copy overlaps the previous step's kernels), the way a ``DataLoader(pin_memory=True)`` feeds a GPU; a
    buffer is refilled only once its last copy has finished (a CUDA event). On the CPU a batch is
    ``inputs[index]``.

    Args:
        inputs: ``(N, ...)`` the examples (on the CPU, or already on ``device``).
        targets: ``(N, ...)`` their targets.
        device: where the batches go.
    """

    def __init__(self, inputs: torch.Tensor, targets: torch.Tensor, device: Union[str, torch.device]) -> None:
        self.inputs, self.targets, self.device = inputs, targets, torch.device(device)
        self.pinned = self.device.type == "cuda" and inputs.device.type == "cpu"
        self._staging: List[Optional[torch.Tensor]] = [None, None]
        self._copied: List[Optional[Any]] = [None, None]  # the CUDA event of each buffer's last copy
        self._turn = 0

    def batch(self, index: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """The examples and targets of ``index`` (a CPU index tensor), on the device."""
        if not self.pinned:
            return self.inputs[index].to(self.device), self.targets[index].to(self.device)
        turn, rows = self._turn, len(index)
        self._turn = 1 - turn
        event = self._copied[turn]
        if event is not None:
            event.synchronize()  # the copy out of this buffer, two batches ago, has finished
        buffer = self._staging[turn]
        if buffer is None or buffer.shape[0] < rows:
            buffer = torch.empty((rows, *self.inputs.shape[1:]), dtype=self.inputs.dtype, pin_memory=True)
            self._staging[turn] = buffer
        staged = torch.index_select(self.inputs, 0, index, out=buffer[:rows])
        x = staged.to(self.device, non_blocking=True)
        event = torch.cuda.Event()
        event.record(torch.cuda.current_stream(self.device))
        self._copied[turn] = event
        return x, self.targets[index].to(self.device, non_blocking=True)


def train_epoch(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    batch_size: int,
    generator: torch.Generator,
    augment: Optional[Callable[[torch.Tensor, torch.Generator], torch.Tensor]] = None,
    penalty: Optional[Callable[[], torch.Tensor]] = None,
    scheduler: Any = None,
    device: Union[str, torch.device] = "cpu",
    shard: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    reduce: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    amp: bool = False,
) -> Dict[str, float]:
    """One epoch of minibatch SGD with cross entropy (+ ``penalty()``); returns mean loss and accuracy.

    Every process draws the same global batches and augmentations from ``generator``;
    ``shard`` selects this process's rows of each global batch and ``reduce`` sums a tensor
    over processes (both identity when training alone), so training under
    DistributedDataParallel follows the single-process trajectory.

    The batches go to ``device`` (pinned and non-blocking on CUDA, :class:`BatchLoader`) and are augmented
    there; the loss, accuracy and the finiteness of the objective are accumulated on the device, so an epoch
    waits for the device once, at its end. ``amp`` runs the forward pass under :func:`autocast` (bfloat16).

    Raises:
        NonFiniteError: the objective was NaN or inf at some step of the epoch.
    """
    model.train()
    device = torch.device(device)
    loader = BatchLoader(inputs, targets, device)
    totals = torch.zeros(3, dtype=torch.float64, device=device)  # loss · rows, correct, rows
    finite = torch.ones((), dtype=torch.bool, device=device)
    for index in batches(len(targets), batch_size, generator):
        x, y = loader.batch(index)
        if augment is not None:
            x = augment(x, generator)
        if shard is not None:
            x, y = shard(x), shard(y)
        optimizer.zero_grad()
        with autocast(device, amp):
            logits = model(x)
            loss = F.cross_entropy(logits, y)
        objective = loss if penalty is None else loss + penalty()
        finite &= torch.isfinite(objective.detach())
        objective.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
        predictions = logits.detach().argmax(1)
        rows = y.numel()
        totals += torch.stack(
            [loss.detach().double() * rows, (predictions == y).sum().double(), totals.new_tensor(rows)]
        )
    if reduce is not None:
        totals = reduce(totals)
    if not bool(finite):
        raise NonFiniteError("the training loss became NaN or inf in this epoch")
    return {"loss": float(totals[0] / totals[2]), "accuracy": float(totals[1] / totals[2])}


@torch.no_grad()
def evaluate_classifier(
    model: torch.nn.Module,
    inputs: torch.Tensor,
    targets: torch.Tensor,
    *,
    batch_size: int = 500,
    device: Union[str, torch.device] = "cpu",
    transform: Optional[Callable[[torch.Tensor], torch.Tensor]] = None,
    amp: bool = False,
) -> Dict[str, Any]:
    """Loss, accuracy and predictions of ``model`` in evaluation mode (per pixel for segmentation targets).

    Sums are kept on the device and read once, after the last batch; ``predictions`` come back on the CPU.
    """
    was_training = model.training
    model.eval()
    device = torch.device(device)
    loss = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.int64, device=device)
    count, predictions = 0, []
    for start in range(0, len(targets), batch_size):
        x = inputs[start : start + batch_size]
        x = transform(x) if transform is not None else x
        y = targets[start : start + batch_size].to(device)
        with autocast(device, amp):
            logits = model(x.to(device))
        loss += F.cross_entropy(logits.float(), y, reduction="sum").double()
        predicted = logits.argmax(1)
        correct += (predicted == y).sum()
        count += y.numel()
        predictions.append(predicted)
    model.train(was_training)
    return {
        "loss": float(loss) / count,
        "accuracy": int(correct) / count,
        "predictions": torch.cat(predictions).cpu(),
    }


def mean_iou(predictions: torch.Tensor, targets: torch.Tensor, num_classes: int) -> float:
    """Mean over classes present in ``targets`` or ``predictions`` of ``|P ∩ T| / |P ∪ T|`` (per-class
    IoU)."""
    ious = []
    for c in range(num_classes):
        predicted, actual = predictions == c, targets == c
        union = int((predicted | actual).sum())
        if union:
            ious.append(int((predicted & actual).sum()) / union)
    return float(sum(ious) / len(ious)) if ious else math.nan


def masked_mse(prediction: torch.Tensor, target: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean squared error over the entries of ``mask``.

    Args:
        prediction: forecasts, e.g. ``(S, N, H)``.
        target: the truth, of the same shape.
        mask: booleans of the same shape: the entries that count.

    Returns:
        A 0-dimensional tensor (differentiable with respect to ``prediction``).

    Examples:
        >>> masked_mse(torch.tensor([1.0, 5.0]), torch.tensor([0.0, 0.0]), torch.tensor([True, False]))
        tensor(1.)
    """
    return (prediction - target)[mask].square().mean()
