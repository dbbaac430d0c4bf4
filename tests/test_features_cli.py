"""``pdenets features``: a backbone trained and images embedded from a user's folders, the classes chosen,
and each request that cannot work refused in one line before anything is written."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

from pdenets.cli import main
from pdenets.data.fewshot import load_features
from pdenets.data.images import load_image_tree
from pdenets.features import save_backbone
from pdenets.models.backbones import BackboneTraining, Conv4, extract_features


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


@pytest.mark.parametrize(
    "argv, message",
    [
        (
            ["train-backbone", "--dataset", "clinc150"],
            "--dataset 'clinc150' is a text dataset: use embed-text",
        ),
        (
            ["train-backbone", "--dataset", "CLINC150"],
            "--dataset 'CLINC150' is a text dataset: use embed-text",
        ),
        (["train-backbone", "--dataset", "omniglott"], "unknown few-shot dataset 'omniglott' (did you mean"),
        (["train-backbone", "--images", "x", "--epochs", "0"], "--epochs must be >= 1, got 0"),
        (["extract", "--backbone", "b.pt", "--dataset", "clinc150"], "is a text dataset: use embed-text"),
        (["embed-text", "--dataset", "omniglot"], "use train-backbone / extract"),
        (["embed-text", "--encoder", "tfidf"], "--encoder applies to FILE, not to --dataset"),
    ],
    ids=["text for images", "upper case", "unknown", "no epochs", "extract text", "embed images", "encoder"],
)
def test_a_request_that_cannot_work_is_refused_in_one_line_before_anything_is_written(
    tmp_path, capsys, argv, message
):
    out = tmp_path / ("out" if argv[0] == "train-backbone" else "out.npz")
    assert main(["features", *argv, "--out", str(out), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert message in error and error.count("\n") == 1, error
    assert not out.exists()


def test_extract_embeds_the_chosen_classes_at_the_backbones_size(tmp_path, capsys):
    folder = _image_folder(tmp_path / "imgs", per_class=3)
    torch.manual_seed(0)
    model = Conv4(1, 3, image_size=16)
    backbone = save_backbone(
        model,
        tmp_path / "bb.pt",
        classes=["a", "b", "c"],
        settings=BackboneTraining(),
        image_size=16,
        channels=1,
    )
    target = tmp_path / "f.npz"
    argv = ["features", "extract", "--backbone", str(backbone), "--images", str(folder), "--classes", "c, a"]
    assert main(argv + ["--out", str(target), "--no-progress"]) == 0
    assert capsys.readouterr().out == f"6 embeddings of 2 classes (64 dimensions) written to {target}\n"
    features = load_features(target)
    images = load_image_tree(folder, size=16, channels=1, classes=["c", "a"])  # 20-pixel files read at 16
    assert set(features.class_names) == {"a", "c"} and features.base_classes == ()
    assert features.class_names == images.class_names and torch.equal(features.labels, images.labels)
    torch.testing.assert_close(features.features, extract_features(model.eval(), images.images))


def test_embed_text_never_writes_over_the_texts_it_reads(tmp_path, capsys):
    texts = tmp_path / "texts.npz"  # a text file under a features file's name
    texts.write_text("text,label\nhello there,greeting\ngood bye,farewell\n")
    argv = ["features", "embed-text", str(texts), "--encoder", "tfidf", "--out", str(texts), "--overwrite"]
    assert main(argv) == 2
    assert "is FILE itself: a features file never replaces your texts" in capsys.readouterr().err
    assert texts.read_text().startswith("text,label\n")
