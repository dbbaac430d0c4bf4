"""MNIST and CIFAR-10 from the local files, and the plain-torch augmentations of the image tasks.

* :func:`load_mnist` — ``mnist/MNIST/raw/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` (IDX
  format), 60,000 + 10,000 images, ``(N, 1, 28, 28)`` float32 in [0, 1].
* :func:`load_cifar10` — ``cifar10/convnetjs_png/cifar10_batch_{0..50}.png`` (each row of a PNG
  is one 32 × 32 RGB image) and ``cifar10_labels.json``: batches 0–49 are the 50,000 training
  images, batch 50 the first 1,000 official test images. The other 9,000 official test images
  are not available offline, so the last 10,000 training images serve as the test set
  (``split="heldout"``) and the 1,000 official ones as a second test set (``split="official"``).

Augmentation (CIFAR): per-pixel mean subtraction (the training mean image), zero padding by
``pad`` pixels and a random ``32 × 32`` crop, and a random horizontal flip — all in torch, on
whole batches (:func:`pad_crop_flip`).
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Optional, Tuple

import numpy as np
import torch

from .csvfile import read_text_file
from .errors import DatasetError, DatasetNotFoundError
from .limits import check_allocation
from .paths import DATA_ENV_VAR, regular_file, resolve_data_dir

__all__ = [
    "ImageData",
    "load_mnist",
    "load_cifar10",
    "load_cifar10_centred",
    "VISION_DATASETS",
    "load_train_and_tests",
    "pad_crop_flip",
    "mean_image",
    "CIFAR10_CLASSES",
    "CIFAR_TRAIN",
    "CIFAR_HELD_OUT",
]

CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
CIFAR_TRAIN = 40_000
CIFAR_HELD_OUT = 10_000
_SOURCES = {
    "mnist": "http://yann.lecun.com/exdb/mnist/ (or torchvision's mirror)",
    "cifar10": "https://github.com/ml4a/ml4a.github.io (demos/datasets/cifar/) — the ConvNetJS PNG chunks",
}


@dataclass(frozen=True)
class ImageData:
    """``images (N, C, H, W)`` float32 in [0, 1] and ``labels (N,)`` int64."""

    images: torch.Tensor
    labels: torch.Tensor
    name: str

    def __len__(self) -> int:
        return int(self.labels.shape[0])


def _require(path: Path, source: str) -> Path:
    return regular_file(
        path,
        DatasetNotFoundError(
            f"missing dataset file {path}. Set the data directory with --data-dir or ${DATA_ENV_VAR}; get "
            f"it from {_SOURCES[source]}. pdenets never downloads data."
        ),
    )


def _idx(path: Path, expected_dims: int) -> np.ndarray:
    try:
        with gzip.open(path, "rb") as stream:
            header = stream.read(4)
            if len(header) < 4 or header[:2] != b"\x00\x00" or header[2] != 8 or header[3] != expected_dims:
                raise DatasetError(
                    f"{path}: not an IDX file of unsigned bytes with {expected_dims} dimension(s)"
                )
            shape = tuple(int.from_bytes(stream.read(4), "big") for _ in range(expected_dims))
            check_allocation(math.prod(shape), 1, f"an IDX array of shape {shape}", path)
            data = stream.read()
    except (OSError, EOFError) as error:
        raise DatasetError(f"{path}: not a readable gzip file ({error})") from None
    if len(data) != math.prod(shape):
        raise DatasetError(f"{path}: declares shape {shape} ({math.prod(shape)} bytes) but holds {len(data)}")
    return np.frombuffer(data, dtype=np.uint8).reshape(shape)


def load_mnist(split: str = "train", data_dir=None) -> ImageData:
    """The MNIST ``"train"`` (60,000) or ``"test"`` (10,000) images."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    folder = resolve_data_dir(data_dir) / "mnist" / "MNIST" / "raw"
    prefix = "train" if split == "train" else "t10k"
    images = _idx(_require(folder / f"{prefix}-images-idx3-ubyte.gz", "mnist"), 3)
    labels = _idx(_require(folder / f"{prefix}-labels-idx1-ubyte.gz", "mnist"), 1)
    if images.shape[0] != labels.shape[0]:
        raise DatasetError(f"{folder}: {images.shape[0]} images but {labels.shape[0]} labels")
    return ImageData(
        torch.from_numpy(images.astype(np.float32) / 255.0)[:, None],
        torch.from_numpy(labels.astype(np.int64)),
        f"mnist-{split}",
    )


def _cifar_chunk(path: Path) -> np.ndarray:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as image:
            array = np.asarray(image.convert("RGB"))
    except (UnidentifiedImageError, OSError) as error:
        raise DatasetError(f"{path}: not a readable PNG ({error})") from None
    if array.shape != (1000, 1024, 3):
        raise DatasetError(f"{path}: expected 1000 rows of 1024 RGB pixels, got {array.shape}")
    return array.reshape(1000, 32, 32, 3)


def load_cifar10(split: str = "train", data_dir=None, *, limit: Optional[int] = None) -> ImageData:
    """CIFAR-10 ``"train"`` (first 40,000 training images), ``"heldout"`` (the last 10,000, our test set),
    ``"official"`` (the 1,000 official test images available) or ``"all-train"`` (50,000)."""
    ranges = {"train": (0, 40), "heldout": (40, 50), "official": (50, 51), "all-train": (0, 50)}
    if split not in ranges:
        raise ValueError(f"split must be one of {sorted(ranges)}, got {split!r}")
    folder = resolve_data_dir(data_dir) / "cifar10" / "convnetjs_png"
    labels_path = _require(folder / "cifar10_labels.json", "cifar10")
    try:
        all_labels = np.asarray(
            json.loads(read_text_file(labels_path, "a JSON document"))["labels"], dtype=np.int64
        )
    except DatasetError:
        raise
    except (ValueError, KeyError, TypeError, OverflowError) as error:
        raise DatasetError(f"{labels_path}: not the CIFAR-10 label list ({error})") from None
    if all_labels.shape != (51_000,) or all_labels.min() < 0 or all_labels.max() > 9:
        raise DatasetError(f"{labels_path}: expected 51,000 labels in 0..9, got {all_labels.shape}")
    first, last = ranges[split]
    chunks = range(first, last)
    if limit is not None:
        chunks = range(first, min(last, first + -(-limit // 1000)))
    images = np.concatenate(
        [_cifar_chunk(_require(folder / f"cifar10_batch_{i}.png", "cifar10")) for i in chunks]
    )
    labels = all_labels[first * 1000 : first * 1000 + len(images)]
    if limit is not None:
        images, labels = images[:limit], labels[:limit]
    tensor = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float().div_(255.0)
    return ImageData(tensor, torch.from_numpy(labels), f"cifar10-{split}")


def pad_crop_flip(
    images: torch.Tensor, generator: torch.Generator, *, pad: int = 4, flip: bool = True
) -> torch.Tensor:
    """Zero-pad by ``pad``, crop back at a random offset per image, flip half of them horizontally.

    The offsets and flips are drawn from ``generator`` (a CPU generator: the same draws on every device), then
    applied where the images are (a batch on the GPU is augmented there).
    """
    batch, channels, height, width = images.shape
    device = images.device
    if pad:
        padded = torch.nn.functional.pad(images, (pad,) * 4)
        offsets = torch.randint(0, 2 * pad + 1, (batch, 2), generator=generator).to(device)
        rows = offsets[:, :1] + torch.arange(height, device=device)
        cols = offsets[:, 1:] + torch.arange(width, device=device)
        index = torch.arange(batch, device=device)[:, None, None]
        images = padded.permute(0, 2, 3, 1)[index, rows[:, :, None], cols[:, None, :]].permute(0, 3, 1, 2)
    if flip:
        flips = torch.rand(batch, generator=generator).to(device) < 0.5
        images = torch.where(flips[:, None, None, None], images.flip(3), images)
    return images.contiguous()


def mean_image(images: torch.Tensor) -> torch.Tensor:
    """The per-pixel mean of a training set, ``(C, H, W)``."""
    return images.mean(0)


def load_cifar10_centred(
    data_dir=None, *, train_limit: Optional[int] = None, test_limit: Optional[int] = None
) -> Tuple[ImageData, Dict[str, ImageData]]:
    """The CIFAR-10 protocol of the papers at our data's scale: the first 40,000 training images (or
    ``train_limit``) centred by their per-pixel mean, and the test sets ``"held-out"`` (the last 10,000
    training images, or the first ``test_limit`` of them) and ``"official"`` (the 1,000 official test
    images), centred by the **same training mean**.

    Examples:
        >>> train, tests = load_cifar10_centred(train_limit=1000, test_limit=500)  # doctest: +SKIP
        >>> train.images.shape, sorted(tests), tests["held-out"].images.shape  # doctest: +SKIP
        (torch.Size([1000, 3, 32, 32]), ['held-out', 'official'], torch.Size([500, 3, 32, 32]))
    """
    train = load_cifar10("train", data_dir, limit=train_limit)
    mean = mean_image(train.images)
    tests = {
        name: load_cifar10(split, data_dir, limit=limit)
        for name, split, limit in (("held-out", "heldout", test_limit), ("official", "official", None))
    }
    return (
        ImageData(train.images - mean, train.labels, train.name),
        {name: ImageData(test.images - mean, test.labels, test.name) for name, test in tests.items()},
    )


VISION_DATASETS = ("mnist", "cifar10")


def load_train_and_tests(
    dataset: str, train_limit: Optional[int] = None, test_limit: Optional[int] = None, data_dir=None
) -> Tuple[ImageData, Dict[str, ImageData]]:
    """The training images of ``dataset`` and its test sets by name.

    Args:
        dataset: ``"mnist"`` or ``"cifar10"``.
        train_limit: the number of training images kept (default: ``None``, all).
        test_limit: the number of test images kept (default: ``None``, all; CIFAR-10: of the held-out
            test set, the official one is always whole).
        data_dir: the data folder (default: ``None``, :func:`~pdenets.data.paths.resolve_data_dir`'s).

    Returns:
        ``(train, tests)``: the training :class:`~pdenets.data.vision.ImageData` and the test sets,
        ``{"test": …}`` for MNIST and ``{"test": held-out, "official": …}`` for CIFAR-10.

    Raises:
        ValueError: ``dataset`` is neither ``"mnist"`` nor ``"cifar10"``.

    Examples:
        >>> train, tests = load_train_and_tests("mnist", 3000, 1000)  # doctest: +SKIP
        >>> train.images.shape, {name: len(test.labels) for name, test in tests.items()}  # doctest: +SKIP
        (torch.Size([3000, 1, 28, 28]), {'test': 1000})
        >>> load_train_and_tests("svhn")
        Traceback (most recent call last):
            ...
        ValueError: dataset must be one of ('mnist', 'cifar10'), got 'svhn'
    """
    if dataset not in VISION_DATASETS:
        raise ValueError(f"dataset must be one of {VISION_DATASETS}, got {dataset!r}")
    if dataset == "mnist":
        train, test = load_mnist("train", data_dir), load_mnist("test", data_dir)
        train = ImageData(train.images[:train_limit], train.labels[:train_limit], train.name)
        return train, {"test": ImageData(test.images[:test_limit], test.labels[:test_limit], test.name)}
    train, centred = load_cifar10_centred(data_dir, train_limit=train_limit, test_limit=test_limit)
    return train, {"test": centred["held-out"], "official": centred["official"]}
