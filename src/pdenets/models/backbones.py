"""Embedding backbones for few-shot learning, trained on base classes and used frozen afterwards.

:class:`Conv4` is the standard small backbone of few-shot work (Vinyals et al. 2016; Snell et
al. 2017): four blocks of ``3×3 conv (64) → BatchNorm → ReLU → 2×2 max-pool``. On 28 × 28
inputs (Omniglot) the output is 64 × 1 × 1, i.e. a 64-dimensional embedding; larger inputs
give ``64 · (size / 16)²``. :func:`train_backbone` trains it with a linear classifier on the
base classes (cross entropy, SGD with momentum, cosine learning rate, random shifts; with
``rotations`` each 90° rotation of a class becomes a class of its own, the usual Omniglot
augmentation), and :func:`extract_features` embeds images in evaluation mode.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

import torch
from torch import nn
from torch.nn import functional as F

from .._checks import check_positive_int
from .registry import ModelExample, register_model

__all__ = ["Conv4", "train_backbone", "extract_features", "BackboneTraining", "TrainingHistory"]


def _block(in_channels: int, out_channels: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1),
        nn.BatchNorm2d(out_channels),
        nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
    )


@register_model(
    "conv4",
    family="backbone",
    example=lambda num_classes: ModelExample(
        {"in_channels": 5, "image_size": 16}, (torch.randn(6, 5, 16, 16),), (6, num_classes)
    ),
    description="Conv-4 few-shot backbone: 4 x (conv 64, BN, ReLU, pool)",
)
class Conv4(nn.Module):
    """Four conv blocks; :meth:`embed` gives the flattened features, :meth:`forward` the class logits.

    Args:
        in_channels: 1 (grayscale) or 3 (default 1).
        num_classes: classes of the training head (0: no head, embeddings only).
        width: channels of every block (default 64).

    Shapes:
        - input: ``(B, in_channels, H, W)`` with ``H, W >= 16``
        - :meth:`embed`: ``(B, width · ⌊H/16⌋ · ⌊W/16⌋)``

    Examples:
        >>> import torch
        >>> net = Conv4(num_classes=10)
        >>> net.embed(torch.zeros(2, 1, 28, 28)).shape, net(torch.zeros(2, 1, 28, 28)).shape
        (torch.Size([2, 64]), torch.Size([2, 10]))
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 0, *, width: int = 64, image_size: int = 28):
        super().__init__()
        in_channels = check_positive_int(in_channels, "in_channels")
        width = check_positive_int(width, "width")
        image_size = check_positive_int(image_size, "image_size", minimum=16)
        self.encoder = nn.Sequential(
            _block(in_channels, width), _block(width, width), _block(width, width), _block(width, width)
        )
        self.embedding_dim = width * (image_size // 16) ** 2
        self.image_size = image_size
        self.head = nn.Linear(self.embedding_dim, num_classes) if num_classes else None

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        return self.encoder(images).flatten(1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.head is None:
            raise RuntimeError("this Conv4 has no classification head (num_classes=0); use embed()")
        return self.head(self.embed(images))


@dataclass(frozen=True)
class BackboneTraining:
    """Settings of :func:`train_backbone` (defaults: a few CPU minutes on Omniglot's 136 base characters)."""

    epochs: int = 30
    batch_size: int = 128
    lr: float = 0.1
    momentum: float = 0.9
    weight_decay: float = 5e-4
    rotations: bool = True
    max_shift: int = 2
    validation_fraction: float = 0.1
    seed: int = 0


@dataclass
class TrainingHistory:
    train_loss: List[float] = field(default_factory=list)
    train_accuracy: List[float] = field(default_factory=list)
    validation_accuracy: List[float] = field(default_factory=list)


def _rotated(images: torch.Tensor, labels: torch.Tensor, num_classes: int):
    """Each 90° rotation of a class becomes a new class (labels ``c + k · num_classes``)."""
    turns = [torch.rot90(images, k, dims=(2, 3)) for k in range(4)]
    return torch.cat(turns), torch.cat([labels + k * num_classes for k in range(4)]), 4 * num_classes


def train_backbone(
    images: torch.Tensor,
    labels: torch.Tensor,
    settings: BackboneTraining = BackboneTraining(),
    *,
    progress: Optional[Callable[[int, Dict[str, float]], None]] = None,
    device: str = "cpu",
) -> tuple:
    """Train a :class:`Conv4` with a linear head on ``images (N, C, H, W)`` / ``labels (N,)``.

    A stratified ``validation_fraction`` of every class is held out to report accuracy.
    Returns ``(model, history)``; the model is in evaluation mode.
    """
    from ..data.images import random_shift

    generator = torch.Generator().manual_seed(settings.seed)
    num_classes = int(labels.max()) + 1
    if settings.rotations:
        images, labels, num_classes = _rotated(images, labels, num_classes)
    order = torch.randperm(len(labels), generator=generator)
    held = torch.zeros(len(labels), dtype=torch.bool)
    for c in range(num_classes):
        members = order[labels[order] == c]
        held[members[: max(1, int(round(settings.validation_fraction * len(members))))]] = (
            settings.validation_fraction > 0
        )
    train_x, train_y, val_x, val_y = images[~held], labels[~held], images[held], labels[held]
    torch.manual_seed(settings.seed)
    model = Conv4(images.shape[1], num_classes, image_size=images.shape[-1]).to(device)
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=settings.lr,
        momentum=settings.momentum,
        weight_decay=settings.weight_decay,
        nesterov=True,
    )
    steps_per_epoch = math.ceil(len(train_y) / settings.batch_size)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=settings.lr, epochs=settings.epochs, steps_per_epoch=steps_per_epoch
    )
    history = TrainingHistory()
    for epoch in range(settings.epochs):
        model.train()
        permutation = torch.randperm(len(train_y), generator=generator)
        total, correct, loss_sum = 0, 0, 0.0
        for start in range(0, len(train_y), settings.batch_size):
            batch = permutation[start : start + settings.batch_size]
            x = random_shift(train_x[batch], settings.max_shift, generator).to(device)
            y = train_y[batch].to(device)
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
            loss_sum += float(loss.detach()) * len(batch)
            correct += int((logits.argmax(1) == y).sum())
            total += len(batch)
        history.train_loss.append(loss_sum / total)
        history.train_accuracy.append(correct / total)
        history.validation_accuracy.append(_accuracy(model, val_x, val_y, device) if len(val_y) else math.nan)
        if progress is not None:
            progress(epoch + 1, {"loss": history.train_loss[-1], "val_acc": history.validation_accuracy[-1]})
    model.eval()
    return model, history


@torch.no_grad()
def _accuracy(model: Conv4, images: torch.Tensor, labels: torch.Tensor, device: str) -> float:
    model.eval()
    correct = 0
    for start in range(0, len(labels), 512):
        correct += int(
            (
                model(images[start : start + 512].to(device)).argmax(1).cpu() == labels[start : start + 512]
            ).sum()
        )
    return correct / len(labels)


@torch.no_grad()
def extract_features(
    model: Conv4, images: torch.Tensor, *, batch_size: int = 512, device: str = "cpu"
) -> torch.Tensor:
    """Embeddings ``(N, D)`` of ``images (N, C, H, W)`` in evaluation mode."""
    model.eval()
    return torch.cat(
        [
            model.embed(images[start : start + batch_size].to(device)).cpu()
            for start in range(0, len(images), batch_size)
        ]
    )
