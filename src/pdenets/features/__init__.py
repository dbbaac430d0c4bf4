"""Feature extraction: backbones trained on base classes embed images, an encoder embeds text.

The few-shot methods work on features files (:mod:`pdenets.data.fewshot`); this package builds them
from raw data (and caches them), so it sits above both the readers (:mod:`pdenets.data`) and the
networks (:mod:`pdenets.models`). ``pdenets features`` is its command line.
"""

from .embeddings import (
    FEATURES_ENV_VAR,
    cached_features,
    features_dir,
    image_features,
    load_backbone,
    official_runs_features,
    omniglot_features,
    save_backbone,
    train_image_backbone,
)

__all__ = [
    "features_dir",
    "cached_features",
    "omniglot_features",
    "official_runs_features",
    "image_features",
    "train_image_backbone",
    "save_backbone",
    "load_backbone",
    "FEATURES_ENV_VAR",
]
