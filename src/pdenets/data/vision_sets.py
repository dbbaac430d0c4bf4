"""The training images and the test sets of MNIST or CIFAR-10, as the image studies use them.

MNIST: the first ``train_limit`` of the 60,000 training images and the first ``test_limit`` of the
10,000 test images. CIFAR-10: the centred protocol of :func:`~pdenets.data.vision.load_cifar10_centred`
(the first 40,000 training images; the last 10,000 held out as the test set and the 1,000 official test
images as a second one, all centred by the training mean).
"""

from __future__ import annotations

from typing import Dict, Optional, Tuple

from .vision import ImageData, load_cifar10_centred, load_mnist

__all__ = ["VISION_DATASETS", "load_train_and_tests"]

VISION_DATASETS = ("mnist", "cifar10")


def load_train_and_tests(dataset: str, train_limit: Optional[int] = None, test_limit: Optional[int] = None,
                         data_dir=None) -> Tuple[ImageData, Dict[str, ImageData]]:
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
