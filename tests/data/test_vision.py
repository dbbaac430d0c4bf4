"""MNIST and CIFAR-10 readers (offline files), the augmentation, and the two-digit canvases."""

import gzip

import pytest
import torch
from datafiles import MNIST, cifar10, requires_data

from pdenets.data import DatasetError
from pdenets.data.vision import load_cifar10, load_mnist, pad_crop_flip


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
