"""The few-shot datasets built from raw data of the data folder (``pdenets list fewshot-datasets``).

A :class:`FewShotDataset` is a name ``pdenets run few-shot --dataset NAME`` and ``pdenets features ...
--dataset NAME`` take: how its features are built (once, then read from the features cache), which
extractor (:mod:`.extractors`) builds them, and its raw data where a command needs it (the images of its base
and novel classes, or its text embedded). Built in:

* ``omniglot`` — characters of the base alphabets train a Conv-4, which embeds the novel alphabets (and the
  base ones, for the centering mean); :func:`~pdenets.features.embeddings.omniglot_features`;
* ``clinc150`` — CLINC150 utterances embedded by the packaged MiniLM, classes split by domain
  (:func:`~pdenets.data.text.clinc150_features`; needs ``pdenets[text]``).

Any other ``--dataset`` is a features file (:func:`~pdenets.data.fewshot.load_features`). A new dataset is one
module of :mod:`pdenets.features` (or of a ``pdenets.fewshot_datasets`` plug-in) that registers one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Tuple, Union

from .._registry import Registry
from ..data.fewshot import FeatureSet
from ..data.images import ImageSet
from ..models.backbones import BackboneTraining
from .embeddings import cached_features, omniglot_features
from .extractors import FEATURE_EXTRACTORS

__all__ = ["FewShotDataset", "FEWSHOT_DATASETS", "register_fewshot_dataset", "IMAGE_SPLITS"]

#: the class splits an image dataset gives as images
IMAGE_SPLITS = ("base", "novel")

#: ``(data_dir, training, directory, progress) → (path, features)``: the features, built once and cached
Build = Callable[[Any, BackboneTraining, Optional[Union[str, Path]], bool], Tuple[Path, FeatureSet]]


@dataclass(frozen=True)
class FewShotDataset:
    """A few-shot dataset built from raw data.

    Args:
        name: the name ``--dataset`` takes (lower case).
        description: one line: the data, its class split, its extractor.
        extractor: the :data:`~.extractors.FEATURE_EXTRACTORS` entry that embeds it.
        features: :data:`Build`: its features file, built once and cached (the few-shot task's input).
        images: ``(split, data_dir, size, progress) → ImageSet`` for an image dataset: its ``"base"`` or
            ``"novel"`` classes (``pdenets features train-backbone`` / ``extract``); ``None`` otherwise.
        embed: ``(data_dir, progress) → FeatureSet`` for a text dataset: every text embedded (``pdenets
            features embed-text``); ``None`` otherwise.
    """

    name: str
    description: str
    extractor: str
    features: Build
    images: Optional[Callable[[str, Any, int, bool], ImageSet]] = None
    embed: Optional[Callable[[Any, bool], FeatureSet]] = None

    @property
    def modality(self) -> str:
        """``"images"`` or ``"text"``: what its extractor embeds."""
        return FEATURE_EXTRACTORS[self.extractor].modality


#: The few-shot dataset registry, name → :class:`FewShotDataset`: every module of :mod:`pdenets.features` and
#: the ``pdenets.fewshot_datasets`` entry points of other packages.
FEWSHOT_DATASETS: Registry[FewShotDataset] = Registry(
    "fewshot-datasets",
    kind="few-shot dataset",
    package=__package__,
    describe=lambda entry: entry.description,
)


def register_fewshot_dataset(entry: FewShotDataset, *, module: str) -> FewShotDataset:
    """Make a dataset known to ``pdenets run few-shot --dataset`` and ``pdenets features``.

    Args:
        entry: the dataset; its extractor must be registered.
        module: the module that defines it (its source in listings).

    Raises:
        UnknownNameError: the extractor is not registered.
        ValueError: the name is taken or not lower case, or the raw data do not match the modality.
    """
    if entry.name != entry.name.lower():
        raise ValueError(f"a few-shot dataset is named in lower case, got {entry.name!r}")
    modality = FEATURE_EXTRACTORS[entry.extractor].modality
    gives_images, gives_text = entry.images is not None, entry.embed is not None
    if gives_images != (modality == "images") or gives_text != (modality == "text"):
        raise ValueError(
            f"few-shot dataset {entry.name!r}: an image dataset gives images=, a text dataset embed= "
            f"(its extractor {entry.extractor!r} embeds {modality})"
        )
    return FEWSHOT_DATASETS.register(entry.name, entry, module=module)


def _omniglot_features(
    data_dir: Any, training: BackboneTraining, directory: Optional[Union[str, Path]], progress: bool
) -> Tuple[Path, FeatureSet]:
    return omniglot_features(data_dir, training, directory=directory, progress=progress)


def _omniglot_images(split: str, data_dir: Any, size: int, progress: bool) -> ImageSet:
    from ..data.omniglot import BASE_ALPHABETS, NOVEL_ALPHABETS, omniglot_images

    alphabets = BASE_ALPHABETS if split == "base" else NOVEL_ALPHABETS
    return omniglot_images(alphabets, data_dir, size=size, progress=progress)


def _clinc150_features(
    data_dir: Any, training: BackboneTraining, directory: Optional[Union[str, Path]], progress: bool
) -> Tuple[Path, FeatureSet]:
    from ..data.text import clinc150_features

    def build() -> FeatureSet:
        return clinc150_features(data_dir)

    return cached_features("clinc150-minilm", build, directory, progress=progress)


def _clinc150_embed(data_dir: Any, progress: bool) -> FeatureSet:
    from ..data.text import clinc150_features

    return clinc150_features(data_dir, progress=progress)


register_fewshot_dataset(
    FewShotDataset(
        "omniglot",
        "Omniglot characters (Lake et al. 2015): a Conv-4 trained on 5 base alphabets embeds 3 novel ones",
        "conv4",
        _omniglot_features,
        images=_omniglot_images,
    ),
    module=__name__,
)
register_fewshot_dataset(
    FewShotDataset(
        "clinc150",
        "CLINC150 intents (Larson et al. 2019): utterances embedded by MiniLM, classes split by domain",
        "minilm",
        _clinc150_features,
        embed=_clinc150_embed,
    ),
    module=__name__,
)
