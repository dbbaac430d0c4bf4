"""A scikit-learn estimator for transductive few-shot classification of any embeddings.

Examples:
    >>> import numpy as np
    >>> from pdenets.models.fewshot import DiffusionFewShotClassifier
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(3, 16)) * 4
    >>> X_support = centres + rng.normal(size=(3, 16))            # one example per class
    >>> y_support = np.array(["cat", "dog", "fox"])
    >>> X_query = np.repeat(centres, 10, axis=0) + rng.normal(size=(30, 16))
    >>> clf = DiffusionFewShotClassifier().fit(X_support, y_support)     # the default ensemble
    >>> predictions = clf.predict(X_query)
    >>> float((predictions == np.repeat(y_support, 10)).mean())
    1.0
    >>> clf.predict_proba(X_query).shape
    (30, 3)

Kept and used again (:mod:`pdenets.saved_model`: safetensors and a checked manifest)::

    >>> import tempfile
    >>> folder = clf.save(tempfile.mkdtemp() + "/my-classifier")
    >>> again = DiffusionFewShotClassifier.load(folder)
    >>> bool((again.predict(X_query) == predictions).all())
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Dict, Optional, Tuple, Union

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ...saved_model import (
    SavedModelError,
    distinct_names,
    labels_from_json,
    labels_to_json,
    load_model,
    save_model,
)
from .adaptive import Adaptive
from .base import DEFAULT_METHOD, FewShotMethod, method_from_name
from .methods import Preprocessing, classify

if TYPE_CHECKING:  # scikit-learn >= 1.6
    from sklearn.utils import Tags

__all__ = ["DiffusionFewShotClassifier"]

#: the precision tasks are solved in
COMPUTE_DTYPE = torch.float32


class DiffusionFewShotClassifier(ClassifierMixin, BaseEstimator):
    """Transductive few-shot classifier: ``fit`` stores the labelled support set; ``predict(X_query)``
    solves the task on support ∪ query (the queries shape the graph), so calling it with other
    queries solves another task.

    Args:
        method: a registered method name (default :data:`~pdenets.models.fewshot.DEFAULT_METHOD`,
            ``"adaptive"``: PT-MAP, or TIM from 5 shots, where the queries pass a balance test, else
            ``"ensemble"``, LaplacianShot and the Diff-ResNet head averaged, which assume nothing about the
            class counts of the queries; ``"laplacianshot"``, LaplacianShot alone; ``"internal"``, the head
            alone; ``"prototype"``, ``"paddle"``, ``"bd-cspn"``, ``"pt-map"``, ``"tim"``, ...).
        method_params: the method's settings, e.g. ``{"lam": 0.5}`` for ``laplacianshot``
            (:class:`~pdenets.models.fewshot.LaplacianShotSettings`) or ``{"num_steps": 5}`` for ``internal``
            (:class:`~pdenets.models.fewshot.InternalSettings`); unknown names are refused.
        centre_and_normalize: subtract ``base_mean`` (if given) and L2-normalize.
        shift: cross-domain shift of the queries; rectify: rectified prototypes.
        base_mean: ``(M,)`` mean of the base-class features, for centering.
        random_state: seed of the trained heads' initialization.

    :meth:`answering_method` says which method answers a query set and, with ``"adaptive"``, the p-value of
    the balance test that chose it.
    """

    def __init__(
        self,
        method: str = DEFAULT_METHOD,
        *,
        method_params: Optional[dict] = None,
        centre_and_normalize: bool = False,
        shift: bool = False,
        rectify: bool = False,
        base_mean: Optional[np.ndarray] = None,
        random_state: int = 0,
    ):
        self.method = method
        self.method_params = method_params
        self.centre_and_normalize = centre_and_normalize
        self.shift = shift
        self.rectify = rectify
        self.base_mean = base_mean
        self.random_state = random_state

    def _method(self) -> FewShotMethod:
        params = dict(self.method_params or {})
        try:
            return method_from_name(self.method, **params)
        except TypeError as error:
            raise ValueError(f"method_params for {self.method!r}: {error}") from None

    def _preprocessing(self) -> Preprocessing:
        return Preprocessing(
            centre=self.centre_and_normalize and self.base_mean is not None,
            normalize=self.centre_and_normalize,
            shift=self.shift,
            rectify=self.rectify,
        )

    def fit(self, X, y) -> "DiffusionFewShotClassifier":
        """Store the labelled support set (features ``(S, M)``, labels of any type)."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self._method()  # refuse an unknown method or setting now
        if self.base_mean is not None:
            mean = np.asarray(self.base_mean, dtype=np.float64)
            if mean.shape != (X.shape[1],) or not np.isfinite(mean).all():
                raise ValueError(
                    f"base_mean must be {X.shape[1]} finite numbers (one per feature), got shape {mean.shape}"
                )
        self.classes_, encoded = np.unique(y, return_inverse=True)
        self.support_ = X
        self.support_labels_ = encoded
        return self

    def _solve(self, X, method: FewShotMethod) -> np.ndarray:
        """``method``'s probabilities ``(Q, C)`` for the queries ``X`` (validated) as one task, solved in
        float32 as the ``few-shot`` task solves its episodes (features come as embeddings, whose own precision
        is below float32's), returned in float64."""
        support = torch.from_numpy(self.support_).to(COMPUTE_DTYPE)[None]
        query = torch.from_numpy(X).to(COMPUTE_DTYPE)[None]
        labels = torch.from_numpy(self.support_labels_.astype(np.int64))[None]
        mean = (
            None
            if self.base_mean is None
            else torch.as_tensor(np.asarray(self.base_mean, dtype=np.float64)).to(COMPUTE_DTYPE)
        )
        probabilities = classify(
            support,
            labels,
            query,
            len(self.classes_),
            method,
            self._preprocessing(),
            base_mean=mean,
            seeds=[self.random_state],
        )
        answer = probabilities[0].double()
        return (answer / answer.sum(1, keepdim=True)).numpy()  # rows that sum to one in float64

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(Q, C)`` of the queries, in the order of ``classes_``."""
        check_is_fitted(self, "support_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if len(self.classes_) == 1:
            return np.ones((X.shape[0], 1))
        return self._solve(X, self._method())

    def answering_method(self, X) -> Tuple[str, Optional[float]]:
        """The registered name of the method that answers the queries ``X`` and, with ``"adaptive"``, the
        p-value of the balance test that chose it (``None`` with another method).

        With ``"adaptive"`` this runs its free method on ``X`` (what the answer costs without the balanced
        method); ``predict`` answers with ``"pt-map"`` or ``"tim"`` where the p-value is at least
        ``balance_level``.
        """
        check_is_fitted(self, "support_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        method = self._method()
        if not isinstance(method, Adaptive) or len(self.classes_) == 1:
            return method.name, None
        free = method.free_method()
        p_values, balanced = method.decide(torch.from_numpy(self._solve(X, free))[None])
        shots = len(self.support_labels_) / len(self.classes_)
        chosen = method.balanced_method(shots) if bool(balanced[0]) else free
        return chosen.name, float(p_values[0])

    def predict(self, X) -> np.ndarray:
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(1)]

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the fitted classifier in ``folder`` (:func:`~pdenets.saved_model.save_model`: the support set
        in safetensors, the method, its settings and the class names in ``model.json``); returns the folder
        written (another classifier's folder is never replaced: see ``save_model``)."""
        check_is_fitted(self, "support_")
        tensors = {
            "support": torch.from_numpy(self.support_),
            "support_labels": torch.from_numpy(self.support_labels_.astype(np.int64)),
        }
        if self.base_mean is not None:
            tensors["base_mean"] = torch.as_tensor(np.asarray(self.base_mean, dtype=np.float64))
        names = getattr(self, "feature_names_in_", None)
        manifest = {
            "params": {name: value for name, value in self.get_params().items() if name != "base_mean"},
            "classes": labels_to_json(self.classes_),
            "feature_names": None if names is None else [str(name) for name in names],
        }
        return save_model(folder, tensors, task="few-shot", model=self.method, manifest=manifest)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "DiffusionFewShotClassifier":
        """A classifier kept by :meth:`save`, checked (:func:`~pdenets.saved_model.load_model`).

        Raises:
            SavedModelError: the folder holds no such classifier, or an altered one (naming the file).
        """
        tensors, manifest = load_model(folder, task="few-shot")
        source = Path(folder) / "model.json"
        params, classes = manifest.get("params"), manifest.get("classes")
        support, labels = tensors.get("support"), tensors.get("support_labels")
        if not isinstance(params, dict) or not isinstance(classes, dict) or support is None or labels is None:
            raise SavedModelError(f"{source}: not a few-shot classifier's manifest")
        if support.ndim != 2 or labels.dtype != torch.int64 or labels.shape != (len(support),):
            raise SavedModelError(f"{source}: its support is not a table of rows with one label each")
        mean = tensors.get("base_mean")
        if mean is not None and tuple(mean.shape) != (support.shape[1],):
            raise SavedModelError(f"{source}: its base mean is not one value per feature")
        try:
            classifier = cls(**params, base_mean=None if mean is None else mean.numpy())
            classifier._method()
        except (TypeError, ValueError) as error:
            raise SavedModelError(f"{source}: {error}") from None
        classifier.classes_ = labels_from_json(classes, source)
        named = int(labels.max()) + 1 if labels.numel() else 0
        lowest = int(labels.min()) if labels.numel() else 0
        classes_given = classifier.classes_.tolist()
        if lowest < 0 or named > len(classes_given) or len(set(classes_given)) != len(classes_given):
            raise SavedModelError(f"{source}: {len(classes_given)} classes, its support labels name {named}")
        classifier.support_ = support.numpy()
        classifier.support_labels_ = labels.numpy()
        classifier.n_features_in_ = classifier.support_.shape[1]
        if manifest.get("feature_names") is not None:
            names = distinct_names(manifest["feature_names"], "feature_names", source, count=support.shape[1])
            classifier.feature_names_in_ = np.asarray(names, dtype=object)
        return classifier

    def _more_tags(self) -> Dict[str, bool]:  # scikit-learn < 1.6
        return {"requires_y": True, "poor_score": True}

    def __sklearn_tags__(self) -> Tags:  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
