"""Image trees (folders and zips), the offline Omniglot and CLINC150 data, and the features command."""

import json

import numpy as np
from datafiles import CLINC150, requires_data

from pdenets.data.paths import resolve_data_dir

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
