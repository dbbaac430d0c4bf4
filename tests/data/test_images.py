"""Image trees (folders and zips), the offline Omniglot and CLINC150 data, and the features command."""

import zipfile

import numpy as np
import pytest
import torch
from PIL import Image

from pdenets.data import DatasetError
from pdenets.data.images import load_image_tree, random_shift


def _image_folder(root, classes=("a", "b", "c"), per_class=6, size=20):
    rng = np.random.default_rng(0)
    for index, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = (rng.random((size, size)) * 50).astype(np.uint8)
            pixels[index * 5 : (index + 1) * 5] = 255
            Image.fromarray(pixels).save(root / name / f"{i}.png")
    return root


def test_folders_and_zips_read_the_same(tmp_path):
    folder = _image_folder(tmp_path / "imgs")
    archive = tmp_path / "imgs.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for path in sorted(folder.rglob("*.png")):
            handle.write(path, "imgs/" + path.relative_to(folder).as_posix())
    from_folder = load_image_tree(folder, size=16)
    from_zip = load_image_tree(archive, size=16)
    assert from_folder.class_names == from_zip.class_names == ("a", "b", "c")
    assert torch.equal(from_folder.images, from_zip.images) and torch.equal(
        from_folder.labels, from_zip.labels
    )
    assert from_folder.images.shape == (18, 1, 16, 16) and 0 <= float(from_folder.images.min())
    inverted = load_image_tree(folder, size=16, invert=True)
    assert torch.allclose(inverted.images, 1 - from_folder.images)
    assert load_image_tree(folder, size=16, classes=["b"]).class_names == ("b",)
    subset = from_folder.select(["c", "a"])
    assert (
        subset.class_names == ("c", "a") and subset.labels.tolist() == [1] * 6 + [0] * 6
    )  # a's images first
    assert torch.equal(subset.images[:6], from_folder.images[:6])


def test_bad_image_inputs(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(DatasetError, match="no images"):
        load_image_tree(tmp_path / "empty", size=8)
    (tmp_path / "bad" / "x").mkdir(parents=True)
    (tmp_path / "bad" / "x" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(DatasetError, match="broken.png: not a readable image"):
        load_image_tree(tmp_path / "bad", size=8)
    (tmp_path / "not.zip").write_bytes(b"hello")
    with pytest.raises(DatasetError, match="not a folder nor a readable .zip"):
        load_image_tree(tmp_path / "not.zip", size=8)


def test_random_shift_moves_content_within_bounds():
    images = torch.zeros(4, 1, 8, 8)
    images[:, :, 3, 3] = 1.0
    shifted = random_shift(images, 2, torch.Generator().manual_seed(0))
    assert shifted.shape == images.shape and torch.all(shifted.sum((1, 2, 3)) == 1.0)
    positions = [tuple(torch.nonzero(s[0])[0].tolist()) for s in shifted]
    assert all(1 <= r <= 5 and 1 <= c <= 5 for r, c in positions) and len(set(positions)) > 1
