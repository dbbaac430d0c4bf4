"""node-classification's saved models: the model of the predictions (each model's first run), kept beside the
report (``model-<name>/``, :mod:`pdenets.saved_model`), classifies the nodes of the same graph or
a grown one later (``pdenets predict RUN_DIR --dataset GRAPH``).

The graph given at predict time is read as the run read its graph (the same feature transform and
missing-features rule) and must give the model's feature width; its labels, where it has them, are written
beside the predictions. A model's diffusion (Diff-ResNet) or message passing (the baselines) runs on the new
graph. Per-feature transforms (``standardize``, ``scale``) are computed on the graph given, as the run
computed them on its own.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import torch

from ...data.errors import DatasetError
from ...data.transforms import PreparedGraph, graph_label, prepared_graph
from ...models.node_training import DiffusionSettings, MessagePassingSettings
from ...models.training import evaluation_mode
from ...saved_model import SavedModelError, load_model, load_weights, save_model
from .job import NodeJob, build_model, model_inputs

__all__ = ["save_node_model", "predict_graph", "load_node_model", "node_probabilities"]

_KINDS = {"DiffusionSettings": DiffusionSettings, "MessagePassingSettings": MessagePassingSettings}
_SPEC_FIELDS = ("model", "depth", "seed", "train_per_class", "val_per_class", "max_epochs", "patience")


def save_node_model(
    folder: Path,
    spec: Any,
    model: torch.nn.Module,
    graph: PreparedGraph,
    about: Optional[Dict[str, Any]] = None,
) -> Path:
    """Keep ``model``, trained by the job ``spec`` (a ``NodeJob``) on ``graph`` (``about``: more manifest
    entries)."""
    settings = spec.hyperparameters
    manifest = {
        **(about or {}),
        **{name: getattr(spec, name) for name in _SPEC_FIELDS},
        "hyperparameters": {"kind": type(settings).__name__, **asdict(settings)},
        "missing_features": spec.missing_features,
        "feature_transform": spec.feature_transform,
        "num_features": graph.num_features,
        "class_names": list(graph.class_names),
        "graph": graph_label(spec.graph),
    }
    return save_model(
        folder, model.state_dict(), task="node-classification", model=spec.model, manifest=manifest
    )


def predict_graph(
    folder: Path, graph_spec: str, data_dir: Optional[str] = None
) -> Tuple[List[str], torch.Tensor, List[str], List[Optional[str]]]:
    """The saved model's class probabilities of every node of ``graph_spec`` (module docstring): the nodes'
    ids, ``(N, C)`` probabilities, the class names and each node's known label (``None`` where unknown).

    Raises:
        SavedModelError: a damaged or foreign model.
        DatasetError: a graph the model cannot read (another feature width, other classes).
    """
    state, manifest = load_node_model(folder)
    graph = prepared_graph(graph_spec, data_dir, manifest["missing_features"], manifest["feature_transform"])
    probabilities = node_probabilities(state, manifest, graph, graph_spec, folder)
    given = list(graph.class_names)
    labels = [given[int(label)] if int(label) >= 0 else None for label in graph.y.tolist()]
    return graph.node_ids(), probabilities, list(manifest["class_names"]), labels


def load_node_model(folder: Path) -> Tuple[Dict[str, torch.Tensor], Dict[str, Any]]:
    """A saved node-classification model's weights and manifest, checked
    (:func:`~pdenets.saved_model.load_model`) and its hyperparameters of a known kind."""
    state, manifest = load_model(folder, task="node-classification")
    kind = (manifest.get("hyperparameters") or {}).get("kind")
    if kind not in _KINDS or not all(name in manifest for name in _SPEC_FIELDS + ("class_names",)):
        raise SavedModelError(f"{Path(folder) / 'model.json'}: no hyperparameters of a known kind")
    return state, manifest


def node_probabilities(
    state: Dict[str, torch.Tensor],
    manifest: Dict[str, Any],
    graph: PreparedGraph,
    graph_spec: str,
    source: Any = "the saved model",
) -> torch.Tensor:
    """``(N, C)`` class probabilities of ``graph``'s nodes by a saved model (its weights ``state`` and its
    ``manifest``); ``graph_spec`` names the graph in messages, ``source`` the model."""
    if graph.num_features != manifest["num_features"]:
        identity = (
            "; without a features file the features are the node ids"
            if manifest["missing_features"] == "identity"
            else ""
        )
        raise DatasetError(
            f"{graph_spec}: its nodes have {graph.num_features} features as the run read them, the model "
            f"{manifest['num_features']} (another feature width{identity})"
        )
    settings = dict(manifest["hyperparameters"])
    kind = _KINDS[settings.pop("kind")]
    spec = NodeJob(
        experiment="protocol",
        graph=graph_spec,
        dataset=graph_spec,
        model=manifest["model"],
        depth=manifest["depth"],
        split=0,
        init=0,
        seed=manifest["seed"],
        train_per_class=manifest["train_per_class"],
        val_per_class=manifest["val_per_class"],
        max_epochs=manifest["max_epochs"],
        patience=manifest["patience"],
        hyperparameters=kind(**settings),
        missing_features=manifest["missing_features"],
        feature_transform=manifest["feature_transform"],
    )
    graph = replace(
        graph, num_classes=len(manifest["class_names"])
    )  # the model's classes, whatever the graph's
    model = build_model(spec, graph)
    load_weights(model, state, source)
    with evaluation_mode(model), torch.no_grad():
        return torch.softmax(model(*model_inputs(spec, graph)).float(), dim=1)
