"""Field-of-view tasks built from real digits: two MNIST digits far apart on one canvas.

Each canvas (default 96 × 96) holds two MNIST digits (28 × 28) placed at random with their
centres at least ``min_distance`` pixels apart, and its label needs both: the sum of the two
digits modulo 10. A network that only sees a neighbourhood smaller than the distance between
the digits cannot know the label; a nonlocal operator connects them in one layer.

With ``label="same"`` the label is instead whether the two digits are the same (1) or not (0),
the second digit drawn from the first one's class with probability 1/2: a comparison of two
distant patterns, the kind of interaction an embedded dot-product kernel ``θ(x_p)ᵀφ(x_q)`` forms
in one layer. ``digit_classes`` draws the digits from some classes only (e.g. ``(0, 1)``: telling
the digits apart is then easy, and what is left to learn is the comparison across the canvas).

The segmentation version labels every pixel: 0 for background, ``1 + label`` on the strokes
(intensity > 0.5) of either digit — so segmenting a stroke correctly requires knowing the other,
distant digit.

Examples:
    >>> import torch
    >>> from pdenets.data.vision import ImageData
    >>> digits = ImageData(torch.rand(10, 1, 28, 28), torch.arange(10), "demo")
    >>> canvas = two_digit_canvases(digits, 4, seed=0)
    >>> canvas.images.shape, canvas.labels.shape, canvas.masks.shape
    (torch.Size([4, 1, 96, 96]), torch.Size([4]), torch.Size([4, 96, 96]))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import torch

from .._checks import check_positive_int
from .vision import ImageData

__all__ = ["Canvases", "two_digit_canvases", "SEGMENTATION_CLASSES", "LABELS", "canvas_classes"]

#: background + one class per value of the sum modulo 10
SEGMENTATION_CLASSES = 11
#: label rules: the sum of the two digits modulo 10, or whether they are the same digit
LABELS = {"sum": 10, "same": 2}


def canvas_classes(label: str = "sum", segmentation: bool = False) -> int:
    """Number of classes of a canvas task (segmentation adds the background class)."""
    if label not in LABELS:
        raise ValueError(f"label must be one of {sorted(LABELS)}, got {label!r}")
    return LABELS[label] + int(segmentation)


@dataclass(frozen=True)
class Canvases:
    """``images (N, 1, S, S)``, ``labels (N,)`` (sum mod 10, or same/different), ``masks (N, S, S)``
    (segmentation classes),
    ``digits (N, 2)`` and ``positions (N, 2, 2)`` (top-left corners)."""

    images: torch.Tensor
    labels: torch.Tensor
    masks: torch.Tensor
    digits: torch.Tensor
    positions: torch.Tensor

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def two_digit_canvases(
    digits: ImageData,
    count: int,
    *,
    size: int = 96,
    min_distance: float = 48.0,
    seed: int = 0,
    label: str = "sum",
    digit_classes: Optional[Sequence[int]] = None,
) -> Canvases:
    """``count`` canvases from the images of ``digits`` (drawn with replacement, seeded).

    ``label``: ``"sum"`` (of the two digits, mod 10) or ``"same"`` (1 if they are the same digit).
    ``digit_classes``: draw only digits of these classes (default: all of ``digits``).
    """
    canvas_classes(label)
    if digit_classes is not None:
        wanted = sorted({int(value) for value in digit_classes})
        present = set(digits.labels.unique().tolist())
        missing = [value for value in wanted if value not in present]
        if not wanted or missing:
            raise ValueError(
                f"digit_classes {list(digit_classes)} name classes the digits do not have: "
                f"{missing or 'none given'} (present: {sorted(present)})"
            )
        keep = torch.isin(digits.labels, torch.tensor(wanted, dtype=digits.labels.dtype))
        digits = ImageData(digits.images[keep], digits.labels[keep], digits.name)
    count = check_positive_int(count, "count")
    size = check_positive_int(size, "size")
    side = digits.images.shape[-1]
    room = size - side
    if room < 0:
        raise ValueError(f"a {size}x{size} canvas cannot hold {side}x{side} digits")
    if min_distance > math.hypot(room, room):
        raise ValueError(
            f"min_distance={min_distance} is more than any two positions on a {size}x{size} canvas allow"
        )
    generator = np.random.default_rng(seed)
    chosen = generator.integers(0, len(digits), size=(count, 2))
    if label == "same":
        classes = digits.labels.numpy()
        members = {value: np.flatnonzero(classes == value) for value in np.unique(classes)}
        if len(members) < 2:
            raise ValueError("label='same' needs digits of at least two classes")
        same = generator.random(count) < 0.5
        for index in range(count):
            first = classes[chosen[index, 0]]
            pool = members[first] if same[index] else np.flatnonzero(classes != first)
            chosen[index, 1] = pool[generator.integers(0, len(pool))]
    positions = np.empty((count, 2, 2), dtype=np.int64)
    for index in range(count):
        while True:
            corners = generator.integers(0, room + 1, size=(2, 2))
            if np.hypot(*(corners[0] - corners[1])) >= min_distance:
                positions[index] = corners
                break
    images = torch.zeros(count, 1, size, size)
    masks = torch.zeros(count, size, size, dtype=torch.long)
    values = digits.labels[torch.from_numpy(chosen)]
    labels = values.sum(1) % 10 if label == "sum" else (values[:, 0] == values[:, 1]).long()
    for index in range(count):
        for slot in range(2):
            row, col = positions[index, slot]
            glyph = digits.images[chosen[index, slot], 0]
            region = images[index, 0, row : row + side, col : col + side]
            torch.maximum(region, glyph, out=region)
            masks[index, row : row + side, col : col + side][glyph > 0.5] = 1 + int(labels[index])
    return Canvases(images, labels, masks, values, torch.from_numpy(positions))
