"""The feature-extractor registry: the built-in image and text extractors, a new one registered under its
modality, and the refusal of an unknown modality or a name taken."""

import pytest

from pdenets._registry import isolated_registries
from pdenets.features.extractors import FEATURE_EXTRACTORS, MODALITIES, FeatureExtractor, register_extractor


def test_the_built_in_extractors_are_a_trained_conv4_for_images_and_the_shipped_minilm_for_text():
    assert MODALITIES == ("images", "text")
    conv4, minilm = FEATURE_EXTRACTORS["conv4"], FEATURE_EXTRACTORS["minilm"]
    assert (conv4.modality, conv4.trained_on_base, conv4.extra) == ("images", True, "")
    assert (minilm.modality, minilm.trained_on_base, minilm.extra) == ("text", False, "text")
    assert FEATURE_EXTRACTORS.description("minilm") == minilm.description  # what `pdenets list` prints
    assert FEATURE_EXTRACTORS.source("conv4") == "built-in"


def test_a_new_extractor_is_found_by_name_and_taken_back_with_its_registry():
    entry = FeatureExtractor("my-encoder", "an encoder of my own", "text", trained_on_base=False)
    with isolated_registries():
        assert register_extractor(entry, module="mine.encoders") is entry
        assert FEATURE_EXTRACTORS["my-encoder"] is entry and FEATURE_EXTRACTORS.source("my-encoder") == "mine"
        assert FEATURE_EXTRACTORS.names(order="name") == ["conv4", "minilm", "my-encoder"]
    assert "my-encoder" not in FEATURE_EXTRACTORS


@pytest.mark.parametrize(
    "entry, message",
    [
        (
            FeatureExtractor("audio-net", "sounds", "audio", False),
            "modality must be one of \\('images', 'text'\\), got 'audio'",
        ),
        (
            FeatureExtractor("conv4", "another Conv-4", "images", True),
            "a feature extractor named 'conv4' is already registered \\(by pdenets\\)",
        ),
    ],
    ids=["unknown modality", "name taken"],
)
def test_an_extractor_that_cannot_be_used_is_refused_and_the_registry_kept(entry, message):
    before = dict(FEATURE_EXTRACTORS)
    with isolated_registries():
        with pytest.raises(ValueError, match=message):
            register_extractor(entry, module="mine.encoders")
        assert dict(FEATURE_EXTRACTORS) == before and FEATURE_EXTRACTORS["conv4"].modality == "images"


def test_an_unknown_extractor_names_the_closest_one():
    with pytest.raises(
        KeyError, match="unknown feature extractor 'conv' \\(did you mean 'conv4'\\?\\); valid: "
    ):
        FEATURE_EXTRACTORS["conv"]
