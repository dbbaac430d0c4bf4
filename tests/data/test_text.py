"""CLINC150 from its two JSON files: utterances and sorted intent ids, the base/val/novel split by domain, the
encoder's output checked, and files that are not CLINC150's."""

import json

import numpy as np
import pytest
import torch

from pdenets.data.errors import DatasetError, DatasetNotFoundError
from pdenets.data.text import (
    BASE_DOMAINS,
    NOVEL_DOMAINS,
    VAL_DOMAINS,
    clinc150_features,
    embed_texts,
    load_clinc150,
)

#: one or two intents per domain, named so that their sorted order is not the domains' order
INTENTS = {
    "banking": ["transfer", "balance"],
    "credit_cards": ["card_limit"],
    "kitchen_and_dining": ["recipe"],
    "home": ["lights"],
    "auto_and_commute": ["gas"],
    "travel": ["visa"],
    "utility": ["alarm"],
    "work": ["pto"],
    "small_talk": ["hello"],
    "meta": ["zzz_repeat"],
}


def _clinc(root, data=None, domains=None):
    folder = root / "clinc150"
    folder.mkdir(parents=True, exist_ok=True)
    if data is None:
        intents = [intent for names in INTENTS.values() for intent in names]
        data = {
            "train": [[f"train {intent}", intent] for intent in intents],
            "val": [["val visa", "visa"]],
            "test": [["test alarm", "alarm"], ["test pto", "pto"]],
            "oos_train": [["out of scope", "oos"]],
        }
    (folder / "data_full.json").write_text(data if isinstance(data, str) else json.dumps(data))
    (folder / "domains.json").write_text(json.dumps(INTENTS if domains is None else domains))
    return root


def test_utterances_come_in_file_order_with_ids_of_the_sorted_intents(tmp_path):
    texts, labels, names, domains = load_clinc150(_clinc(tmp_path))
    assert names == sorted(intent for group in INTENTS.values() for intent in group) and "oos" not in names
    assert texts[-3:] == ["val visa", "test alarm", "test pto"] and len(texts) == 11 + 3
    assert [names[label] for label in labels] == [text.split(" ", 1)[1] for text in texts]
    assert labels.tolist()[:2] == [names.index("transfer"), names.index("balance")] == [8, 1]
    assert domains == INTENTS


def test_the_classes_are_split_by_domain_and_the_encoder_sees_every_utterance(tmp_path):
    seen = []

    def encoder(batch):  # a stand-in: the text's length and its number of spaces, as float64 lists
        seen.append(list(batch))
        return [[float(len(text)), float(text.count(" "))] for text in batch]

    features = clinc150_features(_clinc(tmp_path), encoder=encoder)
    texts, labels, names, _ = load_clinc150(tmp_path)
    assert seen == [texts] and features.features.dtype == torch.float32
    assert features.features[:, 0].tolist() == [float(len(text)) for text in texts]
    assert torch.equal(features.labels, torch.from_numpy(labels)) and features.class_names == tuple(names)

    def ids(group):
        return tuple(sorted(names.index(intent) for domain in group for intent in INTENTS[domain]))

    assert features.base_classes == ids(BASE_DOMAINS) and len(features.base_classes) == 7
    assert features.val_classes == ids(VAL_DOMAINS) == (names.index("alarm"),)
    assert features.novel_classes == ids(NOVEL_DOMAINS) and len(features.novel_classes) == 3
    every = features.base_classes + features.val_classes + features.novel_classes
    assert sorted(every) == list(range(11))  # a partition of the intents


def test_an_encoder_that_returns_the_wrong_shape_is_refused():
    with pytest.raises(ValueError, match=r"^the encoder returned shape \(1, 4\) for 2 texts$"):
        embed_texts(["a", "b"], encoder=lambda batch: np.zeros((1, 4)))
    with pytest.raises(ValueError, match=r"^the encoder returned shape \(2,\) for 2 texts$"):
        embed_texts(["a", "b"], encoder=lambda batch: np.zeros(2))
    assert embed_texts([], encoder=lambda batch: np.zeros((0, 3))).shape == (0, 3)


@pytest.mark.parametrize(
    "data, domains, message",
    [
        ("{not json", None, "not the CLINC150 data_full.json/domains.json (JSONDecodeError"),
        ({"train": [], "test": []}, None, "(KeyError: 'val')"),
        ({"train": [["hi", "hello", "extra"]], "val": [], "test": []}, None, "(ValueError: too many values"),
        ({"train": 5, "val": [], "test": []}, None, "(TypeError:"),
    ],
    ids=["not JSON", "no val part", "a row of three", "a part that is no list"],
)
def test_files_that_are_not_clinc150_are_named(tmp_path, data, domains, message):
    root = _clinc(tmp_path, data, domains)
    with pytest.raises(DatasetError) as caught:
        load_clinc150(root)
    assert str(caught.value).startswith(f"{root / 'clinc150'}: ") and message in str(caught.value)


def test_missing_domains_and_missing_files(tmp_path):
    domains = {key: value for key, value in INTENTS.items() if key != "meta"}
    with pytest.raises(DatasetError, match=r"^domains.json lacks the domains \['meta'\]$"):
        clinc150_features(_clinc(tmp_path, domains=domains), encoder=lambda batch: np.zeros((len(batch), 2)))
    (tmp_path / "clinc150" / "domains.json").unlink()
    with pytest.raises(DatasetNotFoundError) as caught:
        load_clinc150(tmp_path)
    message = str(caught.value)
    assert "clinc150/domains.json" in message and "github.com/clinc/oos-eval" in message
    assert "never downloads" in message
