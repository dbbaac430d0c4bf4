"""A scikit-learn estimator for transductive few-shot classification of any embeddings.

Example:
    >>> import numpy as np
    >>> from pdenets.models.fewshot import DiffusionFewShotClassifier
    >>> rng = np.random.default_rng(0)
    >>> centres = rng.normal(size=(3, 16)) * 4
    >>> X_support = centres + rng.normal(size=(3, 16))            # one example per class
    >>> y_support = np.array(["cat", "dog", "fox"])
    >>> X_query = np.repeat(centres, 10, axis=0) + rng.normal(size=(30, 16))
    >>> clf = DiffusionFewShotClassifier(num_steps=5, epochs=50).fit(X_support, y_support)
    >>> predictions = clf.predict(X_query)
    >>> float((predictions == np.repeat(y_support, 10)).mean())
    1.0
    >>> clf.predict_proba(X_query).shape
    (30, 3)
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .methods import FewShotSettings, classify

__all__ = ["DiffusionFewShotClassifier"]


class DiffusionFewShotClassifier(ClassifierMixin, BaseEstimator):
    """Transductive few-shot classifier: ``fit`` stores the labelled support set; ``predict(X_query)``
    solves the task on support ∪ query (the queries shape the graph), so calling it with other
    queries solves another task.

    Args:
        method: ``"internal"`` (Diff-ResNet head, default), ``"external"``, ``"convection"``,
            ``"diffusion"`` (LaplacianShot) or ``"prototype"``.
        n_top: graph entries per point, self included (the paper's 8 keeps 7).
        sigma_neighbor: adaptive kernel width = distance to this entry of the list.
        step_size: ``γ``; num_steps: ``r`` diffusion layers.
        mu: weight of the external Laplacian regularizer; alpha: of the prototypical loss.
        epochs, lr, momentum, weight_decay: SGD on each task.
        centre_and_normalize: subtract ``base_mean`` (if given) and L2-normalize.
        shift: cross-domain shift of the queries; rectify: rectified prototypes.
        base_mean: ``(M,)`` mean of the base-class features, for centering.
        random_state: seed of the head's initialization.
    """

    def __init__(self, method: str = "internal", *, n_top: int = 7, sigma_neighbor: int = 4, step_size: float = 0.5,
                 num_steps: int = 10, mu: float = 0.01, alpha: float = 0.0, lam: float = 0.5, epochs: int = 100,
                 lr: float = 0.1, momentum: float = 0.9, weight_decay: float = 1e-4,
                 centre_and_normalize: bool = False, shift: bool = False, rectify: bool = False,
                 base_mean: Optional[np.ndarray] = None, random_state: int = 0):
        self.method = method
        self.n_top = n_top
        self.sigma_neighbor = sigma_neighbor
        self.step_size = step_size
        self.num_steps = num_steps
        self.mu = mu
        self.alpha = alpha
        self.lam = lam
        self.epochs = epochs
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay
        self.centre_and_normalize = centre_and_normalize
        self.shift = shift
        self.rectify = rectify
        self.base_mean = base_mean
        self.random_state = random_state

    def _settings(self) -> FewShotSettings:
        return FewShotSettings(method=self.method, centre=self.centre_and_normalize and self.base_mean is not None,
                               normalize=self.centre_and_normalize, shift=self.shift, rectify=self.rectify,
                               n_top=self.n_top, sigma_neighbor=self.sigma_neighbor, step_size=self.step_size,
                               num_steps=self.num_steps, lam=self.lam, mu=self.mu, alpha=self.alpha,
                               epochs=self.epochs, lr=self.lr, momentum=self.momentum,
                               weight_decay=self.weight_decay)

    def fit(self, X, y) -> "DiffusionFewShotClassifier":
        """Store the labelled support set (features ``(S, M)``, labels of any type)."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self._settings()  # refuse an unknown method now
        self.classes_, encoded = np.unique(y, return_inverse=True)
        self.support_ = X
        self.support_labels_ = encoded
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(Q, C)`` of the queries, in the order of ``classes_``."""
        check_is_fitted(self, "support_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if len(self.classes_) == 1:
            return np.ones((X.shape[0], 1))
        support = torch.from_numpy(self.support_)[None]
        query = torch.from_numpy(X)[None]
        labels = torch.from_numpy(self.support_labels_.astype(np.int64))[None]
        mean = None if self.base_mean is None else torch.as_tensor(np.asarray(self.base_mean, dtype=np.float64))
        settings = self._settings()
        if settings.method in ("internal", "external") and support.shape[1] + query.shape[1] <= settings.n_top:
            settings = FewShotSettings(**{**settings.__dict__, "n_top": support.shape[1] + query.shape[1],
                                          "sigma_neighbor": min(settings.sigma_neighbor,
                                                                support.shape[1] + query.shape[1])})
        probabilities = classify(support, labels, query, len(self.classes_), settings, base_mean=mean,
                                 seeds=[self.random_state])
        return probabilities[0].numpy()

    def predict(self, X) -> np.ndarray:
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(1)]

    def _more_tags(self):  # scikit-learn < 1.6
        return {"requires_y": True, "poor_score": True}

    def __sklearn_tags__(self):  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags
