"""The image study's data sets built from their settings: what each benchmark says about its problem, the
segmentation targets, the CIFAR-10 limits, and the names and settings that are refused."""

import gzip
import json

import numpy as np
import pytest
import torch
from PIL import Image

from pdenets.data.canvas import two_digit_canvases
from pdenets.data.errors import DatasetNotFoundError
from pdenets.data.image_benchmarks import (
    IMAGE_BENCHMARKS,
    CanvasSettings,
    CifarSettings,
    load_image_benchmark,
)
from pdenets.data.vision import load_mnist


def _write_idx(path, values):
    header = bytes([0, 0, 8, values.ndim]) + b"".join(int(side).to_bytes(4, "big") for side in values.shape)
    with gzip.open(path, "wb") as handle:
        handle.write(header + values.astype(np.uint8).tobytes())


def _mnist(root, count=20):
    """Small MNIST files: ``count`` 28 x 28 digits, labels 0..9 in turn, in both splits."""
    folder = root / "mnist" / "MNIST" / "raw"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for prefix in ("train", "t10k"):
        _write_idx(folder / f"{prefix}-images-idx3-ubyte.gz", (rng.random((count, 28, 28)) > 0.7) * 255)
        _write_idx(folder / f"{prefix}-labels-idx1-ubyte.gz", np.arange(count) % 10)
    return root


def _cifar(root):
    """The CIFAR-10 label list and the three chunks a limited run reads (0: training, 40: held-out, 50:
    official)."""
    folder = root / "cifar10" / "convnetjs_png"
    folder.mkdir(parents=True)
    (folder / "cifar10_labels.json").write_text(json.dumps({"labels": [i % 10 for i in range(51_000)]}))
    for chunk in (0, 40, 50):
        rows = np.zeros((1000, 1024, 3), dtype=np.uint8)
        rows[:8] = np.random.default_rng(chunk).integers(0, 256, (8, 1024, 3))
        Image.fromarray(rows).save(folder / f"cifar10_batch_{chunk}.png")
    return root


SETTINGS = CanvasSettings(canvas_train=6, canvas_test=4, canvas_size=40, min_distance=10.0)


def test_canvas_segmentation_targets_are_the_canvases_masks(tmp_path):
    root = _mnist(tmp_path)
    benchmark = load_image_benchmark("canvas-segmentation", SETTINGS, root)
    expected = two_digit_canvases(load_mnist("train", root), 6, size=40, min_distance=10.0, seed=1)
    assert benchmark.train.labels.shape == (6, 40, 40) and torch.equal(benchmark.train.labels, expected.masks)
    assert torch.equal(benchmark.train.images, expected.images)
    ((name, test),) = benchmark.tests.items()
    assert name == "test canvases" and test.name == "canvas-test" and test.labels.shape == (4, 40, 40)
    shape = (benchmark.classes, benchmark.channels, benchmark.size, benchmark.augment, benchmark.segmentation)
    assert shape == (11, 1, 40, False, True)  # background + the ten sums
    plain = load_image_benchmark("canvas", SETTINGS, root)
    assert torch.equal(plain.train.labels, expected.labels) and (plain.classes, plain.segmentation) == (
        10,
        False,
    )


def test_the_same_label_and_chosen_digits_carry_through(tmp_path):
    root = _mnist(tmp_path)
    settings = CanvasSettings(6, 4, 40, 10.0, canvas_label="same", canvas_digits=(3, 7))
    benchmark = load_image_benchmark("canvas-segmentation", settings, root)
    assert benchmark.classes == 3 and set(benchmark.train.labels.unique().tolist()) <= {0, 1, 2}
    expected = two_digit_canvases(
        load_mnist("test", root), 4, size=40, min_distance=10.0, seed=2, label="same", digit_classes=(3, 7)
    )
    assert set(expected.digits.flatten().tolist()) <= {3, 7}
    assert torch.equal(benchmark.tests["test canvases"].labels, expected.masks)
    assert load_image_benchmark("canvas", settings, root).classes == 2


def test_cifar10_is_centred_augmented_and_limited_as_its_settings_say(tmp_path):
    benchmark = load_image_benchmark("cifar10", CifarSettings(train_limit=5, test_limit=2), _cifar(tmp_path))
    assert (benchmark.classes, benchmark.channels, benchmark.size) == (10, 3, 32)
    assert benchmark.augment and not benchmark.segmentation
    assert benchmark.train.images.shape == (5, 3, 32, 32) and benchmark.train.labels.tolist() == [
        0,
        1,
        2,
        3,
        4,
    ]
    assert {name: len(test) for name, test in benchmark.tests.items()} == {"held-out": 2, "official": 1000}
    assert float(benchmark.train.images.double().mean(0).abs().max()) < 1e-6


def test_unknown_names_mismatched_settings_and_missing_files_are_refused(tmp_path):
    assert IMAGE_BENCHMARKS == ("cifar10", "canvas", "canvas-segmentation")
    with pytest.raises(ValueError, match="unknown image benchmark 'mnist'; choose from"):
        load_image_benchmark("mnist", SETTINGS, tmp_path)
    with pytest.raises(ValueError, match="^cifar10 is read with CifarSettings, got CanvasSettings$"):
        load_image_benchmark("cifar10", SETTINGS, tmp_path)
    with pytest.raises(
        ValueError, match="^canvas-segmentation is read with CanvasSettings, got CifarSettings$"
    ):
        load_image_benchmark("canvas-segmentation", CifarSettings(), tmp_path)
    with pytest.raises(DatasetNotFoundError, match="train-images-idx3-ubyte.gz.*never downloads"):
        load_image_benchmark("canvas", SETTINGS, tmp_path)
