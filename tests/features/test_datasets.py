"""The few-shot dataset registry: the built-in image and text datasets, what a registration must give for its
extractor's modality, and CLINC150's features built with a stand-in encoder."""

import json

import numpy as np
import pytest
from datafiles import CLINC150, requires_data

from pdenets._registry import isolated_registries
from pdenets.data.paths import resolve_data_dir
from pdenets.features.datasets import (
    FEWSHOT_DATASETS,
    IMAGE_SPLITS,
    FewShotDataset,
    register_fewshot_dataset,
)

DATA = resolve_data_dir()


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


def _features(data_dir, training, directory, progress):
    raise AssertionError("not built by these tests")


def _images(split, data_dir, size, progress):
    raise AssertionError("not read by these tests")


def _embed(data_dir, progress):
    raise AssertionError("not embedded by these tests")


def test_the_built_in_datasets_are_omniglot_images_and_clinc150_text():
    assert IMAGE_SPLITS == ("base", "novel")
    omniglot, clinc = FEWSHOT_DATASETS["omniglot"], FEWSHOT_DATASETS["clinc150"]
    assert (omniglot.extractor, omniglot.modality, omniglot.embed) == ("conv4", "images", None)
    assert callable(omniglot.images) and callable(omniglot.features)
    assert (clinc.extractor, clinc.modality, clinc.images) == ("minilm", "text", None)
    assert callable(clinc.embed)
    assert FEWSHOT_DATASETS.source("omniglot") == FEWSHOT_DATASETS.source("clinc150") == "built-in"
    with pytest.raises(
        KeyError, match="unknown few-shot dataset 'omniglott' \\(did you mean 'omniglot'\\?\\)"
    ):
        FEWSHOT_DATASETS["omniglott"]


def test_a_new_dataset_gives_the_raw_data_of_its_extractors_modality():
    with isolated_registries():
        text = register_fewshot_dataset(
            FewShotDataset("my-texts", "my intents", "minilm", _features, embed=_embed), module="mine.data"
        )
        images = register_fewshot_dataset(
            FewShotDataset("my-images", "my drawings", "conv4", _features, images=_images), module="mine.data"
        )
        assert FEWSHOT_DATASETS["my-texts"] is text and text.modality == "text"
        assert FEWSHOT_DATASETS["my-images"] is images and images.modality == "images"
        assert FEWSHOT_DATASETS.source("my-texts") == "mine"
    assert "my-texts" not in FEWSHOT_DATASETS and "my-images" not in FEWSHOT_DATASETS


@pytest.mark.parametrize(
    "entry, error, message",
    [
        (
            FewShotDataset("Mine", "d", "minilm", _features, embed=_embed),
            ValueError,
            "a few-shot dataset is named in lower case, got 'Mine'",
        ),
        (
            FewShotDataset("mine", "d", "minilm", _features, images=_images),
            ValueError,
            "few-shot dataset 'mine': an image dataset gives images=, a text dataset embed= "
            "\\(its extractor 'minilm' embeds text\\)",
        ),
        (
            FewShotDataset("mine", "d", "conv4", _features),
            ValueError,
            "its extractor 'conv4' embeds images",
        ),
        (
            FewShotDataset("mine", "d", "conv4", _features, images=_images, embed=_embed),
            ValueError,
            "an image dataset gives images=, a text dataset embed=",
        ),
        (
            FewShotDataset("mine", "d", "minilmm", _features, embed=_embed),
            KeyError,
            "unknown feature extractor 'minilmm' \\(did you mean 'minilm'\\?\\)",
        ),
        (
            FewShotDataset("omniglot", "d", "conv4", _features, images=_images),
            ValueError,
            "a few-shot dataset named 'omniglot' is already registered \\(by pdenets\\)",
        ),
    ],
    ids=["upper case", "text with images", "images without", "both", "unknown extractor", "name taken"],
)
def test_a_registration_that_cannot_work_is_refused_and_registers_nothing(entry, error, message):
    before = dict(FEWSHOT_DATASETS)
    with isolated_registries():
        with pytest.raises(error, match=message):
            register_fewshot_dataset(entry, module="mine.data")
        assert dict(FEWSHOT_DATASETS) == before
