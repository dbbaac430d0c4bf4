"""Diff-ResNet (or a GNN baseline) on a user's graph, as an estimator: ``fit(graph, labels)``, ``predict``,
``predict_proba``, ``save``/``load`` (the node-classification task's models).

The graph is read and preprocessed as ``pdenets run node-classification`` reads it (undirected, without
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

from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np
import torch
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ..data.graphs import load_graph
from ..data.splits import Split
from ..data.transforms import FEATURE_TRANSFORMS, PreparedGraph, prepare_graph
from ..models.node_training import fit_node_classifier
from ..models.registry import model_entry
from ..saved_model import SavedModelError, labels_from_json, labels_to_json
from ..tasks.node_classification.config import MODEL_NAMES, NodeClassificationConfig
from ..tasks.node_classification.job import NodeJob, build_model, model_inputs
from ..tasks.node_classification.saved import load_node_model, node_probabilities, save_node_model
from ..tasks.node_classification.task import NodeClassificationTask

__all__ = ["DiffusionNodeClassifier"]

#: a graph as :meth:`DiffusionNodeClassifier.fit` takes it
GraphInput = Union[str, Path, Any]


class DiffusionNodeClassifier(BaseEstimator):
    """Semi-supervised node classification on one graph (transductive), by a model of the node-classification
    task.

    Args:
        model: ``"diff-resnet"`` (default) or another model of ``pdenets list models`` that classifies nodes
            (``gcn``, ``gat``, ``appnp``, …).
        settings: the model's settings by name, over the task's defaults (Diff-ResNet: ``step_size``,
            ``num_steps``, ``dropout``, ``lr``, ``weight_decay``, ``hidden_features``; a baseline:
            ``hidden_features``, ``heads``, ``dropout``, ``lr``, ``weight_decay``).
        val_fraction: the labelled nodes of each class kept for early stopping (default: 0.2; a class with
            one labelled node trains on it).
        max_epochs: epochs at most (default: 1000).
        patience: epochs without improvement before training stops (default: 50).
        feature_transform: how the features enter the model (``auto``, ``bag-of-words``, ``row-normalize``,
            ``scale``, ``standardize``, ``none``; default ``auto``: read from the features).
        missing_features: the features of a graph without any: ``"identity"`` or ``"degree"``.
        random_state: the seed of the split and of the initialization (default: 0).

    Attributes:
        classes_: the class labels.
        graph_: the preprocessed graph it was fitted on.
        outside_ids_: the nodes of the graph given that lie outside its largest component (no prediction).
    """

    def __init__(
        self,
        model: str = "diff-resnet",
        *,
        settings: Optional[Dict[str, Any]] = None,
        val_fraction: float = 0.2,
        max_epochs: int = 1000,
        patience: int = 50,
        feature_transform: str = "auto",
        missing_features: str = "identity",
        random_state: int = 0,
    ):
        self.model = model
        self.settings = settings
        self.val_fraction = val_fraction
        self.max_epochs = max_epochs
        self.patience = patience
        self.feature_transform = feature_transform
        self.missing_features = missing_features
        self.random_state = random_state

    def _job(self, graph_name: str) -> NodeJob:
        if self.model not in MODEL_NAMES:
            raise ValueError(f"model must be one of {', '.join(MODEL_NAMES)}, got {self.model!r}")
        if self.feature_transform not in FEATURE_TRANSFORMS:
            raise ValueError(
                f"feature_transform must be one of {', '.join(FEATURE_TRANSFORMS)}, "
                f"got {self.feature_transform!r}"
            )
        if not 0 <= self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in [0, 1), got {self.val_fraction!r}")
        for name in ("max_epochs", "patience"):
            if not isinstance(getattr(self, name), (int, np.integer)) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive integer, got {getattr(self, name)!r}")
        defaults = NodeClassificationTask(NodeClassificationConfig()).hyperparameters(self.model, graph_name)
        given = dict(self.settings or {})
        unknown = sorted(set(given) - set(vars(defaults)) - {"kind"})
        if unknown:
            raise ValueError(
                f"settings of {self.model}: unknown {', '.join(map(repr, unknown))}; known: "
                f"{', '.join(sorted(vars(defaults)))}"
            )
        return NodeJob(
            experiment="protocol",
            graph=graph_name,
            dataset=graph_name,
            model=self.model,
            depth=None,
            split=0,
            init=0,
            seed=int(self.random_state),
            train_per_class=0,
            val_per_class=0,
            max_epochs=int(self.max_epochs),
            patience=int(self.patience),
            hyperparameters=replace(defaults, **given),
            missing_features=self.missing_features,
            feature_transform=self.feature_transform,
        )

    def _read(
        self, graph: GraphInput, labels: Optional[Sequence] = None, features: Optional[str] = None
    ) -> PreparedGraph:
        """``graph`` (a path or name, a PyG ``Data``, or ``(x, edge_index)``) preprocessed (``features``: the
        transform, default the estimator's), its labels replaced by ``labels`` (one per node as given: ``-1``
        or ``None`` where unknown) encoded as ``classes_``."""
        if isinstance(graph, (str, Path)):
            data = load_graph(str(graph), missing_features=self.missing_features)
        elif isinstance(graph, tuple) and len(graph) == 2:
            from torch_geometric.data import Data

            x, edge_index = (torch.as_tensor(part) for part in graph)
            data = Data(x=x, edge_index=edge_index, num_nodes=len(x))
        elif hasattr(graph, "edge_index") and getattr(graph, "x", None) is not None:
            data = graph.clone()
        else:
            raise TypeError(
                "graph must be a path or name of a graph file, a torch_geometric Data with x and edge_index, "
                f"or a pair (x, edge_index); got {type(graph).__name__}"
            )
        nodes = int(data.num_nodes)
        edge_index = torch.as_tensor(data.edge_index)
        if (
            edge_index.ndim != 2
            or edge_index.shape[0] != 2
            or edge_index.dtype not in (torch.int64, torch.int32)
        ):
            raise ValueError(
                f"edge_index must be (2, E) integers, got {tuple(edge_index.shape)} {edge_index.dtype}"
            )
        if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= nodes):
            raise ValueError(f"edge_index names nodes outside 0…{nodes - 1}")
        if not torch.isfinite(torch.as_tensor(data.x, dtype=torch.float64)).all():
            raise ValueError("the node features hold NaN or infinite values")
        data.edge_index = edge_index.long()
        if labels is not None:
            data.y = torch.as_tensor(self._encode(labels, nodes))
            data.class_names = [str(name) for name in self.classes_]
        elif "y" not in data or data.y is None:
            data.y = torch.full((nodes,), -1, dtype=torch.long, device=data.edge_index.device)
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

    def _split(self, y: torch.Tensor) -> Split:
        rng = np.random.default_rng(int(self.random_state))
        train: List[int] = []
        val: List[int] = []
        for label in torch.unique(y[y >= 0]).tolist():
            members = rng.permutation(np.flatnonzero(y.numpy() == label))
            held = int(round(self.val_fraction * len(members))) if len(members) > 1 else 0
            held = min(max(held, 1 if self.val_fraction > 0 and len(members) > 1 else 0), len(members) - 1)
            val.extend(members[:held])
            train.extend(members[held:])
        train_nodes = torch.as_tensor(sorted(train), dtype=torch.long)
        val_nodes = torch.as_tensor(sorted(val), dtype=torch.long) if val else train_nodes
        return Split(train_nodes, val_nodes, val_nodes)

    def fit(self, graph: GraphInput, labels: Optional[Sequence] = None) -> "DiffusionNodeClassifier":
        """Train on ``graph``'s labelled nodes; ``labels`` (one per node of the graph as given, ``-1`` or
        ``None`` where unknown) replace the graph's own."""
        name = str(graph) if isinstance(graph, (str, Path)) else "graph"
        job = self._job(name)
        prepared = self._read(graph, labels)
        if labels is None:
            self.classes_ = np.asarray(prepared.class_names, dtype=str)
        else:  # every class given, also one whose nodes all lie outside the largest component
            prepared = replace(
                prepared, num_classes=len(self.classes_), class_names=tuple(map(str, self.classes_))
            )
        if int((prepared.y >= 0).sum()) == 0:
            raise ValueError("no node of the largest component has a label")
        torch.manual_seed(int(self.random_state))
        network = build_model(job, prepared)
        fit_node_classifier(
            network,
            model_inputs(job, prepared),
            prepared.y,
            self._split(prepared.y),
            lr=float(job.hyperparameters.lr),
            weight_decay=float(job.hyperparameters.weight_decay),
            max_epochs=job.max_epochs,
            patience=job.patience,
        )
        self.job_, self.graph_, self.network_ = job, prepared, network
        self.outside_ids_ = prepared.outside_ids()
        self.state_ = {name: value.detach().clone() for name, value in network.state_dict().items()}
        self.manifest_ = self._manifest(job, prepared)
        return self

    def _manifest(self, job: NodeJob, graph: PreparedGraph) -> Dict[str, Any]:
        settings = job.hyperparameters
        from dataclasses import asdict

        return {
            "model": job.model,
            "depth": None,
            "seed": job.seed,
            "train_per_class": 0,
            "val_per_class": 0,
            "max_epochs": job.max_epochs,
            "patience": job.patience,
            "hyperparameters": {"kind": type(settings).__name__, **asdict(settings)},
            "missing_features": job.missing_features,
            "feature_transform": graph.feature_transform,
            "num_features": graph.num_features,
            "class_names": [str(name) for name in self.classes_],
        }

    def node_ids(self, graph: Optional[GraphInput] = None) -> List[str]:
        """The ids of the nodes :meth:`predict_proba` answers, in its order (``graph``: default the fitted
        one)."""
        if graph is None:
            return self.graph_.node_ids()
        return self._read(graph, features=self.manifest_["feature_transform"]).node_ids()

    def predict_proba(self, graph: Optional[GraphInput] = None) -> np.ndarray:
        """``(N, C)`` class probabilities of the nodes of the largest component of ``graph`` (default: the
        fitted graph), in the order of :meth:`node_ids` and of ``classes_``."""
        check_is_fitted(self, "state_")
        if graph is None:
            if not hasattr(self, "graph_"):
                raise ValueError("a loaded model has no graph of its own: give the graph to predict")
            prepared, name = self.graph_, "the fitted graph"
        else:
            prepared = self._read(graph, features=self.manifest_["feature_transform"])
            name = str(graph) if isinstance(graph, (str, Path)) else "graph"
        return node_probabilities(self.state_, self.manifest_, prepared, name).double().numpy()

    def predict(self, graph: Optional[GraphInput] = None) -> np.ndarray:
        """The class of each node of :meth:`node_ids` (the most probable one)."""
        probabilities = self.predict_proba(graph)
        return self.classes_[probabilities.argmax(1)]

    def save(self, folder: Union[str, Path]) -> Path:
        """Keep the fitted model in ``folder`` (the files of a run's ``model-<name>/``)."""
        check_is_fitted(self, "state_")
        self.network_.load_state_dict(self.state_)
        return save_node_model(
            Path(folder),
            self.job_,
            self.network_,
            self.graph_,
            about={"classes": labels_to_json(self.classes_), "params": self.get_params()},
        )

    @classmethod
    def load(cls, folder: Union[str, Path]) -> "DiffusionNodeClassifier":
        """A model kept by :meth:`save` or by a node-classification run, checked; ``predict`` then needs a
        graph.

        Raises:
            SavedModelError: an altered, truncated or foreign model, naming the file.
        """
        state, manifest = load_node_model(Path(folder))
        where = Path(folder) / "model.json"
        params = manifest.get("params")
        if not isinstance(params, dict):  # a run's model
            params = {
                "model": manifest["model"],
                "max_epochs": manifest["max_epochs"],
                "patience": manifest["patience"],
                "feature_transform": manifest["feature_transform"],
                "missing_features": manifest["missing_features"],
                "random_state": manifest["seed"],
            }
        try:
            estimator = cls(**params)
        except TypeError as error:
            raise SavedModelError(f"{where}: {error}") from None
        estimator.classes_ = (
            labels_from_json(manifest["classes"], where)
            if "classes" in manifest
            else np.asarray(manifest["class_names"], dtype=str)
        )
        estimator.state_, estimator.manifest_ = state, manifest
        if model_entry(manifest["model"]) is None:
            raise SavedModelError(f"{where}: unknown model {manifest['model']!r}")
        return estimator
