"""COIN on a table with few labels, as a scikit-learn classifier (the ``coin-tabular`` task's models).

A thin scikit-learn face of the task's model (:mod:`pdenets.tasks.coin_tabular.model`): ``fit(X, y)``
standardizes the columns, builds the Gaussian kNN graph of the rows and trains on the rows whose label is
known; a label ``-1`` (scikit-learn's semi-supervised convention) marks a row that takes part through the
graph without a label (``transduction_``: their answers). ``predict(X_new)`` answers each new row alone,
through its nearest training rows (COIN, label spreading) or by the MLP, as ``pdenets predict RUN_DIR``
does with a run's saved model; ``save``/``load`` are the model's, so a model kept by a run loads here and
one saved here answers ``pdenets predict``.

Examples:
    >>> import numpy as np
    >>> from pdenets.estimators import COINTabularClassifier
    >>> rng = np.random.default_rng(0)
    >>> centres = np.array([[0.0, 0.0], [4.0, 4.0]])
    >>> X = np.repeat(centres, 40, axis=0) + rng.normal(size=(80, 2))
    >>> y = np.repeat([0, 1], 40)
    >>> partial = np.where(rng.random(80) < 0.8, -1, y)          # 80 % of the labels unknown
    >>> model = COINTabularClassifier(epochs=100).fit(X, partial)
    >>> float((model.transduction_ == y).mean()) >= 0.95
    True
    >>> model.predict(centres).tolist()
    [0, 1]
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Dict, Union

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from ..saved_model import estimator_from, labels_to_json, saved_classes
from ..tasks.coin_tabular.model import (
    DEFAULT_EPOCHS,
    DEFAULT_STEP_SIZE,
    TabularModel,
    TabularSettings,
    fit_table,
)

if TYPE_CHECKING:  # scikit-learn >= 1.6
    from sklearn.utils import Tags

__all__ = ["COINTabularClassifier"]

#: the settings of the task's models, by the names of the estimator's parameters
_SETTINGS = (
    "hidden_features",
    "layers",
    "dropout",
    "epochs",
    "lr",
    "weight_decay",
    "n_top",
    "sigma_neighbor",
    "step_size",
    "num_steps",
    "spreading_alpha",
)


class COINTabularClassifier(ClassifierMixin, BaseEstimator):
    """COIN (an MLP, then ``num_steps`` diffusion steps ``X ← (I − γL)X`` on the rows' Gaussian kNN graph,
    then a linear classifier), the MLP alone, or label spreading, trained on the labelled rows of a table.

    Args:
        model: ``"coin"`` (default), ``"mlp"`` or ``"label-spreading"``.
        hidden_features: the MLP's width (default: 64).
        layers: the MLP's layers (default: 2).
        dropout: the MLP's dropout (default: 0.2).
        n_top: neighbours of the sample graph (default: 10; fewer where the table has fewer rows).
        sigma_neighbor: the Gaussian bandwidth is the distance to this neighbour (default: 5).
        step_size: ``γ`` of the diffusion (the graph's rows sum to one: stable up to 1; default: 0.25).
        num_steps: ``r``, the diffusion steps (default: 3).
        spreading_alpha: ``alpha`` of label spreading (default: 0.2).
        epochs: full-batch Adam epochs (default: 200; 100 with ``step_size=0.5`` take half
            the time, more accurate on some tables and less on others: benchmarks/README.md, *peers.py*).
        lr: Adam's learning rate (default: 0.01).
        weight_decay: Adam's weight decay (default: 5e-4).
        random_state: the seed of the network's initialization (default: 0).
        unlabelled: the label that marks a row without one (default: ``-1``, or ``"-1"`` among text labels;
            ``None``: every label is a class).

    Attributes:
        classes_: the class labels (``-1`` is never one).
        transduction_: the predicted label of every training row.
        label_distributions_: ``(n, C)`` the class probabilities of every training row.
        model_: the fitted :class:`~pdenets.tasks.coin_tabular.model.TabularModel`.
    """

    def __init__(
        self,
        model: str = "coin",
        *,
        hidden_features: int = 64,
        layers: int = 2,
        dropout: float = 0.2,
        n_top: int = 10,
        sigma_neighbor: int = 5,
        step_size: float = DEFAULT_STEP_SIZE,
        num_steps: int = 3,
        spreading_alpha: float = 0.2,
        epochs: int = DEFAULT_EPOCHS,
        lr: float = 0.01,
        weight_decay: float = 5e-4,
        random_state: int = 0,
        unlabelled: Union[int, str, None] = -1,
    ):
        self.model = model
        self.hidden_features = hidden_features
        self.layers = layers
        self.dropout = dropout
        self.n_top = n_top
        self.sigma_neighbor = sigma_neighbor
        self.step_size = step_size
        self.num_steps = num_steps
        self.spreading_alpha = spreading_alpha
        self.epochs = epochs
        self.lr = lr
        self.weight_decay = weight_decay
        self.random_state = random_state
        self.unlabelled = unlabelled

    def fit(self, X, y) -> "COINTabularClassifier":
        """Train on the rows of ``X`` ``(n, F)`` whose label in ``y`` is not ``-1``; every row shapes the
        graph."""
        X, y = validate_data(self, X, y, dtype=np.float64)
        if not np.isfinite(X).all():
            raise ValueError("X holds NaN or infinite values; fill or drop them first")
        check_classification_targets(y)
        known = ~_unlabelled(y, self.unlabelled)
        if not known.any():
            raise ValueError(
                f"every label is {self.unlabelled!r} (unlabelled): at least one row of each class needs its "
                "label"
            )
        if len(X) < 2:
            raise ValueError(f"{type(self).__name__} needs at least 2 rows, got 1 sample")
        settings = TabularSettings.of(
            self.model, **{name: getattr(self, name) for name in _SETTINGS}, rows=len(X)
        )
        self.classes_, encoded = np.unique(y[known], return_inverse=True)
        labels = np.full(len(y), -1, dtype=np.int64)
        labels[known] = encoded
        names = getattr(self, "feature_names_in_", None)
        self.model_ = fit_table(
            X,
            labels,
            np.flatnonzero(known),
            settings,
            class_names=[str(name) for name in self.classes_],
            feature_names=[str(name) for name in names]
            if names is not None
            else [f"x{column}" for column in range(X.shape[1])],
            seed=int(self.random_state),
            about={"classes": labels_to_json(self.classes_), "params": self.get_params()},
        )
        assert self.model_.probabilities is not None
        self.label_distributions_ = self.model_.probabilities
        self.transduction_ = self.classes_[self.label_distributions_.argmax(1)]
        return self

    def predict_proba(self, X) -> np.ndarray:
        """Class probabilities ``(m, C)`` of new rows, in the order of ``classes_``."""
        check_is_fitted(self, "model_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        if not np.isfinite(X).all():
            raise ValueError("X holds NaN or infinite values; fill or drop them first")
        return self.model_.predict_proba(X)

    def predict(self, X) -> np.ndarray:
        """The class of each new row (the most probable one)."""
        probabilities = self.predict_proba(X)
        return self.classes_[probabilities.argmax(1)]

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the fitted model in ``folder`` (the files of a run's ``model-<name>/``); returns the folder
        written (another model's folder is never replaced)."""
        check_is_fitted(self, "model_")
        return self.model_.save(folder)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "COINTabularClassifier":
        """A model kept by :meth:`save` or by a ``coin-tabular`` run (``RUN_DIR/model-<name>``), checked; it
        answers as the saved one did, bit for bit.

        Raises:
            SavedModelError: an altered, truncated or foreign model, naming the file.
        """
        model = TabularModel.load(folder)
        source = Path(folder) / "model.json"
        params = model.about.get("params")
        if not isinstance(params, dict):  # a run's model: its settings are the task's
            settings = model.settings.as_json()
            merged = {"model": model.settings.model}
            for part in settings.values():
                merged.update(part)
            params = {name: value for name, value in merged.items() if name in cls._get_param_names()}
        estimator = estimator_from(cls, params, source)
        estimator.classes_, estimator.model_ = saved_classes(model.about, model.class_names, source), model
        estimator.n_features_in_ = len(model.feature_names)
        names = list(model.feature_names)
        if names != [f"x{column}" for column in range(len(names))]:
            estimator.feature_names_in_ = np.asarray(names, dtype=object)
        return estimator

    def _more_tags(self) -> Dict[str, bool]:  # scikit-learn < 1.6
        return {"requires_y": True, "poor_score": True}

    def __sklearn_tags__(self) -> "Tags":  # scikit-learn >= 1.6
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags


def _unlabelled(y: np.ndarray, marker: Union[int, str, None]) -> np.ndarray:
    """The rows labelled ``marker`` (as a number or as text)."""
    if marker is None:
        return np.zeros(len(y), dtype=bool)
    if np.issubdtype(y.dtype, np.number):
        return y == marker
    return np.asarray([str(value) == str(marker) for value in y], dtype=bool)
