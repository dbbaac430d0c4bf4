"""MNIST and CIFAR-10 from their offline files: the pixel layout, the split ranges and limits, centring by the
training mean, files that break the layout, and the pad-crop-flip augmentation."""

import gzip
import json

import numpy as np
import pytest
import torch
from datafiles import MNIST, cifar10, requires_data
from PIL import Image

from pdenets.data import DatasetError
from pdenets.data.vision import load_cifar10, load_mnist, load_train_and_tests, pad_crop_flip


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


def _cifar_folder(root, chunks, labels=None):
    """The ConvNetJS layout: 51,000 labels, and PNG chunks whose row i of chunk k is image 1000k + i."""
    folder = root / "cifar10" / "convnetjs_png"
    folder.mkdir(parents=True, exist_ok=True)
    if labels is None:
        labels = (np.arange(51_000) * 7 + np.arange(51_000) // 1000) % 10
    (folder / "cifar10_labels.json").write_text(json.dumps({"labels": [int(v) for v in labels]}))
    pixels = {}
    for chunk in chunks:
        rows = np.zeros((1000, 1024, 3), dtype=np.uint8)
        rows[:5] = np.random.default_rng(chunk).integers(0, 256, (5, 1024, 3))
        rows[999] = chunk  # the last image of each chunk: one grey level per chunk
        Image.fromarray(rows).save(folder / f"cifar10_batch_{chunk}.png")
        pixels[chunk] = rows
    return folder, np.asarray(labels), pixels


def _as_images(rows):
    """Independent reading of PNG rows: row = 32 x 32 pixels row-major, RGB → (N, 3, 32, 32) in [0, 1]."""
    return torch.from_numpy(rows.reshape(-1, 32, 32, 3).transpose(0, 3, 1, 2).astype(np.float32) / 255)


def test_cifar_rows_are_images_of_32_rows_of_32_rgb_pixels_in_the_official_order(tmp_path):
    _, labels, pixels = _cifar_folder(tmp_path, (0, 40, 41, 50))
    first = load_cifar10("train", tmp_path, limit=3)
    assert first.name == "cifar10-train" and torch.equal(first.images, _as_images(pixels[0][:3]))
    assert first.labels.tolist() == labels[:3].tolist()
    assert len(load_cifar10("train", tmp_path, limit=1000)) == 1000  # one chunk exactly: chunk 1 is not read
    with pytest.raises(DatasetError, match="cifar10_batch_1.png. Set the data directory"):
        load_cifar10("train", tmp_path, limit=1001)
    held_out = load_cifar10("heldout", tmp_path, limit=1001)  # reaches into the second chunk, 41
    assert held_out.labels.tolist() == labels[40_000:41_001].tolist()
    assert torch.equal(held_out.images[999:], _as_images(np.concatenate([pixels[40][999:], pixels[41][:1]])))
    official = load_cifar10("official", tmp_path)
    assert len(official) == 1000 and official.labels.tolist() == labels[50_000:].tolist()
    assert float(official.images[999].max()) == pytest.approx(50 / 255)


def test_both_cifar_test_sets_are_centred_by_the_training_mean(tmp_path):
    _, _, pixels = _cifar_folder(tmp_path, (0, 40, 50))
    train, tests = load_train_and_tests("cifar10", train_limit=4, test_limit=3, data_dir=tmp_path)
    mean = _as_images(pixels[0][:4]).double().mean(0)
    assert sorted(tests) == ["official", "test"] and len(tests["official"]) == 1000
    assert torch.allclose(train.images.double(), _as_images(pixels[0][:4]).double() - mean, atol=1e-6)
    for name, rows in (("test", pixels[40][:3]), ("official", pixels[50])):
        assert torch.allclose(tests[name].images.double(), _as_images(rows).double() - mean, atol=1e-6), name
    assert float(train.images.double().mean(0).abs().max()) < 1e-6  # centred training set
    assert float(tests["test"].images.double().mean(0).abs().max()) > 0.01  # the test set is not self-centred


@pytest.mark.parametrize(
    "labels, chunk, message",
    [
        (np.full(51_000, 10), None, "expected 51,000 labels in 0..9"),
        (np.full(51_000, -1), None, "expected 51,000 labels in 0..9"),
        (
            None,
            np.zeros((999, 1024, 3), dtype=np.uint8),
            "expected 1000 rows of 1024 RGB pixels, got (999, 1024, 3)",
        ),
        (None, b"\x89PNG\r\n\x1a\n broken", "cifar10_batch_0.png: not a readable PNG"),
    ],
    ids=["label 10", "label -1", "999 rows", "broken png"],
)
def test_a_cifar_folder_that_breaks_the_layout_is_named(tmp_path, labels, chunk, message):
    folder, _, _ = _cifar_folder(tmp_path, (0,), labels)
    if isinstance(chunk, bytes):
        (folder / "cifar10_batch_0.png").write_bytes(chunk)
    elif chunk is not None:
        Image.fromarray(chunk).save(folder / "cifar10_batch_0.png")
    with pytest.raises(DatasetError) as caught:
        load_cifar10("train", tmp_path, limit=2)
    assert message in str(caught.value) and str(folder) in str(caught.value)


def test_mnist_files_that_disagree_with_their_headers_or_each_other_are_refused(tmp_path):
    images = torch.arange(12).view(3, 2, 2)
    _mnist_folder(tmp_path, "train", images, torch.tensor([1, 2]))
    folder = tmp_path / "mnist" / "MNIST" / "raw"
    with pytest.raises(DatasetError, match=f"^{folder}: 3 images but 2 labels$"):
        load_mnist("train", tmp_path)
    header = bytes([0, 0, 8, 3]) + b"".join(side.to_bytes(4, "big") for side in (3, 2, 2))
    with gzip.open(folder / "train-images-idx3-ubyte.gz", "wb") as handle:
        handle.write(header + bytes(5))
    with pytest.raises(DatasetError, match=r"declares shape \(3, 2, 2\) \(12 bytes\) but holds 5$"):
        load_mnist("train", tmp_path)
    with gzip.open(folder / "train-images-idx3-ubyte.gz", "wb") as handle:
        handle.write(bytes([0, 0, 0x0D, 3]) + header[4:] + bytes(48))  # float32 pixels: not MNIST's bytes
    with pytest.raises(DatasetError, match="not an IDX file of unsigned bytes with 3 dimension"):
        load_mnist("train", tmp_path)
    with pytest.raises(ValueError, match="split must be 'train' or 'test', got 'val'"):
        load_mnist("val", tmp_path)
    _mnist_folder(tmp_path, "train", images, torch.tensor([1, 2, 3]))
    _mnist_folder(tmp_path, "test", images[:2], torch.tensor([4, 5]))
    train, tests = load_train_and_tests("mnist", train_limit=2, test_limit=1, data_dir=tmp_path)
    assert (
        train.labels.tolist() == [1, 2] and list(tests) == ["test"] and tests["test"].labels.tolist() == [4]
    )
