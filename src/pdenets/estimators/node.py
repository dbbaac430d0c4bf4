"""Diff-ResNet (or a GNN baseline) on a user's graph, as an estimator: ``fit(graph, labels)``, ``predict``,
``predict_proba``, ``save``/``load`` (the node-classification task's models).

A thin scikit-learn face of the task's model (:mod:`pdenets.tasks.node_classification.model`). The graph is
read and preprocessed as ``pdenets run node-classification`` reads it (undirected, without
self-loops, its largest connected component, the features transformed by ``feature_transform``); the model is
the task's, with the task's default settings (``settings`` overrides them by name). The labelled nodes are
split in training and validation nodes (``val_fraction`` of each class, for early stopping); every node takes
part through the graph. A model kept by a run (``RUN_DIR/model-<name>``) loads here and one saved here answers
``pdenets predict``.

Predictions are for the nodes of the largest component, in the order of :meth:`node_ids` (the ids of the
user's file, else the node numbers); the nodes outside it are named by ``outside_ids_``.

Examples:
    >>> import torch
    >>> from torch_geometric.data import Data
    >>> from pdenets.estimators import DiffusionNodeClassifier
    >>> generator = torch.Generator().manual_seed(0)
    >>> blocks = torch.arange(60) // 30                                  # two communities of 30 nodes
    >>> pairs = torch.randint(0, 60, (2, 600), generator=generator)
    >>> inside = blocks[pairs[0]] == blocks[pairs[1]]
    >>> edges = torch.cat([pairs[:, inside], pairs[:, ~inside][:, :5]], 1)  # few edges across
    >>> x = torch.nn.functional.one_hot(blocks, 2).float() + torch.randn(60, 2, generator=generator)
    >>> labels = torch.where(torch.arange(60) % 6 == 0, blocks, -1)     # one node in six labelled
    >>> model = DiffusionNodeClassifier(max_epochs=100).fit(Data(x=x, edge_index=edges), labels)
    >>> float((torch.as_tensor(model.predict()) == blocks).float().mean())
    1.0
"""

from __future__ import annotations

import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..data.graphs import graph_data
from ..data.splits import held_out_split
from ..data.transforms import PreparedGraph, prepare_graph
from ..saved_model import estimator_from, labels_to_json, saved_classes
from ..tasks.node_classification.config import TABLE6, NodeClassificationConfig
from ..tasks.node_classification.decisions import NodeExplanation
from ..tasks.node_classification.model import NodeModel, NodeSettings, default_hyperparameters, fit_nodes

__all__ = ["DiffusionNodeClassifier"]

#: a graph as :meth:`DiffusionNodeClassifier.fit` takes it
GraphInput = Union[str, Path, Any]
#: the dropout at each diffusion step of the estimator's Diff-ResNet, on every graph (module docstring of
#: :class:`DiffusionNodeClassifier`, ``settings``)
HIDDEN_DROPOUT = 0.25

#: the task's defaults, but Diff-ResNet's block and diffusion in 64 features after a linear map of the input
#: (the paper diffuses the input's own width: a step then costs ``nnz · F``, minutes an epoch on wide
#: bag-of-words features; the hidden width keeps the accuracy on the citation graphs: benchmarks/peers.py),
#: and Table 6's dropout, tuned for the input's width, replaced by :data:`HIDDEN_DROPOUT`
_ESTIMATOR_DEFAULTS = NodeClassificationConfig(
    diffuse_in="hidden",
    diffusion_width=64,
    diffusion={name: replace(entry, dropout=HIDDEN_DROPOUT) for name, entry in TABLE6.items()},
)


class DiffusionNodeClassifier(BaseEstimator):
    """Semi-supervised node classification on one graph (transductive), by a model of the node-classification
    task.

    Args:
        model: ``"diff-resnet"`` (default) or another model of ``pdenets list models`` that classifies nodes
            (``gcn``, ``gat``, ``appnp``, …).
        settings: the model's settings by name, over the task's defaults (Diff-ResNet: ``step_size``,
            ``num_steps``, ``dropout``, ``lr``, ``weight_decay``, ``hidden_features``; a baseline:
            ``hidden_features``, ``heads``, ``dropout``, ``lr``, ``weight_decay``). Diff-ResNet's block and
            diffusion run in ``hidden_features = 64`` after a linear map of the input (``None``: the
            paper's input width, whose steps cost ``nnz · F`` each: on 3,703 bag-of-words features, more than
            a second an epoch). The dropout at each step is 0.25 on every graph (:data:`HIDDEN_DROPOUT`):
            Table 6's 0.35 for CiteSeer, tuned for the input's width, left the 64-wide fits unable to fit
            their own labels at 8 a class (56.1 % against 62.4 % at 0.25; 2 to 30 a class: 0.6 to 6.3
            points below; medians of 5 draws, ``benchmarks/active_learning.py --part fits``).
        val_fraction: the labelled nodes of each class kept for early stopping (default: 0.2; a class with
            one labelled node trains on it).
        min_val_per_class: where some class's ``val_fraction`` share comes to fewer nodes, no node is held
            out and every label trains, early stopping on the training loss (default: 4, i.e. every class
            with 18 labelled nodes and more at 0.2). Early stopping on two or three nodes a class stops at
            noise: on Cora and CiteSeer with 2 labels a class, training on every label is 7 to 8 points more
            accurate, with 8 a class 1 to 5 points, with 16 within 0.3 (medians of 5 draws,
            ``benchmarks/active_learning.py --part fits``; a fit takes up to twice as long). Where none is
            held out, ``calibrate`` has nothing to fit on and keeps the probabilities as trained, saying so.
        max_epochs: epochs at most (default: 1000).
        patience: epochs without improvement before training stops (default: 50).
        feature_transform: how the features enter the model (``auto``, ``bag-of-words``, ``row-normalize``,
            ``scale``, ``standardize``, ``none``; default ``auto``: read from the features).
        missing_features: the features of a graph without any: ``"identity"`` or ``"degree"``.
        stop_on: what early stopping watches: ``"loss"`` (default: the validation loss) or
            ``"loss-or-accuracy"`` (the protocol's rule, whose ties of a few validation nodes' accuracy
            often keep it going to ``max_epochs``).
        random_state: the seed of the split and of the initialization (default: 0).
        progress: a bar of the epochs on stderr once a fit has taken two seconds (default: ``True``).
        calibrate: divide the logits by a temperature fitted on the held-out labelled nodes (those of
            ``val_fraction``), so that the probabilities are calibrated (:mod:`pdenets.analysis.calibration`;
            the predictions stay the same); default ``False``: as trained.

    A fit on a 3,312-node citation graph with 3,703 bag-of-words features takes a few seconds on one CPU
    core (``benchmarks/peers.py --part nodes``).

    Attributes:
        classes_: the class labels.
        graph_: the preprocessed graph it was fitted on.
        outside_ids_: the nodes of the graph given that lie outside its largest component (no prediction).
        model_: the fitted :class:`~pdenets.tasks.node_classification.model.NodeModel`.
        temperature_: the temperature of the probabilities (1: as trained).
    """

    def __init__(
        self,
        model: str = "diff-resnet",
        *,
        settings: Optional[Dict[str, Any]] = None,
        val_fraction: float = 0.2,
        min_val_per_class: int = 4,
        max_epochs: int = 1000,
        patience: int = 50,
        feature_transform: str = "auto",
        missing_features: str = "identity",
        stop_on: str = "loss",
        random_state: int = 0,
        progress: bool = True,
        calibrate: bool = False,
    ):
        self.model = model
        self.settings = settings
        self.val_fraction = val_fraction
        self.min_val_per_class = min_val_per_class
        self.max_epochs = max_epochs
        self.patience = patience
        self.feature_transform = feature_transform
        self.missing_features = missing_features
        self.stop_on = stop_on
        self.random_state = random_state
        self.progress = progress
        self.calibrate = calibrate

    def _hyperparameters(self, graph_name: str) -> Any:
        """The model's settings and optimizer: the task's defaults on ``graph_name``, ``settings`` over
        them."""
        defaults = default_hyperparameters(self.model, graph_name, _ESTIMATOR_DEFAULTS)
        given = {name: value for name, value in (self.settings or {}).items() if name != "kind"}
        unknown = sorted(set(given) - set(vars(defaults)))
        if unknown:
            raise ValueError(
                f"settings of {self.model}: unknown {', '.join(map(repr, unknown))}; known: "
                f"{', '.join(sorted(vars(defaults)))}"
            )
        return replace(defaults, **given)

    def _read(
        self, graph: GraphInput, labels: Optional[Sequence] = None, features: Optional[str] = None
    ) -> PreparedGraph:
        """``graph`` (a path or name, a PyG ``Data``, or ``(x, edge_index)``) preprocessed (``features``: the
        transform, default the estimator's), its labels replaced by ``labels`` (one per node as given: ``-1``
        or ``None`` where unknown) encoded as ``classes_``."""
        data = graph_data(graph, missing_features=self.missing_features)
        nodes = int(data.num_nodes)
        if labels is not None:
            data.y = torch.as_tensor(self._encode(labels, nodes))
            data.class_names = [str(name) for name in self.classes_]
        elif "y" not in data or data.y is None:
            data.y = torch.full(
                (nodes,), -1, dtype=torch.long, device=torch.as_tensor(data.edge_index).device
            )
        return prepare_graph(data, features or self.feature_transform)

    def _encode(self, labels: Sequence, nodes: int) -> np.ndarray:
        """``labels`` as class ids (``-1``: unknown), ``classes_`` set to the distinct known labels."""
        values = np.asarray(labels.cpu() if isinstance(labels, torch.Tensor) else labels)
        if values.shape != (nodes,):
            raise ValueError(f"labels must hold one label per node ({nodes}), got shape {values.shape}")
        if values.dtype.kind in "iu":
            unknown = values == -1
        elif values.dtype.kind == "f":
            unknown = np.isnan(values) | (values == -1)
        else:
            unknown = np.asarray([value is None or str(value) in ("-1", "") for value in values])
            values = np.asarray([str(value) for value in values])
        if unknown.all():
            raise ValueError("every label is unknown (-1 or None): label at least one node of each class")
        self.classes_, encoded = np.unique(values[~unknown], return_inverse=True)
        codes = np.full(nodes, -1, dtype=np.int64)
        codes[~unknown] = encoded
        return codes

    def fit(self, graph: GraphInput, labels: Optional[Sequence] = None) -> "DiffusionNodeClassifier":
        """Train on ``graph``'s labelled nodes; ``labels`` (one per node of the graph as given, ``-1`` or
        ``None`` where unknown) replace the graph's own."""
        name = str(graph) if isinstance(graph, (str, Path)) else "graph"
        hyperparameters = self._hyperparameters(name)
        prepared = self._read(graph, labels)
        settings = NodeSettings(
            self.model,
            hyperparameters,
            None,
            self.max_epochs,
            self.patience,
            self.missing_features,
            prepared.feature_transform,
            self.stop_on,
        )
        if labels is None:
            self.classes_ = np.asarray(prepared.class_names, dtype=str)
        else:  # every class given, also one whose nodes all lie outside the largest component
            prepared = replace(
                prepared, num_classes=len(self.classes_), class_names=tuple(map(str, self.classes_))
            )
        if int((prepared.y >= 0).sum()) == 0:
            raise ValueError("no node of the largest component has a label")
        minimum = self.min_val_per_class
        if isinstance(minimum, bool) or not isinstance(minimum, (int, np.integer)) or minimum < 1:
            raise ValueError(f"min_val_per_class must be a whole number ≥ 1, got {minimum!r}")
        seed = int(self.random_state)
        split = held_out_split(prepared.y, self.val_fraction, seed, min_held_out=int(minimum))
        calibrate = bool(self.calibrate)
        if calibrate and split.val is split.train:
            why = (
                "val_fraction=0"
                if not self.val_fraction
                else f"a class has fewer than {minimum} to hold out at val_fraction={self.val_fraction}"
            )
            warnings.warn(
                f"calibrate: no labelled node is held out ({why}), so there is nothing to fit a temperature "
                "on: the probabilities are as trained",
                stacklevel=2,
            )
            calibrate = False
        self.model_ = fit_nodes(
            prepared,
            split,
            settings,
            init_seed=int(self.random_state),
            about={"classes": labels_to_json(self.classes_), "params": self.get_params()},
            progress=bool(self.progress),
            calibrate=calibrate,
        )
        self.temperature_ = self.model_.temperature
        self.graph_ = prepared
        self.outside_ids_ = prepared.outside_ids()
        return self

    def node_ids(self, graph: Optional[GraphInput] = None) -> List[str]:
        """The ids of the nodes :meth:`predict_proba` answers, in its order (``graph``: default the fitted
        one)."""
        if graph is None:
            return self.graph_.node_ids()
        return self._read(graph, features=self.model_.settings.feature_transform).node_ids()

    def predict_proba(self, graph: Optional[GraphInput] = None) -> np.ndarray:
        """``(N, C)`` class probabilities of the nodes of the largest component of ``graph`` (default: the
        fitted graph), in the order of :meth:`node_ids` and of ``classes_``."""
        check_is_fitted(self, "model_")
        if graph is None:
            return self.model_.predict_proba(None).double().numpy()
        prepared = self._read(graph, features=self.model_.settings.feature_transform)
        name = str(graph) if isinstance(graph, (str, Path)) else "graph"
        return self.model_.predict_proba(prepared, name).double().numpy()

    def predict(self, graph: Optional[GraphInput] = None) -> np.ndarray:
        """The class of each node of :meth:`node_ids` (the most probable one)."""
        probabilities = self.predict_proba(graph)
        return self.classes_[probabilities.argmax(1)]

    def _graph_of(self, graph: Optional[GraphInput]) -> Optional[PreparedGraph]:
        return None if graph is None else self._read(graph, features=self.model_.settings.feature_transform)

    def explain(
        self, ids: Sequence[object], top: int = 10, graph: Optional[GraphInput] = None
    ) -> List[NodeExplanation]:
        """Why each node of ``ids`` (ids of :meth:`node_ids`) gets its class: the nodes whose scores the
        diffusion carried to it, with their exact shares of its margin over the runner-up class (in log-odds
        of :meth:`predict_proba`; :func:`~pdenets.tasks.node_classification.decisions.explain_nodes`).

        Args:
            ids: the nodes to explain.
            top: the contributors named per node (the others add up in ``others``).
            graph: the graph they are in (default: the fitted one).

        Raises:
            ValueError: a GNN baseline (not a sum over nodes), an id not in the graph.
        """
        check_is_fitted(self, "model_")
        return self.model_.explain(ids, self._graph_of(graph), top)

    def suggest(
        self,
        budget: int,
        criterion: str = "typical",
        graph: Optional[GraphInput] = None,
        seed: Optional[int] = None,
        among: Optional[Sequence[object]] = None,
    ) -> np.ndarray:
        """The ids of the ``budget`` nodes without a label to label next, best first
        (:mod:`pdenets.analysis.label_selection`).

        Args:
            budget: ``B``, at most the nodes without a label.
            criterion: ``"typical"`` (default: the most typical node of each of the largest clusters of
                the model's representation that no label speaks for yet), ``"coverage"`` (greedy, the
                uncertainty a label would reach through the model's diffusion, spread over the graph),
                ``"uncertainty"`` (smallest margin between the two most probable classes) or ``"random"``.
            graph: the graph, its nodes of unknown label the candidates (default: the fitted one).
            seed: ``random``: the draw's seed; ``typical``: its k-means' (default: ``random_state``).
            among: the ids of :meth:`node_ids` that may be chosen (default: every node without a label).
        """
        check_is_fitted(self, "model_")
        draw = int(self.random_state if seed is None else seed)
        chosen = self.model_.suggest_labels(budget, self._graph_of(graph), criterion, draw, among)
        return np.asarray([suggestion.id for suggestion in chosen], dtype=object)

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the fitted model in ``folder`` (the files of a run's ``model-<name>/``)."""
        check_is_fitted(self, "model_")
        return self.model_.save(folder)

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "DiffusionNodeClassifier":
        """A model kept by :meth:`save` or by a node-classification run, checked; ``predict`` then needs a
        graph.

        Raises:
            SavedModelError: an altered, truncated or foreign model, naming the file.
        """
        model = NodeModel.load(folder)
        where = Path(folder) / "model.json"
        params = model.about.get("params")
        settings = model.settings
        if not isinstance(params, dict):  # a run's model
            params = {
                "model": settings.model,
                "max_epochs": settings.max_epochs,
                "patience": settings.patience,
                "feature_transform": settings.feature_transform,
                "missing_features": settings.missing_features,
                "random_state": model.about.get("seed", 0),
                "calibrate": model.temperature != 1.0,
            }
        estimator = estimator_from(cls, params, where)
        estimator.classes_, estimator.model_ = saved_classes(model.about, model.class_names, where), model
        estimator.temperature_ = model.temperature
        return estimator
