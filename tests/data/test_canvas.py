"""MNIST and CIFAR-10 readers (offline files), the augmentation, and the two-digit canvases."""

import gzip

import pytest
import torch

from pdenets.data.canvas import SEGMENTATION_CLASSES, canvas_classes, two_digit_canvases
from pdenets.data.vision import ImageData, load_mnist


def _digits(count=20, side=8):
    g = torch.Generator().manual_seed(0)
    images = (torch.rand(count, 1, side, side, generator=g) > 0.6).float()
    return ImageData(images, torch.arange(count) % 10, "toy")


def test_canvases_carry_the_sum_label_and_segmentation_masks():
    digits = _digits()
    canvases = two_digit_canvases(digits, 30, size=40, min_distance=20.0, seed=3)
    assert canvases.images.shape == (30, 1, 40, 40) and canvases.masks.shape == (30, 40, 40)
    assert torch.equal(canvases.labels, canvases.digits.sum(1) % 10)
    distances = (canvases.positions[:, 0] - canvases.positions[:, 1]).double().norm(dim=1)
    assert bool((distances >= 20.0).all())
    for index in range(30):
        strokes = canvases.images[index, 0] > 0.5
        assert torch.equal(canvases.masks[index] > 0, strokes)
        assert set(canvases.masks[index][strokes].tolist()) == {1 + int(canvases.labels[index])}
    assert int(canvases.masks.max()) < SEGMENTATION_CLASSES
    assert torch.equal(
        two_digit_canvases(digits, 30, size=40, min_distance=20.0, seed=3).images, canvases.images
    )
    assert not torch.equal(
        two_digit_canvases(digits, 30, size=40, min_distance=20.0, seed=4).images, canvases.images
    )


def test_same_label_canvases_are_balanced_and_say_whether_the_digits_agree():
    digits = _digits()
    canvases = two_digit_canvases(digits, 400, size=40, min_distance=20.0, seed=3, label="same")
    assert torch.equal(canvases.labels, (canvases.digits[:, 0] == canvases.digits[:, 1]).long())
    assert 0.4 < float(canvases.labels.float().mean()) < 0.6  # drawn same with probability 1/2, not 1/10
    strokes = canvases.images > 0.5
    assert (
        set(canvases.masks[strokes[:, 0]].tolist()) == {1, 2}
        and int(canvases.masks.max()) < canvas_classes("same", segmentation=True) == 3
    )
    assert canvas_classes("sum") == 10 and canvas_classes("sum", True) == SEGMENTATION_CLASSES
    with pytest.raises(ValueError, match="label must be one of"):
        two_digit_canvases(digits, 4, size=40, min_distance=20.0, label="product")


def test_digit_classes_restrict_the_drawn_digits():
    digits = _digits()
    canvases = two_digit_canvases(
        digits, 200, size=40, min_distance=20.0, seed=3, label="same", digit_classes=[1, 0]
    )
    assert set(canvases.digits.flatten().tolist()) == {0, 1}
    assert 0.4 < float(canvases.labels.float().mean()) < 0.6
    with pytest.raises(ValueError, match="digits do not have: \\[11\\]"):
        two_digit_canvases(digits, 4, size=40, min_distance=20.0, digit_classes=[0, 11])


def test_canvas_arguments_are_checked():
    with pytest.raises(ValueError, match="cannot hold"):
        two_digit_canvases(_digits(side=8), 2, size=6)
    with pytest.raises(ValueError, match="min_distance"):
        two_digit_canvases(_digits(side=8), 2, size=10, min_distance=50.0)


def _write_idx(path, values):
    """An IDX file of unsigned bytes (gzipped, as MNIST's) holding ``values``."""
    header = bytes([0, 0, 8, values.dim()]) + b"".join(int(side).to_bytes(4, "big") for side in values.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + bytes(values.to(torch.uint8).flatten().tolist()))


def _mnist_folder(root, split, images, labels):
    folder = root / "mnist" / "MNIST" / "raw"
    folder.mkdir(parents=True, exist_ok=True)
    prefix = "train" if split == "train" else "t10k"
    _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", images)
    _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", labels)


def test_test_canvases_are_drawn_with_their_own_seed(tmp_path):
    """Training canvases use seed 1 and test canvases seed 2: with the same digits in both MNIST files, the
    two sets differ (one seed for both would repeat the training canvases as the test set)."""
    from pdenets.data.image_benchmarks import CanvasSettings, load_image_benchmark

    digits = _digits(count=20, side=28)
    pixels, labels = (digits.images[:, 0] * 255).to(torch.uint8), digits.labels
    for split in ("train", "test"):
        _mnist_folder(tmp_path, split, pixels, labels)
    settings = CanvasSettings(canvas_train=12, canvas_test=12, canvas_size=40, min_distance=10.0)
    benchmark = load_image_benchmark("canvas", settings, tmp_path)
    options = dict(size=40, min_distance=10.0, label="sum")
    expected = {
        seed: two_digit_canvases(load_mnist("test", tmp_path), 12, seed=seed, **options) for seed in (1, 2)
    }
    test = benchmark.tests["test canvases"]
    assert torch.equal(test.images, expected[2].images) and torch.equal(test.labels, expected[2].labels)
    assert torch.equal(benchmark.train.images, expected[1].images)
    assert not torch.equal(benchmark.train.images, test.images)
