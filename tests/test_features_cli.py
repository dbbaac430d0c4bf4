"""Image trees (folders and zips), the offline Omniglot and CLINC150 data, and the features command."""

import json

import numpy as np
from PIL import Image

from pdenets.cli import main
from pdenets.data.fewshot import load_features


def _image_folder(root, classes=("a", "b", "c"), per_class=6, size=20):
    rng = np.random.default_rng(0)
    for index, name in enumerate(classes):
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            pixels = (rng.random((size, size)) * 50).astype(np.uint8)
            pixels[index * 5 : (index + 1) * 5] = 255
            Image.fromarray(pixels).save(root / name / f"{i}.png")
    return root


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
