"""Labelled image trees from folders and zips: decoding against an independent bilinear reference, classes
found in several sources, archive roots, the memory budget, and the random-shift augmentation."""

import io
import zipfile

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from pdenets.data import DatasetError, DatasetNotFoundError
from pdenets.data.images import decode_image, load_image_tree, random_shift


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


def _png(pixels):
    stream = io.BytesIO()
    Image.fromarray(pixels).save(stream, format="PNG")
    return stream.getvalue()


def test_decode_image_scales_resizes_bilinearly_and_orders_channels_first():
    pixels = np.random.default_rng(0).integers(0, 256, (3, 3)).astype(np.uint8)
    assert torch.equal(decode_image(_png(pixels), size=3), torch.from_numpy(pixels / np.float32(255))[None])
    reference = torch.from_numpy(pixels / 255.0)[None, None]
    for size, antialias in ((7, False), (2, True)):  # up: plain bilinear; down: bilinear with PIL's filter
        expected = F.interpolate(reference, size=(size, size), mode="bilinear", antialias=antialias)[0]
        decoded = decode_image(_png(pixels), size=size)
        assert decoded.shape == (1, size, size)
        assert torch.allclose(decoded.double(), expected, atol=1 / 255), size  # one grey level of rounding
    rgb = np.array([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [1, 2, 3]]], dtype=np.uint8)
    colour = decode_image(_png(rgb), size=2, channels=3)
    assert torch.equal(colour * 255, torch.from_numpy(rgb.transpose(2, 0, 1).astype(np.float32)))
    grey = decode_image(_png(rgb), size=2, invert=True)  # luma 0.299 R + 0.587 G + 0.114 B, then 1 - x
    luma = np.array([[0.299 * 255, 0.587 * 255], [0.114 * 255, 0.299 + 0.587 * 2 + 0.114 * 3]]) / 255
    assert torch.allclose(grey[0].double(), torch.from_numpy(1 - luma), atol=1 / 255)
    with pytest.raises(DatasetError, match="^a/b.png: not a readable image"):
        decode_image(b"GIF89a broken", size=2, name="a/b.png")


def _zip(path, members):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_a_class_in_several_archives_is_read_once_from_the_first(tmp_path):
    dark, light = _png(np.full((4, 4), 10, np.uint8)), _png(np.full((4, 4), 250, np.uint8))
    first = _zip(tmp_path / "one.zip", {f"top/Greek/c1/{i}.png": dark for i in range(2)})
    second = _zip(
        tmp_path / "two.zip",
        {
            **{f"top/Greek/c1/{i}.png": light for i in range(3)},
            "top/Tagalog/c1/0.PNG": light,
            "top/x.txt": b"x",
        },
    )
    images = load_image_tree([first, second], size=4)
    assert images.class_names == ("Greek/c1", "Tagalog/c1") and images.labels.tolist() == [0, 0, 1]
    assert torch.allclose(images.images[:2], torch.full((2, 1, 4, 4), 10 / 255))  # the first archive's
    reversed_order = load_image_tree([second, first], size=4)
    assert reversed_order.labels.tolist() == [0, 0, 0, 1] and float(reversed_order.images[0].max()) > 0.9
    with pytest.raises(DatasetError, match=r"no images .* for classes \['Gre'\]"):
        load_image_tree([first, second], size=4, classes=["Gre"])  # a prefix is a whole folder name
    assert load_image_tree([first, second], size=4, classes=["Tagalog"]).class_names == ("Tagalog/c1",)


def test_the_root_folder_of_an_archive_and_a_missing_source(tmp_path):
    pixel = _png(np.zeros((2, 2), np.uint8))
    archive = _zip(tmp_path / "two-tops.zip", {"train/a/0.png": pixel, "extra/b/0.png": pixel})
    assert load_image_tree(archive, size=2).class_names == ("extra/b", "train/a")  # no single top folder
    assert load_image_tree(archive, size=2, root_in_zip="train").class_names == ("a",)
    with pytest.raises(DatasetNotFoundError, match="missing image folder or archive .*nowhere.zip"):
        load_image_tree([archive, tmp_path / "nowhere.zip"], size=2)


def test_the_image_count_is_checked_against_the_budget_and_select_names_unknown_classes(
    tmp_path, monkeypatch
):
    folder = _image_folder(tmp_path / "imgs", per_class=2, size=4)
    monkeypatch.setenv("PDENETS_MEMORY_BUDGET", str(6 * 3 * 8 * 8 * 4))  # 6 RGB images of 8 x 8, float32
    assert load_image_tree(folder, size=8, channels=3).images.shape == (6, 3, 8, 8)
    with pytest.raises(DatasetError, match="6 images of 9x9 would need"):
        load_image_tree(folder, size=9, channels=3)
    monkeypatch.delenv("PDENETS_MEMORY_BUDGET")
    images = load_image_tree(folder, size=4)
    with pytest.raises(ValueError, match=r"classes \['d'\] are not in"):
        images.select(["a", "d"])
    assert random_shift(images.images, 0, torch.Generator()) is images.images
