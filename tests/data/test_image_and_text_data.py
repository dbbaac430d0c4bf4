"""Image trees (folders and zips), the offline Omniglot and CLINC150 data, and the features command."""

import json
import zipfile

import numpy as np
import pytest
import torch
from datafiles import CLINC150, OMNIGLOT, OMNIGLOT_RUNS, requires_data
from PIL import Image

from pdenets.cli import main
from pdenets.data import DatasetError
from pdenets.data.fewshot import load_features
from pdenets.data.images import load_image_tree, random_shift
from pdenets.data.paths import resolve_data_dir

DATA = resolve_data_dir()


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


def test_features_commands_train_and_extract(tmp_path, capsys):
    folder = _image_folder(tmp_path / "imgs", per_class=8)
    out = tmp_path / "bb"
    assert (
        main(
            [
                "features",
                "train-backbone",
                "--images",
                str(folder),
                "--image-size",
                "16",
                "--epochs",
                "1",
                "--out",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    results = json.loads((out / "results.json").read_text())
    assert results["classes"] == 3 and results["embedding_dim"] == 64 and (out / "training.png").is_file()
    target = tmp_path / "f.npz"
    assert (
        main(
            [
                "features",
                "extract",
                "--backbone",
                str(out / "backbone.pt"),
                "--images",
                str(folder),
                "--base-images",
                str(folder),
                "--out",
                str(target),
                "--no-progress",
            ]
        )
        == 0
    )
    features = load_features(target)
    assert features.features.shape == (48, 64) and features.novel_classes == (3, 4, 5)
    assert (
        main(
            [
                "features",
                "extract",
                "--backbone",
                str(out / "backbone.pt"),
                "--images",
                str(folder),
                "--out",
                str(target),
                "--no-progress",
            ]
        )
        == 2
    )
    assert "exists; pass --overwrite" in capsys.readouterr().err
    assert main(["features", "train-backbone", "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    assert "give --dataset omniglot or --images PATH" in capsys.readouterr().err


@requires_data(*CLINC150)
def test_clinc150_features_with_a_stand_in_encoder():
    from pdenets.data.text import NOVEL_DOMAINS, clinc150_features

    def encoder(texts):  # a deterministic stand-in: character counts
        return np.array([[text.count(c) for c in "aeiou st"] for text in texts], dtype=np.float32)

    features = clinc150_features(encoder=encoder)
    assert features.features.shape == (22500, 8) and features.num_classes == 150
    assert (len(features.base_classes), len(features.val_classes), len(features.novel_classes)) == (
        90,
        15,
        45,
    )
    assert set(features.class_counts().values()) == {150}
    domains = json.loads((DATA / "clinc150" / "domains.json").read_text())
    novel_names = {features.class_names[c] for c in features.novel_classes}
    assert novel_names == {intent for d in NOVEL_DOMAINS for intent in domains[d]}


@requires_data(*OMNIGLOT, OMNIGLOT_RUNS)
def test_omniglot_offline_files():
    from pdenets.data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, load_one_shot_runs, omniglot_images

    novel = omniglot_images(NOVEL_ALPHABETS)
    assert len(novel.class_names) == 106 and len(novel) == 2120
    assert set(torch.bincount(novel.labels).tolist()) == {20}
    assert {name.split("/")[0] for name in novel.class_names} == set(NOVEL_ALPHABETS)
    base_names = set(omniglot_images(BASE_ALPHABETS).class_names)
    assert len(base_names) == 136 and not base_names & set(novel.class_names)
    runs = load_one_shot_runs()
    assert len(runs) == 20 and all(
        r.training.shape == (20, 1, 28, 28) and sorted(r.answers.tolist()) == list(range(20)) for r in runs
    )
