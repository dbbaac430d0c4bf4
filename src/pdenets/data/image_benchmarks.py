"""The data sets of the image study: CIFAR-10 with its two test sets, and two-digit MNIST canvases.

:func:`load_image_benchmark` builds one of :data:`IMAGE_BENCHMARKS` from its settings
(:class:`CifarSettings` or :class:`CanvasSettings`) as training images, named test sets and what a
network needs to know about them (:class:`ImageBenchmark`):

* ``cifar10`` — :func:`~pdenets.data.vision.load_cifar10_centred`: the first 40,000 training
  images (or ``train_limit``), the held-out last 10,000 (or the first ``test_limit`` of them) and
  the 1,000 official test images, all centred by the training mean; augmented while training.
* ``canvas`` — :func:`~pdenets.data.canvas.two_digit_canvases` of MNIST training digits (seed 1)
  and of MNIST test digits (seed 2), labelled by ``canvas_label`` (the sum mod 10 or "same").
* ``canvas-segmentation`` — the same canvases labelled per pixel (their masks).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Dict, Optional, Tuple, Union

from .canvas import canvas_classes, two_digit_canvases
from .vision import ImageData, load_cifar10_centred, load_mnist

__all__ = ["IMAGE_BENCHMARKS", "CifarSettings", "CanvasSettings", "ImageBenchmark", "load_image_benchmark"]

IMAGE_BENCHMARKS = ("cifar10", "canvas", "canvas-segmentation")


@dataclass(frozen=True)
class CifarSettings:
    """How much of CIFAR-10 is used.

    Args:
        train_limit: training images (default: ``None``, all 40,000).
        test_limit: held-out images evaluated (default: ``None``, all 10,000).
    """

    train_limit: Optional[int] = None
    test_limit: Optional[int] = None


@dataclass(frozen=True)
class CanvasSettings:
    """How the two-digit canvases are drawn.

    Args:
        canvas_train: training canvases (of MNIST training digits).
        canvas_test: test canvases (of MNIST test digits).
        canvas_size: the side of a canvas.
        min_distance: the least distance between the two digits' corners.
        canvas_label: ``"sum"`` (of the two digits, mod 10) or ``"same"`` (same digit or not).
        canvas_digits: the digit classes drawn, sorted (default: ``None``, all ten).
    """

    canvas_train: int
    canvas_test: int
    canvas_size: int
    min_distance: float
    canvas_label: str = "sum"
    canvas_digits: Optional[Tuple[int, ...]] = None


@dataclass(frozen=True)
class ImageBenchmark:
    """Training images, named test sets, and the shape of the problem.

    Args:
        train: the training images and their labels (masks for segmentation).
        tests: test set name → images and labels.
        classes: classes of the labels (per pixel for segmentation).
        channels: channels of the images.
        size: the side of the (square) images.
        augment: train with pad + random crop + flip (:func:`~pdenets.data.vision.pad_crop_flip`).
        segmentation: the labels are per-pixel masks.
    """

    train: ImageData
    tests: Dict[str, ImageData]
    classes: int
    channels: int
    size: int
    augment: bool
    segmentation: bool


def load_image_benchmark(
    name: str, settings: Union[CifarSettings, CanvasSettings], data_dir=None
) -> ImageBenchmark:
    """One data set of the image study, read from the local files.

    Args:
        name: one of :data:`IMAGE_BENCHMARKS`.
        settings: :class:`CifarSettings` for ``cifar10``, :class:`CanvasSettings` for the canvases.
        data_dir: the data directory (default: :func:`~pdenets.data.paths.resolve_data_dir`'s).

    Returns:
        The training images, the test sets (``"held-out"`` and ``"official"`` for CIFAR-10,
        ``"test canvases"`` for the canvases) and the number of classes, channels and the size.

    Raises:
        ValueError: ``name`` is not an image benchmark, or ``settings`` are those of another one.
        DatasetNotFoundError: a file of the data set is missing.
    """
    if name not in IMAGE_BENCHMARKS:
        raise ValueError(f"unknown image benchmark {name!r}; choose from {IMAGE_BENCHMARKS}")
    expected = CifarSettings if name == "cifar10" else CanvasSettings
    if not isinstance(settings, expected):
        raise ValueError(f"{name} is read with {expected.__name__}, got {type(settings).__name__}")
    if isinstance(settings, CifarSettings):
        train, tests = load_cifar10_centred(
            data_dir, train_limit=settings.train_limit, test_limit=settings.test_limit
        )
        return ImageBenchmark(train, tests, classes=10, channels=3, size=32, augment=True, segmentation=False)
    segmentation = name == "canvas-segmentation"
    train_digits, test_digits = load_mnist("train", data_dir), load_mnist("test", data_dir)
    label = settings.canvas_label
    canvases = partial(
        two_digit_canvases,
        size=settings.canvas_size,
        min_distance=settings.min_distance,
        label=label,
        digit_classes=settings.canvas_digits,
    )
    train_canvases = canvases(train_digits, settings.canvas_train, seed=1)
    test_canvases = canvases(test_digits, settings.canvas_test, seed=2)
    target = "masks" if segmentation else "labels"
    return ImageBenchmark(
        ImageData(train_canvases.images, getattr(train_canvases, target), "canvas-train"),
        {"test canvases": ImageData(test_canvases.images, getattr(test_canvases, target), "canvas-test")},
        classes=canvas_classes(label, segmentation),
        channels=1,
        size=settings.canvas_size,
        augment=False,
        segmentation=segmentation,
    )
