"""scikit-learn style estimators of the papers' methods on a user's own data: ``fit``, ``predict``,
``predict_proba``, and ``save``/``load`` in the safe format of a run's saved models
(:mod:`pdenets.saved_model`), so that a model kept by a run loads here and one saved here answers
``pdenets predict``.

* :class:`COINTabularClassifier` — COIN on a table with few labels (``fit(X, y)``; ``-1``: label unknown);
* :class:`DiffusionNodeClassifier` — Diff-ResNet (or a GNN baseline) on a graph (``fit(graph, labels)``);
* :class:`COINForecaster` — a forecaster of a region series and COIN's diffusion of its forecasts
  (``fit(series)``, ``predict(horizon)``);
* :class:`~pdenets.models.fewshot.DiffusionFewShotClassifier` — transductive few-shot classification of
  embeddings (re-exported here).
"""

from ..models.fewshot.estimator import DiffusionFewShotClassifier
from .forecast import COINForecaster
from .node import DiffusionNodeClassifier
from .tabular import COINTabularClassifier

__all__ = ["COINTabularClassifier", "DiffusionNodeClassifier", "COINForecaster", "DiffusionFewShotClassifier"]
