"""The two-digit canvases: labels, masks and pixels against a reference drawn from the digits and
positions, the distance between the digits at its limit, and the requests that are refused."""

import gzip
import math

import numpy as np
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


def _unique_digits(side=8):
    """Ten glyphs, one per class: a canvas's digit values name the glyphs it holds."""
    g = torch.Generator().manual_seed(1)
    return ImageData(torch.rand(10, 1, side, side, generator=g), torch.arange(10), "ten")


def test_canvases_match_a_reference_drawn_from_their_digits_and_positions():
    digits = _unique_digits()
    canvases = two_digit_canvases(digits, 25, size=20, min_distance=6.0, seed=5)
    assert len(canvases) == 25 and canvases.positions.min() >= 0 and canvases.positions.max() <= 20 - 8
    glyphs = digits.images[:, 0].numpy()
    for index in range(25):
        image = np.zeros((20, 20), dtype=np.float32)
        mask = np.zeros((20, 20), dtype=np.int64)
        label = int(canvases.digits[index].sum()) % 10
        for slot in range(2):
            row, col = canvases.positions[index, slot].tolist()
            glyph = glyphs[int(canvases.digits[index, slot])]
            window = (slice(row, row + 8), slice(col, col + 8))
            image[window] = np.maximum(image[window], glyph)  # overlapping strokes: the brighter, not the sum
            mask[window][glyph > 0.5] = 1 + label
        assert np.array_equal(canvases.images[index, 0].numpy(), image), index
        assert np.array_equal(canvases.masks[index].numpy(), mask), index


def test_min_distance_at_the_diagonal_of_the_room_forces_opposite_corners():
    digits = _unique_digits()
    room = 10 - 8
    canvases = two_digit_canvases(digits, 12, size=10, min_distance=math.hypot(room, room), seed=0)
    for first, second in canvases.positions.tolist():
        assert {tuple(first), tuple(second)} in ({(0, 0), (2, 2)}, {(0, 2), (2, 0)})
    with pytest.raises(ValueError, match="is more than any two positions on a 10x10 canvas allow"):
        two_digit_canvases(digits, 1, size=10, min_distance=math.hypot(room, room) + 1e-9)
    stacked = two_digit_canvases(digits, 6, size=8, min_distance=0.0, seed=0)  # no room: both at (0, 0)
    assert int(stacked.positions.abs().sum()) == 0
    expected = torch.maximum(digits.images[stacked.digits[:, 0], 0], digits.images[stacked.digits[:, 1], 0])
    assert torch.equal(stacked.images[:, 0], expected)


def test_canvas_requests_that_cannot_be_met_are_refused():
    digits = _unique_digits()
    with pytest.raises(ValueError, match="label='same' needs digits of at least two classes"):
        two_digit_canvases(digits, 2, size=10, min_distance=0.0, label="same", digit_classes=[4])
    with pytest.raises(ValueError, match="name classes the digits do not have: none given"):
        two_digit_canvases(digits, 2, size=10, min_distance=0.0, digit_classes=[])
    with pytest.raises(ValueError, match="count must be an integer >= 1, got 0"):
        two_digit_canvases(digits, 0, size=10, min_distance=0.0)
    with pytest.raises(TypeError, match="count must be an integer, got float"):
        two_digit_canvases(digits, 2.0, size=10, min_distance=0.0)
    with pytest.raises(ValueError, match=r"label must be one of \['same', 'sum'\], got 'sum '"):
        canvas_classes("sum ")
