"""MNIST and CIFAR-10 readers (offline files), the augmentation, and the two-digit canvases."""

import gzip

import pytest
import torch
from datafiles import MNIST, cifar10, requires_data

from pdenets.data import DatasetError
from pdenets.data.canvas import SEGMENTATION_CLASSES, canvas_classes, two_digit_canvases
from pdenets.data.vision import ImageData, load_cifar10, load_mnist, pad_crop_flip


@requires_data(*MNIST)
def test_mnist_matches_its_published_statistics():
    test = load_mnist("test")
    assert test.images.shape == (10_000, 1, 28, 28) and test.images.dtype == torch.float32
    assert torch.bincount(test.labels).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    train = load_mnist("train")
    assert float(train.images.double().mean()) == pytest.approx(0.1306604763, abs=1e-8)


@requires_data(*cifar10(*range(51)))
def test_cifar10_splits_follow_the_official_order():
    official = load_cifar10("official")
    assert official.labels[:10].tolist() == [3, 8, 8, 0, 6, 6, 1, 6, 3, 1] and len(official) == 1000
    assert torch.bincount(official.labels).tolist() == [103, 89, 100, 103, 90, 86, 112, 102, 106, 109]
    first = load_cifar10("train", limit=1500)
    assert first.images.shape == (1500, 3, 32, 32) and first.labels[:5].tolist() == [6, 9, 9, 4, 1]
    held_out = load_cifar10("heldout", limit=10)
    everything = load_cifar10("all-train", limit=40_010)
    assert torch.equal(held_out.labels, everything.labels[40_000:])
    assert torch.equal(held_out.images, everything.images[40_000:])


def test_readers_name_missing_and_broken_files(tmp_path):
    with pytest.raises(DatasetError, match="never downloads"):
        load_mnist("test", tmp_path)
    with pytest.raises(ValueError, match="split"):
        load_cifar10("test", tmp_path)
    folder = tmp_path / "mnist" / "MNIST" / "raw"
    folder.mkdir(parents=True)
    with gzip.open(folder / "t10k-images-idx3-ubyte.gz", "wb") as handle:
        handle.write(b"not an idx file")
    (folder / "t10k-labels-idx1-ubyte.gz").write_bytes(b"")
    with pytest.raises(DatasetError, match="t10k-images"):
        load_mnist("test", tmp_path)
    cifar = tmp_path / "cifar10" / "convnetjs_png"
    cifar.mkdir(parents=True)
    (cifar / "cifar10_labels.json").write_text('{"labels": [1, 2]}')
    with pytest.raises(DatasetError, match="51,000 labels"):
        load_cifar10("official", tmp_path)


def test_pad_crop_flip_is_a_shifted_window_or_its_mirror():
    images = torch.arange(1, 2 * 3 * 8 * 8 + 1, dtype=torch.float32).view(2, 3, 8, 8).repeat(8, 1, 1, 1)
    out = pad_crop_flip(images, torch.Generator().manual_seed(0), pad=2)
    padded = torch.nn.functional.pad(images, (2, 2, 2, 2))
    flips = 0
    for index in range(len(images)):
        windows = [padded[index, :, r : r + 8, c : c + 8] for r in range(5) for c in range(5)]
        plain = any(torch.equal(out[index], w) for w in windows)
        mirrored = any(torch.equal(out[index], w.flip(2)) for w in windows)
        assert plain or mirrored
        flips += mirrored and not plain
    assert 0 < flips < len(images)
    assert torch.equal(pad_crop_flip(images, torch.Generator(), pad=0, flip=False), images)
    again = pad_crop_flip(images, torch.Generator().manual_seed(0), pad=2)
    assert torch.equal(out, again)


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


def test_mnist_labels_must_be_one_dimensional(tmp_path):
    images = torch.arange(8).view(2, 2, 2)
    _mnist_folder(tmp_path, "test", images, images)  # images where the labels belong
    with pytest.raises(
        DatasetError, match="t10k-labels-idx1-ubyte.gz: not an IDX file of unsigned bytes with 1 "
    ):
        load_mnist("test", tmp_path)
    _mnist_folder(tmp_path, "test", images, torch.tensor([7, 2]))
    loaded = load_mnist("test", tmp_path)
    assert loaded.labels.tolist() == [7, 2] and loaded.images.shape == (2, 1, 2, 2)
    assert loaded.images.flatten().tolist() == pytest.approx([value / 255 for value in range(8)])


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
